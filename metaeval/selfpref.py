"""Table 5: leaderboard agreement between judges, and self-preference of a judge.

* Leaderboard: each system's mean score over its interactions (a judge's runs are
  averaged per interaction first). Pairwise accuracy between two leaderboards is the
  share of system pairs they order the same way (:func:`agreement.pairwise_accuracy`).
* Self-preference: when the judge's own model is also a clinician system, rank the
  systems of every profile under the judge and under a reference judge (rank 1 = best
  average score; tied systems share the mean of their ranks). For each profile,
  Δ = reference rank − judge rank, so Δ > 0 means the judge places its own model
  higher. Reported: mean Δ over profiles, and the share of profiles with Δ > 0.
  Profiles where the self system or fewer than two systems were scored by both are
  left out; none left gives NaN with a warning.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from pydantic import BaseModel

from mindeval.stats.agreement import AgreementWarning, TieRule, pairwise_accuracy
from mindeval.stats.exact import exact_mean, snap

from .matrices import Panel
from .rollup import AVERAGE
from .sources import RaterScores


def interaction_means(panel: Panel, rater: RaterScores, axis: str = AVERAGE) -> np.ndarray:
    """Per-interaction score of a rater on ``axis``, averaged over its runs."""
    return exact_mean(panel.matrix_of(rater, axis), axis=0)


def leaderboard(panel: Panel, scores: np.ndarray) -> pd.Series:
    """Mean score per system over the panel's interactions (NaNs skipped)."""
    frame = pd.DataFrame({"system": [k[1] for k in panel.keys], "score": scores})
    means = frame.groupby("system")["score"].mean()
    return pd.Series(snap(means.to_numpy()), index=means.index).sort_values(ascending=False)


def leaderboard_accuracy(a: pd.Series, b: pd.Series, ties: TieRule = "sign") -> float:
    """System-level pairwise accuracy of two leaderboards over their common systems."""
    common = sorted(set(a.index) & set(b.index))
    return pairwise_accuracy(a.reindex(common).to_numpy(), b.reindex(common).to_numpy(), ties=ties)


class SelfPreference(BaseModel):
    judge: str
    reference: str
    system: str
    avg_rank_delta: float
    pct_rank_improvements: float
    n_profiles: int


def self_preference(panel: Panel, judge: np.ndarray, reference: np.ndarray, system: str,
                    *, judge_label: str = "judge", reference_label: str = "reference") -> SelfPreference:
    """Rank change of ``system`` under ``judge`` versus ``reference``, per profile
    (:func:`mindeval.stats.ranking.self_preference`, shared with the leaderboard)."""
    from mindeval.stats.ranking import self_preference as rank_change

    by_ref: dict[str, dict[str, float]] = {}
    by_judge: dict[str, dict[str, float]] = {}
    for pos, (pid, sys_) in enumerate(panel.keys):
        if not (np.isnan(judge[pos]) or np.isnan(reference[pos])):
            by_ref.setdefault(sys_, {})[pid] = float(reference[pos])
            by_judge.setdefault(sys_, {})[pid] = float(judge[pos])
    got = rank_change(by_ref, by_judge, system) if system in by_ref else None
    if got is None or got.n_items == 0:
        warnings.warn(
            f"self-preference of {judge_label}: no profile where {system} and another system "
            f"were scored by both {judge_label} and {reference_label}",
            AgreementWarning, stacklevel=2,
        )
        nan = float("nan")
        return SelfPreference(judge=judge_label, reference=reference_label, system=system,
                              avg_rank_delta=nan, pct_rank_improvements=nan, n_profiles=0)
    return SelfPreference(
        judge=judge_label, reference=reference_label, system=system, avg_rank_delta=got.mean_rank_delta,
        pct_rank_improvements=100 * got.share_improved, n_profiles=got.n_items,
    )


def find_self_system(judge_model: str, systems: list[str]) -> str | None:
    """The clinician system that is the judge's own model: same string, or same name after the provider."""
    if judge_model in systems:
        return judge_model
    base = judge_model.rsplit("/", 1)[-1].lower()
    hits = [s for s in systems if s.rsplit("/", 1)[-1].lower() == base]
    return hits[0] if len(hits) == 1 else None
