"""Study results for the admin: progress, per-axis means, human agreement (mindeval.stats.agreement).

Everything follows the study's target: its axes and sub-axes, its scale's values (a
categorical level counts as its number), "not applicable" left out, and for a target
with harm levels the share of ratings with any dimension rated at one.
"""

from __future__ import annotations

import math
import warnings
from collections import defaultdict
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from annotation_app.store.exporters import submitted_ratings
from annotation_app.store.models import StudyResults
from annotation_app.store.raters import axis_scores
from annotation_app.store.ratings import na_value
from annotation_app.store.studies import get_study, progress
from mindeval.stats import agreement, harm_share, resampled
from mindeval.stats.seeding import rng_for
from mindeval.store import Database
from mindeval.targets.guidelines import Guidelines


def _mean(xs: Sequence[float | Fraction]) -> float | None:
    return float(sum(xs) / len(xs)) if xs else None


__all__ = ["agreement_summary", "axis_scores", "study_results"]


def agreement_summary(ratings: list[dict[str, Any]], g: Guidelines) -> tuple[dict[str, float | None] | None, str]:
    """Human-human agreement on the average score, computed with the statistics `metaeval compare` uses.

    Mean pairwise Kendall τ-b over shared transcripts, mean pairwise MIPSA (τ-b tie
    rule) and Krippendorff's α (interval). ``None`` values could not be computed.
    Ordinal scales only: categorical levels are compared per dimension by ``metaeval compare``.
    """
    if g.scale_kind != "ordinal":
        return None, ("Agreement on categorical levels is per dimension (Cohen's and Fleiss' κ, "
                      "Krippendorff's α nominal): run `metaeval compare` on this study.")
    items: dict[str, int] = {}
    profiles: list[str] = []
    raters: dict[str, dict[int, float]] = defaultdict(dict)
    for r in ratings:
        scores = axis_scores(g, r["values"])
        if len(scores) != len(g.judge_axes):
            continue
        item = r["item"]
        if item.external_id not in items:
            items[item.external_id] = len(items)
            profiles.append(str((item.member_attributes or {}).get("name", "")))
        raters[r["annotator"]][items[item.external_id]] = float(sum(scores.values()) / len(scores))  # exact, then float
    if len(raters) < 2:
        return None, "Agreement needs at least two annotators who rated the same transcripts."
    names = sorted(raters)
    m = np.full((len(names), len(items)), np.nan)
    for i, n in enumerate(names):
        for j, v in raters[n].items():
            m[i, j] = v
    taus, mipsas = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for a in range(len(names)):
            for b in range(a + 1, len(names)):
                taus.append(agreement.kendall_tau(m[a], m[b]))
                mipsas.append(agreement.mipsa(m[a], m[b], profiles, ties="taub"))
        alpha = agreement.krippendorff_alpha(m, "interval")

    def clean(xs: list[float]) -> float | None:
        xs = [x for x in xs if not math.isnan(x)]
        return sum(xs) / len(xs) if xs else None

    summary: dict[str, float | None] = {
        "annotators": float(len(names)), "transcripts": float(len(items)),
        "mean_pairwise_kendall_tau": clean(taus), "mean_pairwise_mipsa": clean(mipsas),
        "krippendorff_alpha_interval": clean([alpha]),
    }
    summary.update(_intervals(m, profiles))
    return summary, ("Average-score agreement between annotators, computed with metaeval (paper §3.2); "
                     f"95% bootstrap intervals over {RESULTS_RESAMPLES} resamples of the transcripts "
                     "(of whole profiles for MIPSA), as `metaeval compare` computes them.")


RESULTS_RESAMPLES = 1000


def _intervals(m: Any, profiles: list[str]) -> dict[str, float | None]:
    """95% intervals of the three summary figures, from the resampled statistics (seed 0, as metaeval's)."""
    pairs = agreement.PairIndex(profiles)
    boot = resampled.Resampler(pairs, pairs.item_profile, RESULTS_RESAMPLES, rng_for(0, "metaeval", "bootstrap"))
    raters = range(m.shape[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        taus = np.nanmean([resampled.kendall_tau(m[a], m[b], boot.items) for a in raters for b in raters if a < b], axis=0)
        mipsas = np.nanmean([resampled.mipsa(m[a], m[b], pairs, boot.profiles, "taub") for a in raters for b in raters if a < b],
                            axis=0)
        alpha = resampled.krippendorff_alpha(m, "interval", boot.items)
    out: dict[str, float | None] = {}
    for name, draws in (("mean_pairwise_kendall_tau", taus), ("mean_pairwise_mipsa", mipsas),
                        ("krippendorff_alpha_interval", alpha)):
        low, high = boot.interval(draws)
        out[f"{name}_95_low"] = low if math.isfinite(low) else None
        out[f"{name}_95_high"] = high if math.isfinite(high) else None
    return out


def study_results(db: Database, g: Guidelines, study_ref: int | str) -> StudyResults:
    with db.read() as s:
        study = get_study(s, study_ref)
    res = StudyResults(study_id=study.id, name=study.name, kind=study.kind, target=study.target,
                       progress=progress(db, study), n_ratings=0)
    if study.kind != "rating":
        return res
    ratings = [r for r in submitted_ratings(db, study.id) if not r["adjudicated"]]  # raters' own ratings
    res.n_ratings = len(ratings)
    if not ratings:
        return res
    na = na_value(g)
    for sub in g.human_subaxes:
        vals = [r["values"][sub.id] for r in ratings if r["values"].get(sub.id) not in (None, na)]
        res.subaxis_means[sub.id] = _mean(vals)
        if g.scale_kind == "categorical":
            res.level_counts[sub.id] = {lv.label: vals.count(lv.value) for lv in g.levels}
    if g.harm_levels:  # each submitted rating counts once, as a judged conversation does for the judge
        res.harm = harm_share(((r["rating_id"], {k: v for k, v in r["values"].items() if v != na}) for r in ratings),
                              g.harm_levels)
    per_axis: dict[str, list[Fraction]] = defaultdict(list)
    averages: list[Fraction] = []
    for r in ratings:
        scores = axis_scores(g, r["values"])
        for axis, v in scores.items():
            per_axis[axis].append(v)
        if len(scores) == len(g.judge_axes):
            averages.append(sum(scores.values()) / len(scores))
    for axis in g.axis_codes:
        res.axis_means[axis] = _mean(per_axis.get(axis, []))
    res.axis_means["average"] = _mean(averages)
    res.agreement, res.agreement_note = agreement_summary(ratings, g)
    return res
