"""The one gateway to language models: every call goes through :func:`acomplete`.

Where a request goes is the provider table's decision (:mod:`.providers`): the embedded
SmolLM2 model (``local/smollm2``) and the scripted test models (``fake/...``) run in this
process; ``openai/…`` and ``hosted_vllm/…`` with an ``api_base`` (any OpenAI-compatible
server) take MindEval's own HTTP path (:mod:`.openai_http`); every other provider
(``anthropic/…``, ``gemini/…``, OpenAI itself, …) goes through litellm, which is imported
only when a call needs it. API keys are read from environment variables named in the table;
they are never part of a :class:`ModelSpec`, the store or the logs.

:func:`acomplete` is the one call path (one event loop); :func:`complete` runs it on a
process-wide background loop for synchronous callers. Each call: rate limits
(:mod:`.limits`), a per-call timeout, retries of transient errors and of empty replies
within the call's :class:`~.retry.RetryPolicy` (:mod:`.retry`), prompt-cache breakpoints
where the provider needs them (:mod:`.caching`) and its cost in dollars (:mod:`.cost`).
litellm's own retries are off (``num_retries=0``, ``max_retries=0``): MindEval retries.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import importlib
import inspect
import math
import threading
import time
from collections.abc import Coroutine
from functools import lru_cache
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .. import extras
from ..config import CALL_SETTINGS, DEFAULT_CALL_TIMEOUT_S, DEFAULT_TIMEOUT_S, EMBEDDED_MODEL
from ..errors import ModelCallError
from ..records import ModelRecord, Usage
from . import custom, openai_http
from .caching import CachePrefix, with_breakpoints
from .cost import cost_usd
from .limits import limiter_for
from .litellm_lib import imported, litellm_module
from .providers import Provider, Reply, known, provider_of
from .reasoning import split_reasoning
from .retry import (
    DEFAULT_POLICY,
    Attempts,
    EmptyReply,
    RetryPolicy,
    attempt_seed,
    retry_after_s,
    to_model_error,
)

__all__ = ["CALL_SETTINGS", "EMBEDDED_MODEL", "Completion", "ModelSpec", "acomplete", "complete", "litellm_module"]
T = TypeVar("T")

_setup_lock = threading.Lock()


# The levels a ``reasoning_effort`` takes (litellm passes them to the providers that support one).
REASONING_EFFORTS: tuple[str, ...] = ("none", "minimal", "low", "medium", "high")


def server_url(value: str | None) -> str | None:
    """An OpenAI-compatible server URL as given (``http(s)://host[:port][/path]``); anything else is refused."""
    if value is None:
        return None
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or any(c.isspace() for c in value):
        raise ValueError(f"{value!r} is not a server URL (http://host:port/v1 or https://...)")
    return value


class ModelSpec(ModelRecord):
    """A role's model settings (:class:`~mindeval.records.ModelRecord`) plus how to call it."""

    model_config = ConfigDict(extra="forbid")

    model: str = EMBEDDED_MODEL
    # The call's retry policy (None: the defaults, the CLI's): travels with the spec, never
    # written to config.json or hashed (a run may resume with other retries).
    retry: RetryPolicy | None = Field(None, exclude=True)

    @field_validator("api_base")
    @classmethod
    def _server_url(cls, value: str | None) -> str | None:
        return server_url(value)

    @field_validator("reasoning_effort")
    @classmethod
    def _effort(cls, value: str | None) -> str | None:
        if value is not None and value not in REASONING_EFFORTS:
            raise ValueError(f"{value!r} is not a reasoning effort ({', '.join(REASONING_EFFORTS)})")
        return value

    @model_validator(mode="after")
    def _sampling_in_range(self) -> ModelSpec:
        from ..sampling import out_of_range

        problem = out_of_range({**self.extra, "temperature": self.temperature})
        if problem:
            raise ValueError(problem)
        return self

    @property
    def provider(self) -> str:
        return self.model.split("/", 1)[0] if "/" in self.model else ""

    @property
    def is_embedded(self) -> bool:
        return self.provider == "local"

    @property
    def entry(self) -> Provider:
        """This model's entry in the provider table."""
        return provider_of(self.model)

    def call_settings(self) -> dict[str, Any]:
        """Timeout and rate limits of this role (how to call, not what to ask)."""
        return {key: getattr(self, key) for key in CALL_SETTINGS}

    def params(self) -> dict[str, Any]:
        """The request's parameters (only those that are set): what is sent and hashed."""
        out: dict[str, Any] = dict(self.extra)
        for key in ("temperature", "max_tokens", "reasoning_effort", "api_base"):
            val = getattr(self, key)
            if val is not None:
                out[key] = val
        return out


class Completion(BaseModel):
    """A model reply with the visible text separated from any reasoning trace."""

    text: str
    reasoning: str | None = None
    usage: Usage = Field(default_factory=Usage)
    latency_s: float = 0.0
    model: str
    cost_usd: float | None = None  # litellm's bundled price map; None when the model has no price
    attempts: int = 1  # requests sent for this reply (retries included)
    seed: int | None = None  # the seed of the request that gave this reply (a new one after an empty reply)
    finish_reason: str | None = None  # the provider's; "length": the reply was cut (see :func:`cut_note`)


def check_model_string(model: str) -> None:
    """Raise a readable error for a model string whose provider is unknown (to the table and to litellm)."""
    if custom.is_custom(model):
        custom.check(model)
        return
    if "/" not in model:
        raise ModelCallError(
            f"model '{model}' has no provider prefix; write it as PROVIDER/MODEL, "
            f"e.g. openai/gpt-4o-mini, anthropic/claude-sonnet-4-5 or {EMBEDDED_MODEL}"
        )
    entry = provider_of(model)
    if entry.extra and not extras.installed(entry.extra):
        raise ModelCallError(extras.hint(entry.extra, model))
    if entry.checker:
        module, _, func = entry.checker.partition(":")
        getattr(importlib.import_module(module), func)(model)
    if not known(model) and entry.name not in _litellm_providers():
        raise ModelCallError(
            f"unknown provider '{entry.name}' in model '{model}'. Use a litellm provider "
            f"(openai, anthropic, gemini, hosted_vllm, ollama, ...) or {EMBEDDED_MODEL}"
        )


@lru_cache(maxsize=1)
def _litellm_providers() -> frozenset[str]:
    return frozenset(str(getattr(p, "value", p)) for p in litellm_module().provider_list)


def check_api_key(spec: ModelSpec, role: str = "") -> None:
    """Fail fast, naming the variable, when the provider's required API key is not set."""
    missing = spec.entry.missing_key(spec.api_base)
    if missing:
        who = " ".join(x for x in (role, spec.model) if x)
        raise ModelCallError(f"{who}: missing API key: set {missing}", role=role, model=spec.model, status=401,
                             provider_message=f"missing API key: set {missing}")


def timeout_for(spec: ModelSpec, role: str) -> float:
    return spec.timeout_s or DEFAULT_TIMEOUT_S.get(role, DEFAULT_CALL_TIMEOUT_S)


def estimate_tokens(messages: list[dict[str, Any]], max_tokens: int | None) -> int:
    """Tokens a request may use, before sending it (four characters a token)."""
    chars = sum(len(str(m.get("content", ""))) for m in messages)
    return math.ceil(chars / 4) + (max_tokens or 256)


async def acomplete(
    spec: ModelSpec,
    messages: list[dict[str, str]],
    *,
    response_format: dict[str, Any] | None = None,
    seed: int | None = None,
    role: str = "",
    policy: RetryPolicy | None = None,
    cache_prefix: CachePrefix = None,
) -> Completion:
    """Call ``spec.model`` on ``messages``; raise :class:`ModelCallError` when it fails for good.

    Transient errors are retried within ``policy`` (default: ``spec.retry``, else the
    defaults of :class:`~.retry.RetryPolicy`, the CLI's); an empty visible reply is asked
    again ``policy.empty_retries`` times, then is an error — never replaced by filler text,
    and with a new seed each time (:func:`.retry.attempt_seed`; the reply's ``seed`` says
    which). ``cache_prefix``: a byte-stable start of the first user message shared by many
    one-off requests (the judge's instructions, rubric and examples); providers with
    explicit cache breakpoints cache it as its own block (:mod:`.caching`). It does not
    change the text sent.
    """
    check_model_string(spec.model)
    check_api_key(spec, role)
    attempts = Attempts(policy or spec.retry or DEFAULT_POLICY, role, spec.model, spec.api_base)
    started = time.perf_counter()
    n = 0
    while True:
        n += 1
        sent_seed = attempt_seed(seed, attempts.empties)
        try:
            out = await _attempt(spec, messages, response_format, sent_seed, role, attempts, cache_prefix)
        except Exception as exc:  # every failure is judged by Attempts: retry or raise
            await asyncio.sleep(attempts.next_delay(exc))
            continue
        out.latency_s = time.perf_counter() - started
        out.attempts = n
        out.seed = sent_seed
        return out


async def _attempt(
    spec: ModelSpec,
    messages: list[dict[str, str]],
    response_format: dict[str, Any] | None,
    seed: int | None,
    role: str,
    attempts: Attempts,
    cache_prefix: CachePrefix = None,
) -> Completion:
    timeout = min(timeout_for(spec, role), max(1.0, attempts.remaining_s()))
    if custom.is_custom(spec.model):
        out = await asyncio.wait_for(
            asyncio.to_thread(custom.call_custom, spec.model, messages, timeout), timeout + 1)
        return _completion(spec.model, out["content"], out["reasoning"], out["usage"])
    entry = spec.entry
    route = entry.route(spec.api_base)
    params = spec.params()
    if response_format is not None:
        params["response_format"] = response_format
    if seed is not None:
        params["seed"] = seed
    if route == "inprocess":
        # Not cut by the timeout: a thread cannot be stopped, so a cut call went on holding the model
        # (the embedded one is one instance behind a lock) while its retry queued behind it to do the
        # same work again. Beside two CPU hogs five such retries spent 605 s and the call failed. The
        # reply's token limit bounds it.
        reply: Reply = await asyncio.to_thread(entry.handler_fn(), spec.model, messages, params)
        out = _completion(spec.model, reply.text, reply.reasoning, reply.usage)
        out.finish_reason = reply.finish_reason
        return out
    sent = (with_breakpoints(messages, stable_prefix=cache_prefix, history=cache_prefix is None)
            if entry.uses_breakpoints(spec.model.split("/", 1)[1]) else messages)
    estimate = estimate_tokens(messages, spec.max_tokens)
    limiter = limiter_for(role, spec.model, spec.api_base, spec.rpm, spec.tpm)
    async with limiter.slot(estimate, shared_prefix=cache_prefix is not None) as adaptive:
        try:
            resp = await asyncio.wait_for(_send(spec, route, sent, params, timeout), timeout + 5)
        except Exception as exc:
            if to_model_error(exc, role, spec.model).status == 429:
                adaptive.throttled(retry_after_s(exc))
                limiter.seen_429 = True
            raise
        adaptive.success()
    choice = (_get(resp, "choices") or [None])[0]
    message = _get(choice, "message")
    out = _completion(spec.model, _get(message, "content") or "", _get(message, "reasoning_content"),
                      _get(resp, "usage"))
    out.finish_reason = _get(choice, "finish_reason")
    limiter.settle(estimate, out.usage.prompt_tokens + out.usage.completion_tokens)
    return out


def _send(spec: ModelSpec, route: str, messages: list[dict[str, Any]], params: dict[str, Any],
          timeout: float) -> Coroutine[Any, Any, Any]:
    """One request over the route the provider table chose: MindEval's HTTP client or litellm."""
    if route == "http":
        body = openai_http.request_body(spec.model.split("/", 1)[1], messages, params)
        return openai_http.post(spec.api_base or "", spec.entry.api_key(), body, timeout)
    return litellm_module().acompletion(model=spec.model, messages=messages, **params,
                                        num_retries=0, max_retries=0, timeout=timeout)


async def aclose_clients() -> int:
    """Close the HTTP clients opened for the running event loop; return how many.

    MindEval's own session (:func:`.openai_http.aclose_sessions`) and, when litellm was
    used, the clients litellm pooled for this loop: litellm keeps one client per provider,
    settings and event loop and never closes it ("Unclosed client session" once the loop
    ends). Looked up through litellm's public ``in_memory_llm_clients_cache`` (its
    ``cache_dict``); read, never patched. The worker pool calls this as its loop's last step.
    """
    closed = await openai_http.aclose_sessions()
    litellm = imported()
    if litellm is None:
        return closed
    cache = getattr(litellm, "in_memory_llm_clients_cache", None)
    entries = getattr(cache, "cache_dict", None)
    if not isinstance(entries, dict):
        return closed
    suffix = f"-{id(asyncio.get_running_loop())}"
    for key in [k for k in list(entries) if isinstance(k, str) and k.endswith(suffix)]:
        client = entries.pop(key, None)
        getattr(cache, "ttl_dict", {}).pop(key, None)
        closed += await _close_client(client)
    return closed


async def _close_client(client: Any) -> int:
    # litellm's AsyncHTTPHandler and the OpenAI SDK wrap an httpx client as ``_client`` (the
    # handler's ``client`` property would open a new one once it is closed)
    inner = getattr(client, "_client", None)
    target = inner if inner is not None and hasattr(inner, "aclose") else client
    close = getattr(target, "aclose", None) or getattr(target, "close", None)
    if close is None:
        return 0
    try:
        result = close()
        if inspect.isawaitable(result):
            await result
    except Exception:  # noqa: BLE001 - a client that fails to close must not fail the run
        return 0
    return 1


def cut_note(spec: ModelSpec, reply: Completion) -> str | None:
    """Why ``reply`` ends early, with its token counts, or None when it was not cut.

    A reply that stopped at the length limit (``finish_reason`` "length") either ran into
    the model's context (the embedded model's 8,192 tokens: prompt + reply fill it, its
    ``max_tokens`` being capped to the room left; or a provider's, when fewer than
    ``max_tokens`` tokens came back) or used up its ``max_tokens``.
    """
    if reply.finish_reason != "length":
        return None
    p, n = reply.usage.prompt_tokens, reply.usage.completion_tokens
    if spec.is_embedded:
        from .embedded import CONTEXT_ROOM, N_CTX

        if p + n >= N_CTX - CONTEXT_ROOM:
            return f"the reply was cut at the {N_CTX:,}-token context limit ({p:,} prompt + {n:,} reply tokens)"
    elif spec.max_tokens and n < spec.max_tokens:
        return (f"the reply was cut at the model's context limit ({p:,} prompt + {n:,} reply tokens, "
                f"max_tokens {spec.max_tokens:,})")
    return f"the reply was cut at its token limit ({n:,} reply tokens)"


def complete(spec: ModelSpec, messages: list[dict[str, str]], **options: Any) -> Completion:
    """Synchronous :func:`acomplete` (same options, retries, limits and errors) for the app and scripts."""
    return run_sync(acomplete(spec, messages, **options))


_loop: asyncio.AbstractEventLoop | None = None


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on the gateway's background event loop and wait for its result.

    One loop serves every synchronous caller of the process (threads included), so the
    pooled HTTP clients and the rate limiters are shared.
    """
    global _loop
    with _setup_lock:
        if _loop is None or _loop.is_closed():
            _loop = asyncio.new_event_loop()
            threading.Thread(target=_loop.run_forever, name="mindeval-gateway", daemon=True).start()
            atexit.register(_close_background_clients, _loop)
        loop = _loop
    return asyncio.run_coroutine_threadsafe(coro, loop).result()


def _close_background_clients(loop: asyncio.AbstractEventLoop) -> None:
    """At exit: close the clients the background loop opened (no "Unclosed client session")."""
    if loop.is_running():
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(aclose_clients(), loop).result(timeout=5)


def _get(obj: Any, key: str) -> Any:
    if obj is None:
        return None
    if isinstance(obj, dict):
        return obj.get(key)
    return getattr(obj, key, None)


def _completion(model: str, content: str, provider_reasoning: str | None, usage: Any) -> Completion:
    """Split reasoning from the visible text; an empty visible reply raises :class:`EmptyReply`."""
    text, reasoning = split_reasoning(content, provider_reasoning)
    if not text.strip():
        raise EmptyReply(f"{model} returned an empty reply")
    used = usage_of(usage)
    return Completion(text=text, reasoning=reasoning, usage=used, model=model, cost_usd=cost_usd(model, used))


def usage_of(usage: Any) -> Usage:
    """A reply's usage (OpenAI or Anthropic style, object or dict) as a :class:`Usage` with cache counts."""
    details = _get(usage, "prompt_tokens_details")
    read = _get(details, "cached_tokens") or _get(usage, "cache_read_input_tokens") or 0
    write = _get(details, "cache_creation_tokens") or _get(usage, "cache_creation_input_tokens") or 0
    return Usage(
        prompt_tokens=int(_get(usage, "prompt_tokens") or 0),
        completion_tokens=int(_get(usage, "completion_tokens") or 0),
        cached_tokens=int(read), cache_write_tokens=int(write),
    )
