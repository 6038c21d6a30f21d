"""What a run's configuration is hashed by: the views of a stored configuration (``config.json``'s
``config``, any version, as JSON) that decide a run's identity and its conversations'."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ..config import CALL_SETTINGS
from .target import ROLES, identity_view


def hash_config(config: dict[str, Any], *, compact: bool = False) -> str:
    """SHA-256 of a JSON configuration with sorted keys (``compact``: without spaces, as a benchmark
    run's hash has always been; backstory, judge and realism runs hash with them)."""
    blob = json.dumps(config, sort_keys=True, separators=(",", ":") if compact else None)
    return hashlib.sha256(blob.encode()).hexdigest()


def hashed_view(config: dict[str, Any]) -> dict[str, Any]:
    """What of a benchmark configuration (as JSON, any version) its hash covers."""
    data = dict(identity_view(config))
    data.pop("package_version", None)
    data.pop("profiles_source", None)  # the content hash identifies the profiles
    data.pop("target_source", None)  # the target block's hash identifies the target
    data.pop("target_sha256", None)
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
    """The part of a stored benchmark configuration (:class:`RunConfig` as JSON, any version) that
    decides its conversations: everything hashed except the judge's settings and prompt."""
    data = {k: v for k, v in identity_view(config).items()
            if k not in JUDGE_KEYS and k not in ("package_version", "profiles_source")}
    data["prompts"] = {k: v for k, v in (config.get("prompts") or {}).items() if k != "judge"}
    for role in ("patient", "clinician"):
        if isinstance(data.get(role), dict):
            data[role] = {k: v for k, v in data[role].items() if k not in CALL_SETTINGS}
    return data

