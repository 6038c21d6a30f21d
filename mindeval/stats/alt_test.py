"""The alternative annotator test (Calderon et al., ACL 2025): may a judge replace the human annotators?

Written from the paper's description. Each human ``h`` is left out in turn. On every item ``h``
rated that the judge and at least one other human rated, the judge and ``h`` are each scored
against the remaining humans' ratings of the item:

* ordinal scores: negative root mean squared difference to the remaining humans;
* categories: the share of the remaining humans giving the same category (accuracy).

A judge with several runs (a run is what one judge call gives) is one rater whose rating of an
item is the mean of its runs' ratings (ordinal; categories: the most frequent category of its runs,
a tie scoring the mean accuracy of the tied categories), scored like a human. Scoring each run and
averaging the scores instead would charge the judge for its sampling noise. Per item, ``W_judge = 1`` when the judge scores at least as well as ``h`` and
``W_human = 1`` when ``h`` scores at least as well as the judge (a tie counts for both). Per
human, a one-sided paired t-test of ``mean(W_human − W_judge) < ε`` (H0: the human's advantage
is at least ε); a zero-variance difference gives p = 0 when its mean is below ε, else 1. The p
values are corrected across humans by Benjamini-Yekutieli; the judge *beats* a human whose
corrected p is below the level. The winning rate ω is the share of humans beaten; the judge
passes at ω ≥ 0.5. The advantage probability ρ (mean over humans of mean ``W_judge``) ranks
judges. The paper asks for at least 3 humans and 30 items per human; below that the result is
reported without pass or fail.
"""

from __future__ import annotations

import warnings
from typing import Literal

import numpy as np
from pydantic import BaseModel

from mindeval.config import METAEVAL_EPSILON
from mindeval.stats.exact import exact_mean

Scale = Literal["ordinal", "categorical"]
EPSILON_GRID: tuple[float, ...] = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3)
DEFAULT_EPSILON = METAEVAL_EPSILON  # the paper's value for expert annotators (0.15 skilled, 0.1 crowd workers)
MIN_HUMANS = 3
MIN_ITEMS = 30


class HumanTest(BaseModel):
    """One left-out human: items, the judge's and the human's win rates, the test at the chosen ε."""

    human: str
    n_items: int
    rho_judge: float  # mean W_judge
    rho_human: float  # mean W_human
    p_value: float  # one-sided, at the chosen ε, before correction
    p_corrected: float  # Benjamini-Yekutieli across humans


class AltTestResult(BaseModel):
    epsilon: float
    level: float
    humans: list[HumanTest]
    omega: float  # winning rate at ``epsilon``
    omega_grid: dict[str, float]  # ε (as text) -> winning rate
    rho: float  # advantage probability
    status: str  # "pass", "fail", or why the test does not apply


def alignment(pred: np.ndarray, others: np.ndarray, scale: Scale) -> np.ndarray:
    """Per item, how well ``pred`` (items,) agrees with ``others`` (raters × items; NaN = not rated)."""
    rated = ~np.isnan(others)
    n = rated.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        if scale == "categorical":
            return np.where(rated, others == pred[None, :], False).sum(axis=0) / n
        sq = np.where(rated, (others - pred[None, :]) ** 2, 0.0).sum(axis=0) / n
        return -np.sqrt(sq)


def _one_sided_p(d: np.ndarray, epsilon: float) -> float:
    """p of H0 mean(d) ≥ ε against mean(d) < ε (paired t-test)."""
    from scipy.stats import ttest_1samp

    if len(d) < 2:
        return float("nan")
    if np.all(d == d[0]):
        return 0.0 if d[0] < epsilon else 1.0
    return float(ttest_1samp(d, epsilon, alternative="less").pvalue)


def judge_alignment(runs: np.ndarray, others: np.ndarray, scale: Scale) -> np.ndarray:
    """Per item, how well the judge (runs × items; NaN = no rating) agrees with ``others``: its rating is the
    mean of its runs (ordinal; exact, :func:`mindeval.stats.exact.exact_mean`, so runs averaging to a human's
    score tie with it), or its runs' most frequent category (categorical; a tie between categories
    scores the mean accuracy of the tied ones). NaN where no run rated the item."""
    rated = ~np.isnan(runs)
    any_run = rated.any(axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if scale == "ordinal":
            return np.where(any_run, alignment(exact_mean(runs, axis=0), others, scale), np.nan)
    out = np.full(runs.shape[1], np.nan)
    for i in np.flatnonzero(any_run):
        cats, counts = np.unique(runs[rated[:, i], i], return_counts=True)
        top = cats[counts == counts.max()]
        out[i] = np.mean([alignment(np.array([c]), others[:, i:i + 1], scale)[0] for c in top])
    return out


def win_indicators(judge: np.ndarray, humans: np.ndarray, left_out: int,
                   scale: Scale) -> tuple[np.ndarray, np.ndarray]:
    """``W_judge`` and ``W_human`` of human ``left_out`` on the items it can be tested on.

    ``judge``: runs × items, ``humans``: raters × items (NaN = not rated)."""
    h = humans[left_out]
    others = np.delete(humans, left_out, axis=0)
    runs = np.atleast_2d(judge)
    ok = ~np.isnan(h) & (~np.isnan(others)).any(axis=0) & (~np.isnan(runs)).any(axis=0)
    s_judge = judge_alignment(runs, others, scale)
    s_human = alignment(h, others, scale)
    ok &= ~np.isnan(s_judge)
    return (s_judge[ok] >= s_human[ok]).astype(float), (s_human[ok] >= s_judge[ok]).astype(float)


def alt_test(judge: np.ndarray, humans: np.ndarray, labels: list[str], scale: Scale, *,
             epsilon: float = DEFAULT_EPSILON, level: float = 0.05,
             grid: tuple[float, ...] = EPSILON_GRID) -> AltTestResult:
    """The alternative annotator test of ``judge`` (runs × items) against ``humans`` (raters × items)."""
    from scipy.stats import false_discovery_control

    wins = [win_indicators(judge, humans, i, scale) for i in range(len(labels))]

    def corrected(eps: float) -> tuple[np.ndarray, np.ndarray]:
        raw = np.array([_one_sided_p(wh - wj, eps) for wj, wh in wins])
        adj = np.full_like(raw, np.nan)
        fin = np.isfinite(raw)
        if fin.any():
            adj[fin] = false_discovery_control(raw[fin], method="by")
        return raw, adj

    def omega(adj: np.ndarray) -> float:
        return float(np.mean(np.nan_to_num(adj, nan=1.0) < level)) if len(adj) else float("nan")

    raw, adj = corrected(epsilon)
    tests = [HumanTest(human=lab, n_items=len(wj), rho_judge=float(wj.mean()) if len(wj) else float("nan"),
                       rho_human=float(wh.mean()) if len(wh) else float("nan"), p_value=float(p), p_corrected=float(q))
             for lab, (wj, wh), p, q in zip(labels, wins, raw, adj, strict=True)]
    grid_omega = {f"{e:g}": omega(corrected(e)[1]) for e in grid}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        rho = float(np.nanmean([t.rho_judge for t in tests])) if tests else float("nan")
    w = omega(adj)
    fewest = min((t.n_items for t in tests), default=0)
    if len(labels) < MIN_HUMANS:
        status = f"not applicable: {len(labels)} humans, the test needs at least {MIN_HUMANS}"
    elif fewest < MIN_ITEMS:
        status = f"not applicable: a human has {fewest} testable items, the test needs at least {MIN_ITEMS} per human"
    else:
        status = "pass" if w >= 0.5 else "fail"
    return AltTestResult(epsilon=epsilon, level=level, humans=tests, omega=w, omega_grid=grid_omega, rho=rho,
                         status=status)
