"""Client-side rate limits per role and model, shared by every worker of the process.

* ``rpm`` / ``tpm``: token buckets (requests and tokens per minute, refilled at 97% of
  the limit). A request reserves its share at once and waits until the bucket could pay
  it, so workers are served in order and requests are evenly spaced instead of bursting.
* With a limit configured (or once the role and model has answered 429, or for requests
  with a shared cached prefix, which the first must write before the others can read it),
  the first request goes alone: it also pays litellm's one-time client set-up, which would
  otherwise bunch the paced requests behind it. Without one, every worker sends at once (the critical path of
  a run is its longest conversation; holding the first request back added two round trips).
* A 429 that names its wait (``Retry-After``) costs that request that wait (:mod:`.retry`)
  and nothing else: random 429s must not throttle the requests that get through.
* A 429 without a named wait is overload: adaptive concurrency (AIMD) halves the number of
  requests in flight for that role and model (at most once per second); each success adds
  back ``1/limit``, so the limit regrows by about one per round trip.
"""

from __future__ import annotations

import asyncio
import threading
import time
import weakref
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

CEILING = 4096  # "unlimited" concurrency until a 429 is seen
PACE = 0.97  # buckets refill at 97% of the stated limit, absorbing jitter in send times
CUT_EVERY_S = 1.0  # at most one multiplicative decrease per this many seconds


class TokenBucket:
    """``rate`` tokens per second, holding at most ``capacity``; thread-safe, never blocks."""

    def __init__(self, per_minute: float, capacity: float) -> None:
        self.rate = PACE * per_minute / 60.0
        self.capacity = max(1.0, capacity)
        self.level = self.capacity
        self.stamp = time.monotonic()
        self._lock = threading.Lock()

    def reserve(self, n: float) -> float:
        """Take ``n`` tokens now; return the seconds to wait before using them."""
        with self._lock:
            now = time.monotonic()
            self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
            self.stamp = now
            need = min(n, self.capacity)
            delay = max(0.0, (need - self.level) / self.rate)
            self.level -= n
            return delay

    def refund(self, n: float) -> None:
        """Give back ``n`` tokens (negative: take more) once the real cost is known."""
        with self._lock:
            self.level = min(self.capacity, self.level + n)


class AdaptiveLimit:
    """A semaphore whose size shrinks on 429s and regrows on successes (one event loop)."""

    def __init__(self, probe: bool = False) -> None:
        self.limit = 1.0 if probe else float(CEILING)  # probe: one request until the first is answered
        self.opened = not probe
        self.in_flight = 0
        self.throttles = 0
        self._last_cut = 0.0
        self._waiters: deque[asyncio.Future[None]] = deque()

    async def acquire(self) -> None:
        while self.in_flight >= max(1, int(self.limit)):
            fut = asyncio.get_running_loop().create_future()
            self._waiters.append(fut)
            try:
                await fut
            except asyncio.CancelledError:
                if fut in self._waiters:
                    self._waiters.remove(fut)
                raise
        self.in_flight += 1

    def release(self) -> None:
        self.in_flight -= 1
        if not self.opened:
            self.opened = True
            if not self.throttles:
                self.limit = float(CEILING)
        self._wake()

    def _wake(self) -> None:
        free = max(1, int(self.limit)) - self.in_flight
        while free > 0 and self._waiters:
            fut = self._waiters.popleft()
            if not fut.done():
                fut.set_result(None)
                free -= 1

    def success(self) -> None:
        if self.limit < CEILING:
            self.limit = min(float(CEILING), self.limit + 1.0 / max(1.0, self.limit))
            self._wake()

    def throttled(self, retry_after_s: float | None) -> None:
        """A 429: with a named wait only counted (the request waits it); without, a cut."""
        now = time.monotonic()
        self.throttles += 1
        if retry_after_s is not None:
            return
        if now - self._last_cut >= CUT_EVERY_S:
            self._last_cut = now
            self.limit = max(1.0, min(self.limit, float(self.in_flight)) / 2)


class Limiter:
    """The limits of one role and model: buckets for the process, concurrency per event loop."""

    def __init__(self, rpm: int | None, tpm: int | None) -> None:
        self.requests = TokenBucket(rpm, 1) if rpm else None
        self.tokens = TokenBucket(tpm, tpm) if tpm else None
        self.seen_429 = False
        self._adaptive: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, AdaptiveLimit] = (
            weakref.WeakKeyDictionary())

    def adaptive(self, shared_prefix: bool = False) -> AdaptiveLimit:
        loop = asyncio.get_running_loop()
        ad = self._adaptive.get(loop)
        if ad is None:
            ad = self._adaptive[loop] = AdaptiveLimit(
                probe=self.requests is not None or self.tokens is not None or self.seen_429 or shared_prefix)
        return ad

    @asynccontextmanager
    async def slot(self, tokens: int, shared_prefix: bool = False) -> AsyncIterator[AdaptiveLimit]:
        """Hold one request slot: within concurrency, at the buckets' pace. ``shared_prefix``: the
        request starts with a prefix other requests share (the first one goes alone)."""
        ad = self.adaptive(shared_prefix)
        await ad.acquire()
        try:
            delay = 0.0
            if self.requests is not None:
                delay = max(delay, self.requests.reserve(1))
            if self.tokens is not None:
                delay = max(delay, self.tokens.reserve(tokens))
            if delay > 0:
                await asyncio.sleep(delay)
            yield ad
        finally:
            ad.release()

    def settle(self, estimated: int, actual: int) -> None:
        if self.tokens is not None and actual:
            self.tokens.refund(estimated - actual)


_limiters: dict[tuple[str, str, str | None, int | None, int | None], Limiter] = {}
_lock = threading.Lock()


def limiter_for(role: str, model: str, api_base: str | None, rpm: int | None, tpm: int | None) -> Limiter:
    """The process-wide limiter of this role and model (new limits start a new one)."""
    key = (role, model, api_base, rpm, tpm)
    with _lock:
        lim = _limiters.get(key)
        if lim is None:
            lim = _limiters[key] = Limiter(rpm, tpm)
        return lim
