"""Which provider errors are worth retrying, and when to retry them.

Transient: 429, 408, 409, 5xx, connection errors and timeouts — retried after the
provider's ``Retry-After`` when it names one, else with exponential backoff and full jitter, bounded by the
number of attempts and by the total time of the call (:class:`RetryPolicy`, which travels
with each call: ``ModelSpec.retry`` or ``acomplete(policy=)``; no process-wide setting).
Permanent: 400, 401, 403, 404, 422, a missing API key, an unknown model — raised at once.
Either way the user gets one line naming the role, the model and the provider's message.
"""

from __future__ import annotations

import hashlib
import random
import re
import time
from email.utils import parsedate_to_datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..config import (
    DEFAULT_BASE_DELAY_S,
    DEFAULT_EMPTY_RETRIES,
    DEFAULT_MAX_DELAY_S,
    DEFAULT_MAX_RETRIES,
    DEFAULT_RETRY_BUDGET_S,
)
from ..errors import ModelCallError

TRANSIENT_STATUS = {408, 409, 425, 429}
# Malformed request, bad or missing key, no access, unknown model: every request of the role
# would fail alike, so a run stops at the first one (whatever the role).
PERMANENT_STATUS = (400, 401, 403, 404)
_OVERFLOW = ("context length", "context window", "maximum context", "context_length_exceeded",
             "does not fit", "too many tokens", "prompt is too long")
_PREFIXES = re.compile(r"^(?:litellm\.\w+:\s*|\w+Error:\s*|\w+Exception\s*-\s*|Error code: \d+\s*-\s*)+")
_KEY_PROBLEMS = ("api_key client option must be set", "missing api key", "api key not found",
                 "no api key", "invalid x-api-key", "incorrect api key")


class RetryPolicy(BaseModel):
    """How often and for how long one model call is retried on transient errors.

    The defaults are the CLI's (``--max-retries``, ``--retry-budget-s``), so a Python
    caller gets what ``mindeval run`` does unless it says otherwise.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_retries: int = Field(DEFAULT_MAX_RETRIES, ge=0)
    budget_s: float = Field(DEFAULT_RETRY_BUDGET_S, gt=0)
    empty_retries: int = Field(DEFAULT_EMPTY_RETRIES, ge=0)
    base_delay_s: float = Field(DEFAULT_BASE_DELAY_S, ge=0)  # first backoff; doubles per attempt, with jitter
    max_delay_s: float = Field(DEFAULT_MAX_DELAY_S, ge=0)


DEFAULT_POLICY = RetryPolicy()

EMPTY_REPLY = "empty reply"  # provider_message of the error raised when every attempt was empty


class EmptyReply(Exception):
    """The provider answered with no visible text (retried a bounded number of times)."""


def is_empty_reply(err: ModelCallError) -> bool:
    """The model answered every attempt, with nothing: its behaviour, not a provider failure."""
    return err.provider_message == EMPTY_REPLY and err.status is None


def is_context_overflow(exc: BaseException) -> bool:
    """The prompt is too long for the model's context: a property of one conversation, not of
    the provider or the account (litellm's ``ContextWindowExceededError``, the embedded model's
    "does not fit")."""
    if type(exc).__name__ == "ContextWindowExceededError":
        return True
    text = (getattr(exc, "provider_message", "") or str(exc)).lower()
    return any(p in text for p in _OVERFLOW)


def is_content_refusal(exc: BaseException) -> bool:
    """The provider's content filter refused to answer (litellm's ``ContentPolicyViolationError``)."""
    text = str(exc)
    return "ContentPolicyViolationError" in text or type(exc).__name__ == "ContentPolicyViolationError" or any(
        p in text.lower() for p in ("content_filter", "content management policy", "content_policy_violation"))


def stops_run(exc: ModelCallError) -> bool:
    """A permanent error (:data:`PERMANENT_STATUS`) other than a context overflow or a content refusal
    (both belong to one conversation, not to the provider or the account)."""
    return exc.status in PERMANENT_STATUS and not is_context_overflow(exc) and not is_content_refusal(exc)


def attempt_seed(seed: int | None, empties: int) -> int | None:
    """The seed sent after ``empties`` empty replies: the caller's seed first, then a new one
    derived from it per retry, so a retry is a new draw rather than the same one again."""
    if empties == 0:
        return seed
    return int(hashlib.sha256(f"{seed}:empty:{empties}".encode()).hexdigest()[:8], 16)


def provider_message(exc: BaseException, limit: int = 300) -> str:
    """The provider's own message, without litellm's ``litellm.XError: XException -`` wrapping."""
    raw = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    msg = " ".join(str(raw).split())
    msg = _PREFIXES.sub("", msg)
    body = re.search(r"""['"]message['"]\s*:\s*['"](.+?)['"]\s*[,}]""", msg)
    if body:  # a JSON error body quoted inside the text: keep its message
        msg = body.group(1)
    for cut in (" Traceback (most recent call last)", " Received Model Group=", " LiteLLM Retried:"):
        msg = msg.split(cut)[0]
    msg = msg.strip()
    return msg if len(msg) <= limit else msg[:limit] + "…"


def status_of(exc: BaseException) -> int | None:
    for attr in ("status_code", "status", "code"):
        val = getattr(exc, attr, None)
        if isinstance(val, int) and 100 <= val < 600:
            return val
    return None


def is_transient(exc: BaseException, status: int | None) -> bool:
    if isinstance(exc, ModelCallError):
        return exc.transient
    name = type(exc).__name__
    text = str(exc).lower()
    if any(p in text for p in _KEY_PROBLEMS):
        return False
    if isinstance(exc, (TimeoutError, ConnectionError)):
        return True
    if name in ("Timeout", "APITimeoutError", "APIConnectionError", "ConnectError", "ReadTimeout",
                "RemoteProtocolError", "ServiceUnavailableError", "InternalServerError", "ReadError"):
        return True
    if status is None:
        return False
    return status in TRANSIENT_STATUS or status >= 500


def retry_after_s(exc: BaseException) -> float | None:
    """Seconds the provider asked us to wait (``retry-after-ms`` / ``Retry-After``), if any."""
    headers: Any = getattr(exc, "litellm_response_headers", None) or getattr(exc, "response_headers", None)
    response = getattr(exc, "response", None)
    if not headers and response is not None:
        headers = getattr(response, "headers", None)
    if not headers:
        return None
    try:
        get = headers.get
        ms = get("retry-after-ms")
        if ms is not None:
            return max(0.0, float(ms) / 1000)
        val = get("retry-after")
        if val is None:
            return None
        try:
            return max(0.0, float(val))
        except ValueError:
            return max(0.0, parsedate_to_datetime(val).timestamp() - time.time())
    except (TypeError, ValueError, AttributeError):
        return None


# The connection was never made (refused, unreachable): httpx, aiohttp and the socket layer's names.
_CONNECT_ERRORS = ("ConnectError", "ClientConnectorError", "ConnectionRefusedError")


def connect_failure(exc: BaseException, api_base: str | None = None) -> str | None:
    """``cannot connect to URL`` when the attempt never reached the server (refused, unreachable)."""
    url: str | None = None
    found = False
    cur: BaseException | None = exc
    for _ in range(10):
        if cur is None:
            break
        if type(cur).__name__ in _CONNECT_ERRORS or isinstance(cur, ConnectionRefusedError):
            found = True
        try:
            url = url or (str(cur.request.url) if getattr(cur, "request", None) is not None else None)  # type: ignore[attr-defined]
        except Exception:  # noqa: BLE001 - an exception without a usable request
            pass
        if url is None and getattr(cur, "host", None) and getattr(cur, "port", None):
            url = f"{cur.host}:{cur.port}"  # type: ignore[attr-defined]
        cur = cur.__cause__ or cur.__context__
    if not found:
        return None
    return f"cannot connect to {api_base or url or 'the server'}"


def to_model_error(exc: BaseException, role: str, model: str, api_base: str | None = None) -> ModelCallError:
    """Turn any exception of one attempt into a one-line :class:`ModelCallError`."""
    own = _own_error(exc)
    if own is not None:  # raised by MindEval code (an in-process provider, a custom clinician)
        exc = own
        if exc.role == role and exc.model == model and role:
            return exc
    status = status_of(exc)
    if isinstance(exc, ModelCallError):
        status = exc.status
        msg = exc.provider_message
    else:
        msg = provider_message(exc)
    if isinstance(exc, TimeoutError) and msg in ("", "TimeoutError"):
        msg = "no answer within the timeout"
    refused = None if isinstance(exc, (ModelCallError, TimeoutError)) else connect_failure(exc, api_base)
    if refused:
        who = " ".join(x for x in (role, model) if x)
        return ModelCallError(f"{who}: {refused}", role=role, model=model, status=None, transient=True,
                              provider_message=refused)
    kind = type(exc).__name__ if not isinstance(exc, (ModelCallError, EmptyReply)) else ""
    head = " ".join(x for x in (str(status) if status else "", kind) if x)
    who = " ".join(x for x in (role, model) if x)
    text = f"{who}: {head}: {msg}" if head else f"{who}: {msg}"
    return ModelCallError(text, role=role, model=model, status=status,
                          transient=is_transient(exc, status), provider_message=msg)


def _own_error(exc: BaseException) -> ModelCallError | None:
    seen = 0
    cur: BaseException | None = exc
    while cur is not None and seen < 8:
        if isinstance(cur, ModelCallError):
            return cur
        cur = cur.__cause__ or cur.__context__
        seen += 1
    return None


class Attempts:
    """Retry bookkeeping of one call: decides after each failure whether and when to retry."""

    def __init__(self, policy: RetryPolicy, role: str, model: str, api_base: str | None = None) -> None:
        self.policy = policy
        self.role = role
        self.model = model
        self.api_base = api_base
        self.started = time.monotonic()
        self.failures = 0  # transient failures so far
        self.empties = 0

    def next_delay(self, exc: BaseException) -> float:
        """Seconds to wait before the next attempt; raises the final error if there is none."""
        if isinstance(exc, EmptyReply):
            self.empties += 1
            if self.empties > self.policy.empty_retries:
                raise ModelCallError(
                    f"{self.role} {self.model}: {EMPTY_REPLY} ({self.empties} attempts)".lstrip(),
                    role=self.role, model=self.model, provider_message=EMPTY_REPLY,
                ) from None
            return 0.0
        err = to_model_error(exc, self.role, self.model, self.api_base)
        if not err.transient:
            raise err from None
        self.failures += 1
        elapsed = time.monotonic() - self.started
        asked = retry_after_s(exc)
        if asked is not None:  # the provider named its wait: that wait, spread a little
            wait = asked + random.uniform(0, 0.1 * asked + 0.05)
        else:
            wait = self.policy.base_delay_s * 2 ** (self.failures - 1)
            wait = random.uniform(0, min(self.policy.max_delay_s, wait))  # full jitter
        if self.failures > self.policy.max_retries or elapsed + wait > self.policy.budget_s:
            raise ModelCallError(
                f"{err} (gave up after {self.failures} attempt{'s' if self.failures > 1 else ''} "
                f"in {elapsed:.0f} s)",
                role=self.role, model=self.model, status=err.status, transient=True,
                provider_message=err.provider_message,
            ) from None
        return wait

    def remaining_s(self) -> float:
        return self.policy.budget_s - (time.monotonic() - self.started)
