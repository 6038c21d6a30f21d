"""All defaults in one place, and the run configuration with its hash.

The config hash covers everything that changes results (models and parameters,
prompt versions and contents, guideline version, profiles, turns, seeds, judge
settings) and nothing that does not (concurrency, output paths, database URL, and the
per-call settings: timeouts, rate limits, retries; a run may resume with other values).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .llm.gateway import CALL_SETTINGS, EMBEDDED_MODEL, ModelSpec
from .records import ROLES, BenchmarkConfig, PromptRecord

DEFAULT_MODEL = EMBEDDED_MODEL
DEFAULT_TURNS = 20  # patient + clinician turns after the opening "Hello." (paper fn. 13)
OPENING_LINE = "Hello."
DEFAULT_CONCURRENCY = 4
DEFAULT_JUDGE_RETRIES = 3
DEFAULT_JUDGE_SAMPLES = 1
DEFAULT_FEWSHOT_K = 5  # the paper shows the judge five annotated examples
DEFAULT_SEED = 0
# Resamples of every bootstrap interval and permutation test: `mindeval leaderboard` (also its
# minimum) and `metaeval compare` / `power` (docs/leaderboard.md, docs/metaeval.md).
DEFAULT_RESAMPLES = 2000
# metaeval compare: the verdict's non-inferiority margin in Kendall τ (half of it for MIPSA).
METAEVAL_MARGIN = 0.1
DEFAULT_PROMPTS = {
    "patient": "patient/default",
    "clinician": "clinician/default",
    "judge": "judge/default",
}
# Generation defaults for the embedded model (a 135M model: keep replies short).
EMBEDDED_DEFAULTS = {
    "patient": {"temperature": 0.7, "max_tokens": 96},
    "clinician": {"temperature": 0.7, "max_tokens": 128},
    "judge": {"temperature": 0.0, "max_tokens": 64},
    # Room for four backstory paragraphs (~120 words each).
    "backstory": {"temperature": 0.7, "max_tokens": 768},
}
# `metaeval realism`: the patient prompt variants compared with humans, and the clinician
# greeting the LLM patient answers (${name} = the profile's name).
REALISM_VARIANTS: tuple[str, ...] = ("default", "no_format", "no_profile", "role_only")
REALISM_OPENER = "Hi ${name}. How are you doing?"
# Assumptions of `mindeval run --dry-run` and of the --max-cost guard (docs/architecture.md):
# ~4 characters per token, replies of these lengths (or --ROLE-max-tokens when smaller),
# and a few tokens of chat formatting per message.
CHARS_PER_TOKEN = 4
# Sampling parameters the providers accept (OpenAI's ranges; others are narrower or equal): a value
# outside is refused for every role, on the command line and in run files.
SAMPLING_RANGES = {"temperature": (0.0, 2.0), "top_p": (0.0, 1.0)}
ASSUMED_REPLY_TOKENS = {"patient": 80, "clinician": 150, "judge": 120, "backstory": 700}
TOKENS_PER_MESSAGE = 4
# Prompt caches as providers run them: no prefix under 1,024 tokens is cached (Anthropic
# Sonnet/Opus, OpenAI); automatic caches (OpenAI) hit in 128-token steps.
CACHE_MIN_TOKENS = 1024
AUTO_CACHE_STEP = 128
JUDGE_PROTOCOL = "mindeval"  # or "paper" (the authors' few-shot examples with our instructions; mindeval.judge)
# The authors' judge sampling settings (their README / paper §4.1: Claude Sonnet 4.5 with
# high reasoning, max_completion_tokens 16000, provider-default temperature).
PAPER_JUDGE_SAMPLING = {"reasoning_effort": "high", "max_tokens": 16000}
PAPER_JUDGE_PROMPT = "judge/paper"
# Per-call settings of real providers (not part of the config hash).
DEFAULT_TIMEOUT_S = {"patient": 120.0, "clinician": 120.0, "judge": 300.0}  # reasoning judges are slow
DEFAULT_CALL_TIMEOUT_S = 120.0  # a call made without a role (e.g. from the app)
DEFAULT_MAX_RETRIES = 6  # retries of 429/408/5xx/connection errors/timeouts, after the first attempt
DEFAULT_RETRY_BUDGET_S = 600.0  # total time one call may spend retrying
DEFAULT_EMPTY_RETRIES = 2  # an empty reply is asked again this often, then it is an error
# A turn longer than this many characters is shown to models (patient, clinician, judge) cut
# here with a "[cut: N more characters not shown]" marker (mindeval.textguard); stored whole.
MAX_TURN_CHARS = 8000


class RetryPolicy(BaseModel):
    """How often and for how long one model call is retried on transient errors."""

    model_config = ConfigDict(extra="forbid")

    max_retries: int = Field(DEFAULT_MAX_RETRIES, ge=0)
    budget_s: float = Field(DEFAULT_RETRY_BUDGET_S, gt=0)
    empty_retries: int = Field(DEFAULT_EMPTY_RETRIES, ge=0)
    base_delay_s: float = Field(1.0, ge=0)  # first backoff; doubles per attempt, with jitter
    max_delay_s: float = Field(60.0, ge=0)


def spec_with_defaults(role: str, spec: ModelSpec) -> ModelSpec:
    """Fill unset temperature / max_tokens of the embedded model with role defaults."""
    if not spec.is_embedded:
        return spec
    data = spec.model_dump()
    for key, val in EMBEDDED_DEFAULTS[role].items():
        if data.get(key) is None:
            data[key] = val
    return ModelSpec(**data)


def judge_spec_for_protocol(spec: ModelSpec, protocol: str) -> ModelSpec:
    """Under the ``paper`` protocol, fill unset sampling settings with the authors' (not for
    the embedded model, which has no reasoning mode)."""
    if protocol != "paper" or spec.is_embedded:
        return spec
    data = spec.model_dump()
    for key, val in PAPER_JUDGE_SAMPLING.items():
        if data.get(key) is None:
            data[key] = val
    return ModelSpec(**data)


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
    data = dict(config)
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
    data = {k: v for k, v in config.items()
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
