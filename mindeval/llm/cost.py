"""Prices per token from litellm's bundled price map (offline; never fetched at run time).

``mindeval`` sets ``LITELLM_LOCAL_MODEL_COST_MAP`` before litellm is imported, so the
prices are those of the installed litellm version. Providers MindEval calls itself
(``openai``, ``hosted_vllm``) are priced from the same map read as JSON (:mod:`.modelmap`),
without importing litellm; the others through ``litellm.get_model_info``. Models without a price (local
servers, the embedded model, custom clinicians) cost ``None``: unknown, not zero.
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

from ..records import Usage
from .custom import is_custom
from .modelmap import model_info
from .providers import provider_of


class Prices(NamedTuple):
    """US dollars per token."""

    input: float
    output: float
    cache_read: float


@lru_cache(maxsize=256)
def _lookup(model: str) -> tuple[Prices, float] | None:
    if is_custom(model):  # a custom clinician has no price; no litellm import for it (seconds, minutes under load)
        return None
    entry = provider_of(model)
    if "/" not in model or entry.path == "inprocess":
        return None
    if entry.path == "openai-compatible":
        info = model_info(model)
    else:
        from .litellm_lib import litellm_module

        try:
            info = litellm_module().get_model_info(model=model)
        except Exception:  # litellm raises when the model is not in its map
            return None
    if not info:
        return None
    inp = info.get("input_cost_per_token")
    out = info.get("output_cost_per_token")
    if inp is None or out is None:
        return None
    read = info.get("cache_read_input_token_cost")
    write = info.get("cache_creation_input_token_cost")
    prices = Prices(float(inp), float(out), float(read) if read is not None else float(inp))
    return prices, float(write) if write is not None else float(inp)


def price_per_token(model: str) -> Prices | None:
    """``(input, output, cache_read)`` dollars per token for a litellm model string, or None."""
    found = _lookup(model)
    return found[0] if found else None


def cost_usd(model: str, usage: Usage) -> float | None:
    """Dollars for one call's usage: uncached input, cache reads, cache writes and output."""
    found = _lookup(model)
    if found is None:
        return None
    prices, write = found
    uncached = max(0, usage.prompt_tokens - usage.cached_tokens - usage.cache_write_tokens)
    return (uncached * prices.input + usage.cached_tokens * prices.cache_read
            + usage.cache_write_tokens * write + usage.completion_tokens * prices.output)


def billed_input_tokens(model: str, usage: Usage) -> float | None:
    """Input tokens weighted by their price relative to uncached input (cache reads and
    writes at their own prices): what the provider bills, in uncached-token units.
    None when the model has no price."""
    found = _lookup(model)
    if found is None or found[0].input <= 0:
        return None
    prices, write = found
    uncached = max(0, usage.prompt_tokens - usage.cached_tokens - usage.cache_write_tokens)
    return (uncached + usage.cached_tokens * prices.cache_read / prices.input
            + usage.cache_write_tokens * write / prices.input)
