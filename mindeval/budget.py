"""Token and dollar estimates before a call, and the ``--max-cost`` guard.

Estimates count ~4 characters per token (:data:`~mindeval.config.CHARS_PER_TOKEN`) and
assume replies of :data:`~mindeval.config.ASSUMED_REPLY_TOKENS` tokens; prices come
from litellm's bundled, offline price map. :func:`cached_usage` estimates what a
provider's prompt cache reads and writes (:mod:`mindeval.llm.caching`).
"""

from __future__ import annotations

import math
from typing import Any

from .config import (
    ASSUMED_REPLY_TOKENS,
    AUTO_CACHE_STEP,
    CACHE_MIN_TOKENS,
    CHARS_PER_TOKEN,
    TOKENS_PER_MESSAGE,
)
from .errors import MindEvalError
from .llm.caching import uses_breakpoints
from .llm.cost import price_per_token
from .llm.gateway import ModelSpec
from .records import Usage


def estimate_tokens(text: str) -> int:
    return -(-len(text) // CHARS_PER_TOKEN)


def prompt_tokens(messages: list[dict[str, Any]]) -> int:
    return sum(estimate_tokens(str(m.get("content", ""))) + TOKENS_PER_MESSAGE for m in messages)


def reply_tokens(role: str, spec: ModelSpec, *, worst: bool = False, assumed: int | None = None) -> int:
    """The assumed reply length (``assumed``, else the role's default); with ``worst`` the
    cap (``max_tokens``) when one is set, else at most the cap."""
    assumed = assumed or ASSUMED_REPLY_TOKENS.get(role, ASSUMED_REPLY_TOKENS["clinician"])
    if spec.max_tokens is None:
        return assumed
    return spec.max_tokens if worst else min(assumed, spec.max_tokens)


def prices(model: str) -> tuple[float, float, float] | None:
    """``(input, output, cache_read)`` dollars per token, or None when the model has no price."""
    return price_per_token(model)


def cached_usage(model: str, prompt: int, completion: int, seen: int, end: int) -> Usage:
    """Estimated usage of a request of ``prompt`` tokens whose first ``seen`` tokens an
    earlier, answered request of the run sent; ``end``: where its last cache breakpoint is.

    Explicit breakpoints (Anthropic): ``seen`` is read when the earlier request could cache
    it (at least :data:`~mindeval.config.CACHE_MIN_TOKENS`), the rest up to ``end`` is
    written. Automatic caches (models whose cache reads are priced below input): ``seen``
    is read in :data:`~mindeval.config.AUTO_CACHE_STEP` steps, nothing is billed for writes.
    """
    read = write = 0
    if uses_breakpoints(model):
        read = seen if seen >= CACHE_MIN_TOKENS else 0
        write = max(0, end - read) if end >= CACHE_MIN_TOKENS else 0
    else:
        p = prices(model)
        if p is not None and p[2] < p[0] and seen >= CACHE_MIN_TOKENS:  # (input, output, cache_read)
            read = seen // AUTO_CACHE_STEP * AUTO_CACHE_STEP
    return Usage(prompt_tokens=prompt, completion_tokens=completion, cached_tokens=read, cache_write_tokens=write)


def cost(model: str, prompt: int, completion: int) -> float | None:
    p = prices(model)
    return None if p is None else prompt * p[0] + completion * p[1]


def check_max_cost(max_usd: float | None) -> None:
    """``--max-cost`` is a finite positive number of dollars (NaN and infinity would never stop a run)."""
    if max_usd is not None and not (math.isfinite(max_usd) and max_usd > 0):
        raise MindEvalError(f"must be a finite positive number of dollars (got {max_usd})", field="--max-cost")


class BudgetExceeded(MindEvalError):
    """The next call could exceed ``--max-cost``: the run stops here, resumable."""


class Budget:
    """Refuses a call whose worst-case cost could take the run past ``max_usd``.

    ``spent`` starts at what earlier invocations of the run already paid. A reserved
    estimate is held while the call is in flight, then replaced by its real cost.
    """

    def __init__(self, max_usd: float, spent: float = 0.0) -> None:
        check_max_cost(max_usd)
        self.max_usd = max_usd
        self.spent = spent
        self.pending = 0.0

    def check_priced(self, specs: dict[str, ModelSpec]) -> None:
        for role, spec in specs.items():
            if not spec.model.startswith(("fake/", "local/")) and prices(spec.model) is None:
                raise MindEvalError(f"--max-cost needs prices, and {role} model {spec.model} has none in "
                                    "litellm's price map", field="--max-cost")

    def reserve(self, role: str, spec: ModelSpec, messages: list[dict[str, Any]]) -> float:
        est = cost(spec.model, prompt_tokens(messages), reply_tokens(role, spec, worst=True)) or 0.0
        if self.spent + self.pending + est > self.max_usd:
            raise BudgetExceeded(
                f"stopped before exceeding --max-cost ${self.max_usd:.2f}; "
                "re-run with a higher --max-cost to continue where it stopped")
        self.pending += est
        return est

    def settle(self, held: float | None, actual: float | None) -> None:
        self.pending -= held or 0.0
        self.spent += (held or 0.0) if actual is None else actual
