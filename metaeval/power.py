"""`metaeval power`: how many interactions (and raters) a study needs, from a pilot study.

On the pilot (the humans and two judges of ``metaeval compare``), the standard error of
``Δ = agreement(A, reference) − agreement(B, reference)`` at the pilot's size is its jackknife
standard error (leave one interaction out; one profile for MIPSA, whose intervals resample
profiles): deterministic, so the planning figure does not move with the seed. It shrinks as
``1 / sqrt(n)``, so the interactions needed for a two-sided test at level α to detect a true
difference δ with a given power follow from the normal approximation
(:func:`mindeval.stats.power.required_n`). The reference is the average of ``k`` humans for every
``k`` from 1 to the pilot's number (averaged over the subsets of ``k`` humans), so the table also
shows what more raters per interaction buy.

A pilot is one sample: :data:`PILOT_DRAWS` bootstrap copies of it (the seeded draw of ``compare``,
interactions or whole profiles), each with its own jackknife standard error, give the spread of
the figure over pilots (:data:`PILOT_RANGE`, the 10th to 90th percentile).
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable, Mapping

import numpy as np
from pydantic import BaseModel

from mindeval.errors import MindEvalError
from mindeval.stats import resampled
from mindeval.stats.power import power_at, required_n
from mindeval.study_data import StudyRatings

from .comparison import CompareOptions, load_humans, load_judges, resolve_dimensions
from .confidence import Draws
from .matrices import MetricOptions, Panel, Scores
from .rollup import AVERAGE, Dimensions
from .statistics import STATISTICS

SIZES = (55, 100, 200, 400, 800)
PILOT_DRAWS = 200  # bootstrap copies of the pilot behind the range of the figure
PILOT_RANGE = (10.0, 90.0)  # percentiles of "interactions needed" over those copies


class PowerRow(BaseModel):
    raters: int  # humans averaged into the reference
    se_pilot: float  # bootstrap SD of Δ at the pilot's size
    observed_delta: float
    required_n: int | None
    required_n_range: list[float]  # PILOT_RANGE percentiles over bootstrap copies of the pilot
    power: dict[int, float]  # interactions -> power at delta


class PowerReport(BaseModel):
    judges: tuple[str, str]
    axis: str
    metric: str
    delta: float
    alpha: float
    target_power: float
    n_pilot: int
    rows: list[PowerRow]


def run_power(opts: CompareOptions, *, delta: float = 0.1, power: float = 0.8, axis: str = AVERAGE,
              metric: str = "tau", judges: tuple[str, str] | None = None,
              studies: Mapping[str, StudyRatings] | None = None) -> PowerReport:
    """Interactions needed per number of raters (see the module docstring); ``studies`` as for
    :func:`~metaeval.comparison.run_compare`."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        js = load_judges(opts.judges)
        dims = resolve_dimensions(opts.target, js)
        sources = load_humans(opts.humans, opts, dims, studies)
        humans = [r for hs in sources for r in hs.raters]
        dims = next((hs.dims for hs in sources if hs.dims is not None and hs.dims.titles), dims) or Dimensions()
    if len(js) < 2:
        raise MindEvalError("metaeval power needs two judges in the pilot (--judges A=DIR B=DIR)", field="--judges")
    if not humans:
        raise MindEvalError("metaeval power needs the pilot's human ratings (--humans)", field="--humans")
    if axis not in dims.all_axes:
        raise MindEvalError(f"no axis {axis!r} in target {dims.target} (axes: {', '.join(dims.all_axes)})",
                            field="--axis")
    labels = [j.label for j in js]
    a, b = judges or (labels[0], labels[1])
    for name in (a, b):
        if name not in labels:
            raise MindEvalError(f"no judge {name!r} (judges: {', '.join(labels)})", field="--pair")
    exclude = sorted({i for j in js for i in (j.meta.get("fewshot_interaction_ids") or [])})
    panel = Panel(humans, js, exclude=exclude)
    mopts = MetricOptions(tau_variant=opts.tau_variant, mipsa_ties=opts.mipsa_ties, alpha=False, exact=opts.exact,
                          resamples=max(opts.resamples, 200), ci=opts.ci, seed=opts.seed)
    sc = Scores(panel, axis, mopts)
    st = Draws(panel, mopts)
    stat = STATISTICS[metric]
    pilots = (st.boot.profiles if stat.resample == "profiles" else st.boot.items)[:PILOT_DRAWS]
    n_pilot = len(panel.keys)
    rows: list[PowerRow] = []
    names = list(sc.human)
    for k in range(1, len(names) + 1):
        ses, deltas, spread = [], [], []
        for subset in itertools.combinations(range(len(names)), k):
            ref = sc.mean(sc.all_h[list(subset)])
            def diff(counts: np.ndarray, ref: np.ndarray = ref) -> np.ndarray:
                return _on_counts(sc.judge[a], ref, counts, panel, mopts, metric) - _on_counts(
                    sc.judge[b], ref, counts, panel, mopts, metric)
            ses.append(jackknife_se(diff, np.ones(pilots.shape[1])))
            spread.append([jackknife_se(diff, c) for c in pilots])
            deltas.append(st.point(sc.judge[a], ref, metric) - st.point(sc.judge[b], ref, metric))
        se = float(np.mean(ses))
        need = required_n(se, n_pilot, delta, opts.alpha_level, power) if se > 0 else None
        pilot_se = np.mean(np.array(spread), axis=0)
        needs = [required_n(v, n_pilot, delta, opts.alpha_level, power) for v in pilot_se if v > 0]
        span = [float(x) for x in np.percentile(needs, PILOT_RANGE)] if needs else [float("nan")] * 2
        rows.append(PowerRow(raters=k, se_pilot=se, observed_delta=float(np.nanmean(deltas)), required_n=need,
                             required_n_range=span,
                             power={n: power_at(n, se, n_pilot, delta, opts.alpha_level) for n in SIZES}))
    return PowerReport(judges=(a, b), axis=axis, metric=metric, delta=delta, alpha=opts.alpha_level,
                       target_power=power, n_pilot=n_pilot, rows=rows)


def _on_counts(xs: np.ndarray, y: np.ndarray, counts: np.ndarray, panel: Panel, opts: MetricOptions,
               metric: str) -> np.ndarray:
    """``metric`` of a judge's runs ``xs`` with ``y`` on every row of ``counts`` (median over runs)."""
    st = STATISTICS[metric]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return resampled.median_over_runs([st.resampled(x, y, panel.pairs, counts, opts) for x in np.atleast_2d(xs)])


def jackknife_se(stat: Callable[[np.ndarray], np.ndarray], base: np.ndarray) -> float:
    """Jackknife standard error of ``stat`` (a function of a counts matrix) on the sample ``base``
    (counts per unit; a unit drawn c times is c copies, each left out in turn)."""
    units = np.flatnonzero(base > 0)
    rows = np.repeat(base[None, :], len(units), axis=0)
    rows[np.arange(len(units)), units] -= 1
    theta = stat(rows)
    w = base[units]
    ok = np.isfinite(theta)
    if ok.sum() < 2:
        return float("nan")
    w, theta = w[ok], theta[ok]
    big_n = w.sum()
    mean = (w @ theta) / big_n
    return float(np.sqrt((big_n - 1) / big_n * (w @ (theta - mean) ** 2)))


def power_lines(rep: PowerReport) -> list[str]:
    head = (f"Power to detect Δ{rep.metric} = {rep.delta:g} between {rep.judges[0]} and {rep.judges[1]} ({rep.axis}, "
            f"two-sided α = {rep.alpha:g}, target power {rep.target_power:g}); pilot: {rep.n_pilot} interactions")
    low, high = (f"{p:g}" for p in PILOT_RANGE)
    out = [head, f"(SE: jackknife over the pilot; [..]: {low}th-{high}th percentile over {PILOT_DRAWS} bootstrap "
           "copies of the pilot)", "",
           "| raters | SE of Δ (pilot) | Δ observed | interactions needed [over pilots] | "
           + " | ".join(f"power n={n}" for n in SIZES) + " |", "|---" * (4 + len(SIZES)) + "|"]
    for r in rep.rows:
        span = " [" + ", ".join(f"{v:.0f}" for v in r.required_n_range) + "]" if r.required_n else ""
        out.append(f"| {r.raters} | {r.se_pilot:.4f} | {r.observed_delta:+.4f} | {r.required_n or '—'}{span} | "
                   + " | ".join(f"{r.power[n]:.2f}" for n in SIZES) + " |")
    return out
