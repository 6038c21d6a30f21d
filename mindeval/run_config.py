"""The configuration of a benchmark run and its hash.

The config hash covers everything that changes results (models and parameters,
prompt versions and contents, guideline version, profiles, turns, seeds, judge
settings) and nothing that does not (concurrency, output paths, database URL, and the
per-call settings: timeouts, rate limits, retries; a run may resume with other values).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import ConfigDict, Field

from .config import (
    CALL_SETTINGS,
    DEFAULT_JUDGE_RETRIES,
    EMBEDDED_DEFAULTS,
    OPENING_LINE,
    PAPER_JUDGE_SAMPLING,
)
from .llm.gateway import ModelSpec
from .records import ROLES, BenchmarkConfig, PromptRecord, identity_view


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


class RunConfig(BenchmarkConfig):
    """Everything that determines the results of a benchmark run.

    The fields readers need are declared once, in :class:`mindeval.records.BenchmarkConfig`.
    """

    model_config = ConfigDict(extra="forbid")

    patient: ModelSpec
    clinician: ModelSpec
    judge: ModelSpec
    prompts: dict[str, PromptRef]
    profiles_source: str
    profiles_sha256: str
    opening_line: str = OPENING_LINE
    judge_retries: int = DEFAULT_JUDGE_RETRIES
    fewshot_source: str | None = None
    package_version: str

    def hash(self) -> str:
        blob = json.dumps(self.hashed_view(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()

    def hashed_view(self) -> dict[str, Any]:
        return hashed_view(self.model_dump(mode="json"))

    def simulation_hash(self) -> str:
        """The identity of the run's conversations: the config hash without the judge's part."""
        return hash_config(simulation_view(self.model_dump(mode="json")))


def hashed_view(config: dict[str, Any]) -> dict[str, Any]:
    """What of a benchmark configuration (as JSON, any version) its hash covers."""
    data = dict(identity_view(config))
    data.pop("package_version", None)
    data.pop("profiles_source", None)  # the content hash identifies the profiles
    data.pop("fewshot_source", None)
    for role in ROLES:
        if isinstance(data.get(role), dict):
            data[role] = {k: v for k, v in data[role].items() if k not in CALL_SETTINGS}
    return data


# What only the judge reads: a run whose configuration differs from another's in these alone
# shares its conversations (``simulation_view``).
JUDGE_KEYS = ("judge", "judge_retries", "judge_samples", "fewshot_sha256", "fewshot_k", "fewshot_source",
              "judge_protocol", "guidelines_version", "transcript_format", "answer_prompt")


def simulation_view(config: dict[str, Any]) -> dict[str, Any]:
    """The part of a stored benchmark configuration (``RunConfig`` as JSON, any version) that
    decides its conversations: everything hashed except the judge's settings and prompt."""
    data = {k: v for k, v in identity_view(config).items()
            if k not in JUDGE_KEYS and k not in ("package_version", "profiles_source")}
    data["prompts"] = {k: v for k, v in (config.get("prompts") or {}).items() if k != "judge"}
    for role in ("patient", "clinician"):
        if isinstance(data.get(role), dict):
            data[role] = {k: v for k, v in data[role].items() if k not in CALL_SETTINGS}
    return data


def hash_config(config: dict[str, Any]) -> str:
    """SHA-256 of a JSON configuration with sorted keys (backstory, judge and realism runs)."""
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()


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
