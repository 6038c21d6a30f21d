"""`metaeval power`: how many interactions (and raters) a study needs, from a pilot study.

On the pilot (the humans and two judges of ``metaeval compare``), the paired bootstrap of
``Δ = agreement(A, reference) − agreement(B, reference)`` gives the standard error of the
difference at the pilot's size; it shrinks as ``1 / sqrt(n)``, so the interactions needed for
a two-sided test at level α to detect a true difference δ with a given power follow from the
normal approximation (:func:`mindeval.stats.power.required_n`). The reference is the average
of ``k`` humans for every ``k`` from 1 to the pilot's number (averaged over the subsets of
``k`` humans), so the table also shows what more raters per interaction buy.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Mapping

import numpy as np
from pydantic import BaseModel

from mindeval.errors import MindEvalError
from mindeval.stats.power import power_at, required_n
from mindeval.study_data import StudyRatings

from .comparison import CompareOptions, load_humans, load_judges, resolve_dimensions
from .confidence import Draws
from .matrices import MetricOptions, Panel, Scores
from .rollup import AVERAGE

SIZES = (55, 100, 200, 400, 800)


class PowerRow(BaseModel):
    raters: int  # humans averaged into the reference
    se_pilot: float  # bootstrap SD of Δ at the pilot's size
    observed_delta: float
    required_n: int | None
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
        humans = [r for hs in load_humans(opts.humans, opts, dims, studies) for r in hs.raters]
    if len(js) < 2:
        raise MindEvalError("metaeval power needs two judges in the pilot (--judges A=DIR B=DIR)", field="--judges")
    if not humans:
        raise MindEvalError("metaeval power needs the pilot's human ratings (--humans)", field="--humans")
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
    n_pilot = len(panel.keys)
    rows: list[PowerRow] = []
    names = list(sc.human)
    for k in range(1, len(names) + 1):
        ses, deltas = [], []
        for subset in itertools.combinations(range(len(names)), k):
            ref = sc.mean(sc.all_h[list(subset)])
            d = st.draws(sc.judge[a], ref, metric) - st.draws(sc.judge[b], ref, metric)
            ses.append(float(np.nanstd(d, ddof=1)))
            deltas.append(st.point(sc.judge[a], ref, metric) - st.point(sc.judge[b], ref, metric))
        se = float(np.mean(ses))
        need = required_n(se, n_pilot, delta, opts.alpha_level, power) if se > 0 else None
        rows.append(PowerRow(raters=k, se_pilot=se, observed_delta=float(np.nanmean(deltas)), required_n=need,
                             power={n: power_at(n, se, n_pilot, delta, opts.alpha_level) for n in SIZES}))
    return PowerReport(judges=(a, b), axis=axis, metric=metric, delta=delta, alpha=opts.alpha_level,
                       target_power=power, n_pilot=n_pilot, rows=rows)


def power_lines(rep: PowerReport) -> list[str]:
    head = (f"Power to detect Δ{rep.metric} = {rep.delta:g} between {rep.judges[0]} and {rep.judges[1]} ({rep.axis}, "
            f"two-sided α = {rep.alpha:g}, target power {rep.target_power:g}); pilot: {rep.n_pilot} interactions")
    out = [head, "", "| raters | SE of Δ (pilot) | Δ observed | interactions needed | "
           + " | ".join(f"power n={n}" for n in SIZES) + " |", "|---" * (4 + len(SIZES)) + "|"]
    for r in rep.rows:
        out.append(f"| {r.raters} | {r.se_pilot:.4f} | {r.observed_delta:+.4f} | {r.required_n or '—'} | "
                   + " | ".join(f"{r.power[n]:.2f}" for n in SIZES) + " |")
    return out
