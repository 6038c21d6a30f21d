"""Pooled systems: runs of one clinician system that differ only in their patient model are one row.

Runs pool when their clinician system (:func:`~mindeval.leaderboard.systems.system_key`), their
judge setup, patient prompt, profile set and judge samples are equal and their patient models
differ. The pooled row holds every scored conversation of its runs; a profile then has several
conversations (one per patient model and repeat), kept together by every statistic that resamples:
the table averages them per profile before its bootstrap and paired tests, the declared score
resamples profiles whole. Runs of one system with the same patient model stay separate rows.
"""

from __future__ import annotations

from collections import defaultdict
from functools import reduce
from typing import Any

from pydantic import BaseModel

from ..errors import MindEvalError
from ..scoring import run_levels
from ..scoring.coverage import Coverage
from ..stats.proportion import harm_share
from .loading import RunData
from .systems import system_key
from .verbosity import VerbosityCounts


class PooledSystem(BaseModel):
    """What one leaderboard row pooled (``system``: its label, set once labels are known)."""

    system: str = ""
    runs: list[str]  # run directories
    patient_models: list[str]
    repeats: list[int]  # conversations per profile, per run


def _pool_key(r: RunData) -> tuple[str, object, int]:
    return system_key(r), r.setup.model_copy(update={"patient_model": ""}), r.judge_samples


def pool_runs(runs: list[RunData]) -> tuple[list[RunData], dict[str, list[RunData]]]:
    """The runs with each poolable group merged into one, and the members of each merged run by its path."""
    groups: dict[tuple[str, object, int], list[RunData]] = defaultdict(list)
    for r in runs:
        groups[_pool_key(r)].append(r)
    out: list[RunData] = []
    members: dict[str, list[RunData]] = {}
    for r in runs:
        group = groups[_pool_key(r)]
        models = [g.setup.patient_model for g in group]
        if len(group) == 1 or len(set(models)) != len(models):
            out.append(r)
        elif r is group[0]:
            group = sorted(group, key=lambda g: g.setup.patient_model)
            merged = merge(group)
            members[merged.path] = group
            out.append(merged)
    return out, members


def merge(group: list[RunData]) -> RunData:
    """One run of ``group``'s conversations (their patient models joined in its setup)."""
    first = group[0]
    scores = [s for r in group for s in r.scores]
    samples = {k: v for r in group for k, v in r.samples.items()}
    if len(samples) != sum(len(r.samples) for r in group):
        raise MindEvalError("two pooled runs share an interaction id: " + ", ".join(r.path for r in group))
    verbosity = VerbosityCounts(**{k: sum(getattr(r.verbosity, k) for r in group)
                                   for k in ("turns", "sentences", "words", "long_turns")})
    target = first.target
    harm_values = target.harm_values
    return first.model_copy(update={
        "path": " + ".join(r.path for r in group), "run_id": "+".join(r.run_id for r in group),
        "setup": first.setup.model_copy(update={"patient_model": " + ".join(r.setup.patient_model for r in group)}),
        "scores": scores, "samples": samples, "verbosity": verbosity,
        **{k: sum(getattr(r, k) for r in group) for k in ("n_interactions", "n_failed_interactions",
                                                            "n_failed_samples", "n_unscored", "n_partly_judged",
                                                            "n_benchmark", "n_judge_rounds", "n_refused_rounds")},
        "harm": harm_share(((s.interaction_id, x) for s in scores for x in samples[s.interaction_id]), harm_values)
        if harm_values else None,
        "levels": run_levels(target, scores, samples),
        "pooled": [r.path for r in group],
        **_coverage(group),
        "reply_ratings": [x for r in group for x in r.reply_ratings], "criteria": [x for r in group for x in r.criteria],
    })


def _coverage(group: list[RunData]) -> dict[str, Any]:
    """The pooled runs' partial-judging coverage, summed (overall and per session number)."""
    if any(r.coverage is None for r in group):
        return {}
    sessions = {k for r in group for k in r.session_coverage}
    return {"coverage": reduce(Coverage.add, [r.coverage for r in group if r.coverage is not None]),
            "session_coverage": {k: reduce(Coverage.add, [r.session_coverage[k] for r in group
                                                          if k in r.session_coverage]) for k in sorted(sessions)}}


def describe(label: str, group: list[RunData]) -> PooledSystem:
    return PooledSystem(system=label, runs=[r.path for r in group],
                        patient_models=[r.setup.patient_model for r in group], repeats=[r.repeats for r in group])


def note(p: PooledSystem) -> str:
    """The one line every output gives of a pooled row."""
    parts = ", ".join(f"{path} (patient {m}, {k} conversation{'s' if k > 1 else ''} per profile)"
                      for path, m, k in zip(p.runs, p.patient_models, p.repeats, strict=True))
    return (f"POOLED: {p.system} is one system over {len(p.runs)} runs: {parts}; a profile's conversations are "
            "averaged per profile and resampled together")
