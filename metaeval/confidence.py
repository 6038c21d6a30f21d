"""Judges with confidence: judge-vs-judge tests, verdicts against the humans, calibration, ties.

Everything uses the panel's one bootstrap draw (:meth:`metaeval.matrices.Panel.resampler`):
interactions are resampled for τ and the bias, whole profiles for MIPSA, and two judges are
always evaluated on the same resampled interactions (paired). A judge with several runs is
represented on every resample by the median over its runs, as in the matrices.

* **Judge vs judge** (:func:`judge_pairs`): for a reference (the average annotator, or one
  human) and a metric, the difference ``Δ = agreement(A) − agreement(B)`` with its percentile
  interval and the paired-bootstrap p-value of :func:`mindeval.stats.significance.bootstrap_pvalue`
  (two-sided). Judges are clustered with the leaderboard's greedy rule
  (:func:`mindeval.stats.clusters.greedy_clusters`): a judge opens a new cluster when a member
  of the current one agrees significantly better (p < α).
* **Non-inferiority verdict** (:func:`confident_verdicts`, per ordinal axis; it answers
  :data:`NI_QUESTION`): leave-one-out, as the average annotator is built.
  For each human ``h``, the agreement of ``h`` with the mean of the other humans, and the
  judge's agreement with that same mean; ``Δ`` = the judge's mean over ``h`` minus the
  humans' mean. Outcome per metric: *worse than humans* when the interval of ``Δ`` lies below
  0; *as good as humans* when its lower end is above ``−margin`` (non-inferiority; ``margin`` in
  τ units, half of it for MIPSA, whose scale is (τ + 1) / 2); else *inconclusive (n too small)*.
  The judge's overall outcome is *worse* if any metric is, *as good* if all are.
* **Calibration** (:func:`calibration`): per axis the judge's mean bias against Avg. P with its
  interval, the confusion matrix of judge scores (each run) against the rounded Avg. P, and the
  Wasserstein distance between the judge's and the humans' score distributions.
* **Ties** (:func:`tie_table`): item-level pairwise accuracy with tie calibration beside
  MIPSA under its three tie rules.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel

from mindeval.config import METAEVAL_MARGIN
from mindeval.stats import resampled
from mindeval.stats.agreement import TIE_RULES, mipsa
from mindeval.stats.clusters import greedy_clusters
from mindeval.stats.significance import bootstrap_pvalue
from mindeval.stats.ties import tie_calibrated_accuracy

from .matrices import AVG_LABEL, Matrix, MetricOptions, Panel, Scores
from .statistics import STATISTICS, verdict_keys

DEFAULT_MARGIN = METAEVAL_MARGIN
OUTCOMES = ("as good as humans", "worse than humans", "inconclusive (n too small)")
NI_QUESTION = "is it non-inferior to the humans?"  # the question :class:`ConfidentVerdict` answers


class Draws:
    """Point value and resampled values of one agreement metric between raters on one axis."""

    def __init__(self, panel: Panel, opts: MetricOptions) -> None:
        self.panel = panel
        self.opts = opts
        boot = panel.resampler(opts)
        if boot is None:
            raise ValueError("confidence statistics need resamples >= 1")
        self.boot = boot

    def point(self, xs: np.ndarray, y: np.ndarray, metric: str) -> float:
        st = STATISTICS[metric]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            vals = [st.point(x, y, self.panel.pairs, self.opts) for x in np.atleast_2d(xs)]
        return float(np.median(vals)) if len(vals) > 1 else float(vals[0])

    def draws(self, xs: np.ndarray, y: np.ndarray, metric: str) -> np.ndarray:
        st = STATISTICS[metric]
        return resampled.median_over_runs([st.on_draw(x, y, self.panel.pairs, self.boot, self.opts)
                                           for x in np.atleast_2d(xs)])


# ----------------------------------------------------------------------- judge vs judge


class JudgeDiff(BaseModel):
    axis: str
    metric: str
    reference: str
    judge_a: str
    judge_b: str
    a: float
    b: float
    diff: float
    ci_low: float
    ci_high: float
    p_value: float


class JudgeClusters(BaseModel):
    axis: str
    metric: str
    reference: str
    values: dict[str, float]
    clusters: dict[str, int]


def judge_pairs(panel: Panel, opts: MetricOptions, axes: Sequence[str], alpha: float = 0.05,
                references: Sequence[str] | None = None) -> tuple[list[JudgeDiff], list[JudgeClusters]]:
    """Paired tests of every pair of judges and the clusters of tied judges, per axis, metric and reference."""
    if len(panel.judges) < 2:
        return [], []
    st = Draws(panel, opts)
    diffs: list[JudgeDiff] = []
    clusters: list[JudgeClusters] = []
    for axis in axes:
        sc = Scores(panel, axis, opts)
        refs: dict[str, np.ndarray] = {}
        if sc.avg_all is not None:
            refs[AVG_LABEL] = sc.avg_all
        refs.update(sc.human)
        for ref_label, ref in refs.items():
            if references is not None and ref_label not in references:
                continue
            for metric in verdict_keys():
                points = {j: st.point(x, ref, metric) for j, x in sc.judge.items()}
                draws = {j: st.draws(x, ref, metric) for j, x in sc.judge.items()}
                found: dict[tuple[str, str], JudgeDiff] = {}
                names = list(sc.judge)
                for i, a in enumerate(names):
                    for b in names[i + 1:]:
                        delta = draws[a] - draws[b]
                        obs = points[a] - points[b]
                        low, high = st.boot.interval(delta)
                        p = float(bootstrap_pvalue(delta, np.array([obs]), "two")[0]) if np.isfinite(obs) else np.nan
                        d = JudgeDiff(axis=axis, metric=metric, reference=ref_label, judge_a=a, judge_b=b,
                                      a=points[a], b=points[b], diff=obs, ci_low=low, ci_high=high, p_value=p)
                        diffs.append(d)
                        found[(a, b)] = found[(b, a)] = d
                finite = {j: v for j, v in points.items() if np.isfinite(v)}
                if len(finite) >= 2:
                    def better(m: str, c: str, found: dict[tuple[str, str], JudgeDiff] = found,
                               pts: dict[str, float] = finite) -> bool:
                        return found[(m, c)].p_value < alpha and pts[m] > pts[c]
                    clusters.append(JudgeClusters(axis=axis, metric=metric, reference=ref_label, values=points,
                                                  clusters=greedy_clusters(finite, better)))
    return diffs, clusters


# ------------------------------------------------------------------------------ verdicts


class MetricVerdict(BaseModel):
    metric: str
    judge_vs_avg: float  # agreement with the average of all humans (the matrix cell)
    judge_vs_avg_ci: list[float]
    human_low: float  # human-human pairwise range
    human_high: float
    judge_loo: float  # mean over humans h of agreement(judge, mean of the others)
    human_loo: float  # mean over humans h of agreement(h, mean of the others)
    diff: float
    diff_ci: list[float]
    p_value: float
    margin: float
    outcome: str


class ConfidentVerdict(BaseModel):
    judge: str
    axis: str
    outcome: str
    metrics: list[MetricVerdict]
    n_interactions: int
    n_profiles: int
    n_humans: int

    def line(self, opts: MetricOptions) -> str:
        parts = []
        for m in self.metrics:
            name = STATISTICS[m.metric].short(opts)
            parts.append(
                f"{name} vs {AVG_LABEL} {m.judge_vs_avg:.4f} [{m.judge_vs_avg_ci[0]:.4f}, {m.judge_vs_avg_ci[1]:.4f}] "
                f"(human-human {m.human_low:.4f} to {m.human_high:.4f}); leave-one-out judge {m.judge_loo:.4f} vs "
                f"humans {m.human_loo:.4f}: Δ {m.diff:+.4f} [{m.diff_ci[0]:+.4f}, {m.diff_ci[1]:+.4f}], "
                f"p = {m.p_value:.3f}, margin {m.margin:g}: {m.outcome}")
        return (f"non-inferiority with {opts.ci:.0%} confidence {self.judge} ({self.axis}, {self.n_interactions} "
                f"interactions, {self.n_profiles} profiles, {self.n_humans} humans): {NI_QUESTION} "
                f"{self.outcome.upper()} — " + "; ".join(parts))


def _outcome(low: float, high: float, margin: float) -> str:
    if not (np.isfinite(low) and np.isfinite(high)):
        return OUTCOMES[2]
    if high < 0:
        return OUTCOMES[1]
    if low > -margin:
        return OUTCOMES[0]
    return OUTCOMES[2]


def confident_verdicts(panel: Panel, matrix: Matrix, margin: float = DEFAULT_MARGIN) -> list[ConfidentVerdict]:
    """One verdict per judge on ``matrix``'s axis (ordinal scales, at least two humans)."""
    opts = matrix.options
    sc = Scores(panel, matrix.axis, opts)
    if matrix.categorical or len(sc.human) < 2 or not sc.judge or opts.resamples < 1:
        return []
    st = Draws(panel, opts)
    humans = list(sc.human)
    loos = {h: sc.loo(h) for h in humans}
    out: list[ConfidentVerdict] = []
    human_pts: dict[str, float] = {}
    human_draws: dict[str, np.ndarray] = {}
    for metric in verdict_keys():
        pts = [st.point(sc.human[h], loos[h], metric) for h in humans]
        human_pts[metric] = float(np.nanmean(pts)) if np.isfinite(pts).any() else float("nan")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            human_draws[metric] = np.nanmean(np.vstack([st.draws(sc.human[h], loos[h], metric) for h in humans]),
                                             axis=0)
    for j, runs in sc.judge.items():
        mv: list[MetricVerdict] = []
        for metric in verdict_keys():
            hh = [matrix.cell(a, b).point(metric) for i, a in enumerate(humans) for b in humans[i + 1:]]
            hh = [v for v in hh if np.isfinite(v)] or [float("nan")]
            cell = matrix.cell(j, AVG_LABEL)
            pts = [st.point(runs, loos[h], metric) for h in humans]
            judge_loo = float(np.nanmean(pts)) if np.isfinite(pts).any() else float("nan")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                jd = np.nanmean(np.vstack([st.draws(runs, loos[h], metric) for h in humans]), axis=0)
            delta = jd - human_draws[metric]
            obs = judge_loo - human_pts[metric]
            low, high = st.boot.interval(delta)
            p = float(bootstrap_pvalue(delta, np.array([obs]), "two")[0]) if np.isfinite(obs) else float("nan")
            mg = margin * STATISTICS[metric].margin
            mv.append(MetricVerdict(
                metric=metric, judge_vs_avg=cell.point(metric),
                judge_vs_avg_ci=cell.ci.get(metric, [float("nan")] * 2), human_low=min(hh), human_high=max(hh),
                judge_loo=judge_loo, human_loo=human_pts[metric], diff=obs, diff_ci=[low, high], p_value=p,
                margin=mg, outcome=_outcome(low, high, mg)))
        outcomes = {m.outcome for m in mv}
        overall = OUTCOMES[1] if OUTCOMES[1] in outcomes else (OUTCOMES[0] if outcomes == {OUTCOMES[0]}
                                                                else OUTCOMES[2])
        out.append(ConfidentVerdict(judge=j, axis=matrix.axis, outcome=overall, metrics=mv,
                                    n_interactions=int(np.isfinite(sc.avg_all).sum()) if sc.avg_all is not None else 0,
                                    n_profiles=panel.pairs.n_profiles, n_humans=len(humans)))
    return out


# --------------------------------------------------------------------------- calibration


class Calibration(BaseModel):
    judge: str
    axis: str
    bias: float  # mean of (judge's mean over runs - Avg. P)
    bias_ci: list[float]
    wasserstein: float  # judge scores (every run) vs human scores (every human)
    levels: list[int]
    confusion: list[list[int]]  # rows: judge score (rounded), columns: rounded Avg. P
    n_interactions: int


def _round_half_up(x: np.ndarray) -> np.ndarray:
    return np.floor(x + 0.5)


def calibration(panel: Panel, opts: MetricOptions, axes: Sequence[str]) -> list[Calibration]:
    """Bias, confusion matrix and distribution distance of every judge on every axis."""
    from scipy.stats import wasserstein_distance

    boot = panel.resampler(opts)
    out: list[Calibration] = []
    for axis in axes:
        sc = Scores(panel, axis, opts)
        if sc.avg_all is None:
            continue
        humans = sc.all_h[np.isfinite(sc.all_h)]
        gold = sc.avg_all
        for j, runs in sc.judge.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                jmean = np.nanmean(runs, axis=0)
            d = jmean - gold
            keep = np.isfinite(d)
            bias = float(d[keep].mean()) if keep.any() else float("nan")
            ci = [float("nan"), float("nan")]
            if boot is not None and keep.any():
                c = boot.items[:, keep]
                with np.errstate(invalid="ignore", divide="ignore"):
                    ci = list(boot.interval((c @ d[keep]) / c.sum(axis=1)))
            jr = _round_half_up(runs[:, keep]).astype(int)
            gr = np.broadcast_to(_round_half_up(gold[keep]).astype(int), jr.shape)
            vals = np.concatenate([jr.ravel(), gr.ravel()])
            levels = list(range(int(vals.min()), int(vals.max()) + 1)) if vals.size else []
            conf = np.zeros((len(levels), len(levels)), dtype=int)
            if levels:
                np.add.at(conf, (jr.ravel() - levels[0], gr.ravel() - levels[0]), 1)
            js = runs[np.isfinite(runs)]
            w = float(wasserstein_distance(js, humans)) if js.size and humans.size else float("nan")
            out.append(Calibration(judge=j, axis=axis, bias=bias, bias_ci=ci, wasserstein=w, levels=levels,
                                   confusion=conf.tolist(), n_interactions=int(keep.sum())))
    return out


# ---------------------------------------------------------------------------------- ties


class TieRow(BaseModel):
    judge: str
    axis: str
    accuracy_calibrated: float
    epsilon: float
    accuracy_exact_ties: float
    n_pairs: int
    mipsa: dict[str, float]  # tie rule -> MIPSA against Avg. P (median over runs)


def tie_table(panel: Panel, opts: MetricOptions, axes: Sequence[str]) -> list[TieRow]:
    """Tie-calibrated pairwise accuracy against Avg. P beside MIPSA's three tie rules."""
    out: list[TieRow] = []
    for axis in axes:
        sc = Scores(panel, axis, opts)
        if sc.avg_all is None:
            continue
        for j, runs in sc.judge.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                jmean = np.nanmean(runs, axis=0)
                mips = {rule: float(np.nanmedian([mipsa(x, sc.avg_all, panel.pairs, rule) for x in runs]))
                        for rule in TIE_RULES}
            tc = tie_calibrated_accuracy(jmean, sc.avg_all)
            out.append(TieRow(judge=j, axis=axis, accuracy_calibrated=tc.accuracy, epsilon=tc.epsilon,
                              accuracy_exact_ties=tc.accuracy_exact_ties, n_pairs=tc.n_pairs, mipsa=mips))
    return out
