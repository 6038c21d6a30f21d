"""MindEval's own request path to OpenAI-compatible servers (``openai/…`` or ``hosted_vllm/…`` with ``api_base``).

One ``POST {api_base}/chat/completions`` per attempt over aiohttp (already installed with
litellm), on the caller's event loop: no thread hop, no SDK request transform, no logging
payload. The body is the one litellm sends for these providers (``model`` without its
prefix, ``messages`` as given, then the spec's parameters, ``seed`` and
``response_format``); the key is sent as ``Authorization: Bearer`` and never kept anywhere
else. A failed attempt raises :class:`ProviderError` (named like the provider's own error
class, with its status, message and ``Retry-After`` headers), :class:`APIConnectionError`
or :class:`Timeout`, which :mod:`.retry` judges like litellm's. One client session per event
loop is reused by every call on it; it is closed by :func:`aclose_sessions` (the worker pool
calls it as its loop's last step) or, on any loop ended by ``asyncio.run``, when the loop shuts
down its async generators: a guard generator started with the session closes it then.
"""

from __future__ import annotations

import asyncio
import json
import weakref
from collections.abc import AsyncIterator
from typing import Any

ERROR_NAMES = {400: "BadRequestError", 401: "AuthenticationError", 403: "PermissionDeniedError",
               404: "NotFoundError", 408: "Timeout", 409: "ConflictError", 422: "UnprocessableEntityError",
               429: "RateLimitError", 500: "InternalServerError", 503: "ServiceUnavailableError"}
_sessions: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, tuple[Any, Any]] = weakref.WeakKeyDictionary()


class ProviderError(Exception):
    """An HTTP error answer: ``status_code``, the provider's ``message`` and the response ``headers``."""

    def __init__(self, status: int, message: str, headers: Any = None) -> None:
        super().__init__(message)
        self.status_code = status
        self.message = message
        self.response_headers = headers


class APIConnectionError(Exception):
    """The connection failed or broke before an answer (transient; its cause is kept)."""


class Timeout(Exception):
    """No answer within the attempt's timeout (transient)."""


def error_class(status: int) -> type[ProviderError]:
    """``ProviderError`` subclass named for ``status`` (``RateLimitError`` for 429, ...)."""
    name = ERROR_NAMES.get(status, "APIError" if status < 500 else "InternalServerError")
    return _CLASSES.setdefault(name, type(name, (ProviderError,), {}))


_CLASSES: dict[str, type[ProviderError]] = {}


def request_body(name: str, messages: list[dict[str, Any]], params: dict[str, Any]) -> dict[str, Any]:
    """What is posted: the model name without its provider, the messages, the set parameters."""
    body = {"model": name, "messages": messages}
    body.update((k, v) for k, v in params.items() if k != "api_base" and v is not None)
    return body


async def _session() -> Any:
    import aiohttp

    loop = asyncio.get_running_loop()
    held = _sessions.get(loop)
    if held is None or held[0].closed:
        # no connection cap: the run's own workers bound what is in flight
        session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0, ttl_dns_cache=300))
        guard = _close_at_shutdown(session)
        await guard.__anext__()
        held = _sessions[loop] = (session, guard)
    return held[0]


async def _close_at_shutdown(session: Any) -> AsyncIterator[None]:
    """Suspended for the session's life; the loop's ``shutdown_asyncgens`` (``asyncio.run``'s
    last step) closes it, and the ``finally`` closes the session."""
    try:
        yield
    finally:
        if not session.closed:
            await session.close()


async def post(api_base: str, key: str | None, body: dict[str, Any], timeout: float) -> dict[str, Any]:
    """One attempt: the decoded reply, or :class:`ProviderError` / :class:`APIConnectionError`."""
    import aiohttp

    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    url = api_base.rstrip("/") + "/chat/completions"
    data = json.dumps(body, ensure_ascii=False).encode()
    try:
        async with (await _session()).post(url, data=data, headers=headers,
                                   timeout=aiohttp.ClientTimeout(total=timeout)) as resp:
            raw = await resp.read()
            status, got = resp.status, resp.headers
    except (TimeoutError, asyncio.TimeoutError):  # one class from Python 3.11, two before
        raise Timeout(f"no answer within {timeout:g} s") from None
    except aiohttp.ClientError as exc:
        raise APIConnectionError(f"{type(exc).__name__}: {exc}") from exc
    if status >= 400:
        raise error_class(status)(status, _error_message(raw, status), got)
    try:
        return json.loads(raw)
    except ValueError:
        raise APIConnectionError(f"the server's reply is not JSON (HTTP {status})") from None


def _error_message(raw: bytes, status: int) -> str:
    try:
        data = json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace").strip()[:300] or f"HTTP {status}"
    err = data.get("error") if isinstance(data, dict) else None
    if isinstance(err, dict) and err.get("message"):
        return str(err["message"])
    if isinstance(err, str):
        return err
    if isinstance(data, dict) and data.get("message"):
        return str(data["message"])
    return json.dumps(data)[:300]


async def aclose_sessions() -> int:
    """Close the running loop's client session (if one was opened); return how many were closed."""
    held = _sessions.pop(asyncio.get_running_loop(), None)
    if held is None:
        return 0
    session, guard = held
    was_open = not session.closed
    await guard.aclose()  # closes the session
    return int(was_open)
