"""Table 5: agreement between the main leaderboard and leaderboards from other setups.

The ``--compare-to`` runs are grouped by setup (judge, patient, profiles); each group
is one alternative leaderboard. Systems are matched by clinician system (model,
parameters, clinician prompt, turns). When the group's judge model is also one of the
clinician models, its self-preference (rank change per interaction) is reported.
"""

from __future__ import annotations

from pydantic import BaseModel

from ..scoring import per_profile
from ..stats import PairwiseAccuracy, SelfPreference, pairwise_accuracy, self_preference
from .loading import RunData, criteria_of
from .systems import setup_differences, system_key


class Comparison(BaseModel):
    setup: str  # what differs from the main leaderboard
    runs: list[str]
    accuracy: dict[str, PairwiseAccuracy]  # per criterion (incl. "average")
    self_preference: list[SelfPreference]


def _means(runs: dict[str, RunData]) -> dict[str, dict[str, float]]:
    return {
        key: {c: sum(s.scores[c] for s in r.scores) / len(r.scores) for c in criteria_of(r.target)}
        for key, r in runs.items() if r.scores
    }


def _per_profile(runs: dict[str, RunData]) -> dict[str, dict[str, float]]:
    """Each system's average per profile (a profile's conversations averaged: repeats, pooled runs)."""
    out = {}
    for key, r in runs.items():
        if r.scores:
            rows = per_profile(r.scores, ("average",))
            out[key] = {p: float(v[0]) for p, v in zip(rows["profile_ids"], rows["values"], strict=True)}
    return out


def compare_setups(
    main: dict[str, RunData], groups: list[list[RunData]], labels: dict[str, str]
) -> tuple[list[Comparison], list[str]]:
    """One :class:`Comparison` per alternative setup.

    ``main`` maps system key → run of the main leaderboard and ``labels`` key → label;
    the runs of each group are matched to it by :func:`system_key`.
    """
    main_means = _means(main)
    default_pp = _per_profile(main)
    reference_run = next(iter(main.values()))
    reference = reference_run.setup
    out: list[Comparison] = []
    warnings: list[str] = []
    for group in groups:
        diffs = setup_differences(reference, group[0].setup)
        desc = "; ".join(diffs) if diffs else "same setup"
        keyed = {system_key(r): r for r in group}
        other = _means(keyed)
        acc = {
            c: pairwise_accuracy({k: v[c] for k, v in main_means.items()}, {k: v[c] for k, v in other.items()})
            for c in criteria_of(reference_run.target)
        }
        acc = {c: a.model_copy(update={"systems": [labels.get(s, s) for s in a.systems]}) for c, a in acc.items()}
        if acc["average"].n_pairs == 0:
            warnings.append(f"comparison with {desc}: fewer than two systems in common, pairwise accuracy is NaN")
        prefs = []
        judge = group[0].setup.judge_model
        other_pp = _per_profile(keyed)
        for key, r in main.items():
            if r.clinician_model == judge and key in other_pp and key in default_pp:
                sp = self_preference(default_pp, other_pp, key)
                prefs.append(sp.model_copy(update={"system": labels.get(key, key)}))
        out.append(Comparison(setup=desc, runs=[r.path for r in group], accuracy=acc, self_preference=prefs))
    return out, warnings
