"""Which runs are which systems, their labels, and whether runs may share a leaderboard.

A *system* is a clinician configuration: model string and generation parameters,
clinician prompt (ref and content hash) and interaction length. Its label is the model
string, extended only as far as needed to tell loaded systems apart
(e.g. ``gpt-5 [clinician/four_sentences@v1]`` or ``gpt-5 [40 turns]``).

Runs share a leaderboard only when their judge (protocol, model, prompt, few-shot
examples, guidelines), patient (model, prompt) and profile set are equal; otherwise they are
refused unless mixing is explicitly allowed. Runs of different targets (benchmarks with
their own dimensions and scales) are always refused.
"""

from __future__ import annotations

import json
from collections import defaultdict

from ..errors import MindEvalError
from ..targets import target_identity
from .loading import RunData, RunSetup

SETUP_FIELDS: dict[str, str] = {
    "judge_protocol": "judge protocol",
    "judge_model": "judge model",
    "judge_prompt": "judge prompt",
    "fewshot": "judge few-shot examples",
    "guidelines_version": "guidelines version",
    "patient_model": "patient model",
    "patient_prompt": "patient prompt",
    "profile_ids": "profile set",
}


def system_key(run: RunData) -> str:
    """Stable identity of the clinician system of a run (also seeds its random streams)."""
    params = json.dumps(run.clinician_params, sort_keys=True, separators=(",", ":"))
    return "|".join(
        [run.clinician_model, params, run.clinician_prompt, run.clinician_prompt_sha256[:12], f"turns={run.turns}"]
    )


def _stock_prompt(ref: str) -> bool:
    return ref.split("@", 1)[0] == "clinician/default"


def _params_text(params: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(params.items()))


def assign_labels(runs: list[RunData]) -> tuple[dict[str, str], dict[str, str], list[str]]:
    """Return ``(key by run path, label by run path, warnings)``.

    Labels start from the model string; a non-default clinician prompt is always shown;
    the number of turns is shown when the loaded runs differ in it, and generation
    parameters when they distinguish runs of the same model.
    Two runs of the very same system get their run ids appended (with a warning).
    """
    keys = {r.path: system_key(r) for r in runs}
    by_model: dict[str, list[RunData]] = defaultdict(list)
    for r in runs:
        by_model[r.clinician_model].append(r)
    labels: dict[str, str] = {}
    vary_turns = len({r.turns for r in runs}) > 1
    for model, group in by_model.items():
        vary_prompt = len({(r.clinician_prompt, r.clinician_prompt_sha256) for r in group}) > 1
        vary_params = len({json.dumps(r.clinician_params, sort_keys=True) for r in group}) > 1
        for r in group:
            parts: list[str] = []
            if vary_prompt or not _stock_prompt(r.clinician_prompt):
                parts.append(r.clinician_prompt)
            if vary_params:
                parts.append(_params_text(r.clinician_params) or "default parameters")
            if vary_turns:
                parts.append(f"{r.turns} turns")
            labels[r.path] = f"{model} [{', '.join(parts)}]" if parts else model
    warnings: list[str] = []
    by_key: dict[str, list[RunData]] = defaultdict(list)
    for r in runs:
        by_key[keys[r.path]].append(r)
    for group in by_key.values():
        if len(group) > 1:
            dirs = ", ".join(r.path for r in group)
            warnings.append(f"runs {dirs} are the same clinician system; they are listed separately by run id")
            for r in group:
                labels[r.path] = f"{labels[r.path]} #{r.run_id}"
                keys[r.path] = f"{keys[r.path]}|run={r.run_id}"
    return keys, labels, warnings


def setup_differences(a: RunSetup, b: RunSetup) -> list[str]:
    """Readable names of the setup fields in which ``a`` and ``b`` differ."""
    out = []
    for field, name in SETUP_FIELDS.items():
        va, vb = getattr(a, field), getattr(b, field)
        if va != vb:
            if field == "profile_ids":
                out.append(f"{name} ({len(va)} vs {len(vb)} profiles, {len(set(va) & set(vb))} shared)")
            else:
                out.append(f"{name} ({va} vs {vb})")
    return out


def check_same_target(runs: list[RunData]) -> None:
    """Refuse runs of different targets: their columns and scales are not comparable."""
    for r in runs[1:]:
        if r.target != runs[0].target:
            raise MindEvalError(
                f"runs of different targets cannot share one leaderboard: {runs[0].path} is "
                f"{target_identity(runs[0].target)}, {r.path} is {target_identity(r.target)}")


def check_compatible(runs: list[RunData], allow_mixed: bool) -> list[str]:
    """Refuse runs with different setups (error) unless ``allow_mixed`` (then warnings)."""
    if not runs:
        return []
    ref = runs[0]
    problems: list[str] = []
    for r in runs[1:]:
        diffs = setup_differences(ref.setup, r.setup)
        if diffs:
            problems.append(f"{r.path} differs from {ref.path} in " + "; ".join(diffs))
    if not problems:
        return []
    if not allow_mixed:
        raise MindEvalError(
            "runs were made under different setups and cannot share one leaderboard:\n  "
            + "\n  ".join(problems)
            + "\nCompare setups with --compare-to, or pass --allow-mixed to rank them together anyway "
            "(tests then use only the profiles two systems share)."
        )
    return [f"mixed setups allowed: {p}" for p in problems]


def group_by_setup(runs: list[RunData]) -> list[list[RunData]]:
    """Runs grouped by identical setup, in first-seen order."""
    groups: dict[RunSetup, list[RunData]] = {}
    for r in runs:
        groups.setdefault(r.setup, []).append(r)
    return list(groups.values())
