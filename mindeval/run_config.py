"""What a run's options resolve to beyond the records: the role defaults of the embedded model and
of the paper protocol, a prompt as recorded, and the readable difference of two configurations.

The recorded configuration and its hash are :class:`mindeval.records.RunConfig`
(``hashed_view``, ``simulation_view`` and ``hash_config`` live there too).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from .config import (
    EMBEDDED_DEFAULTS,
    PAPER_JUDGE_SAMPLING,
)
from .llm.gateway import ModelSpec
from .records import JUDGE_KEYS, PromptRecord, RunConfig, hash_config, hashed_view, simulation_view

__all__ = ["JUDGE_KEYS", "PromptRef", "RunConfig", "config_diff", "hash_config", "hashed_view",
           "judge_spec_for_protocol", "simulation_view", "spec_with_defaults"]


def spec_with_defaults(role: str, spec: ModelSpec) -> ModelSpec:
    """Fill unset temperature / max_tokens of the embedded model with role defaults."""
    if not spec.is_embedded:
        return spec
    unset = {k: v for k, v in EMBEDDED_DEFAULTS[role].items() if getattr(spec, k) is None}
    return spec.model_copy(update=unset) if unset else spec


def judge_spec_for_protocol(spec: ModelSpec, protocol: str) -> ModelSpec:
    """Under the ``paper`` protocol, fill unset sampling settings with the authors' (not for
    the embedded model, which has no reasoning mode)."""
    if protocol != "paper" or spec.is_embedded:
        return spec
    unset = {k: v for k, v in PAPER_JUDGE_SAMPLING.items() if getattr(spec, k) is None}
    return spec.model_copy(update=unset) if unset else spec


class PromptRef(PromptRecord):
    """A prompt template as recorded in a run: its ref (kind/name@vN) and content hash."""

    source: str = Field(default="", exclude=True)


def config_diff(old: dict[str, Any], new: dict[str, Any], prefix: str = "") -> list[str]:
    """Readable lines ``key: old -> new`` for every differing leaf."""
    lines: list[str] = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key, "<unset>"), new.get(key, "<unset>")
        name = f"{prefix}{key}"
        if isinstance(a, dict) and isinstance(b, dict):
            lines += config_diff(a, b, prefix=name + ".")
        elif a != b:
            if isinstance(a, list) and isinstance(b, list) and len(a) + len(b) > 6:
                lines.append(f"  {name}: {len(a)} items -> {len(b)} items")
            else:
                lines.append(f"  {name}: {a!r} -> {b!r}")
    return lines
