"""Agreement matrices in the paper's layout, for every axis and the average score.

Raters are humans (one score per interaction), judges (one score per interaction and
run) and the average annotator ``Avg. P`` (mean of the humans; against a single human
it leaves that human out). Every pair of raters gets Kendall τ, MIPSA and Krippendorff
α (ordinal and interval) over the interactions both scored. A judge with several runs
gets one value per run, summarised as ``[q1, median, q3]``; two repeated judges are
paired run by run (run i with run i).

A dimension on a categorical scale gets Cohen's κ and Krippendorff's α (nominal) per
pair of raters instead, and Fleiss' κ with nominal α over all humans; there is no
average annotator there (a mean of categories is not a category).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
from pydantic import BaseModel, Field

from mindeval.sessions import member_of
from mindeval.stats import resampled
from mindeval.stats.agreement import (
    MIN_ITEMS,
    AgreementWarning,
    PairIndex,
    quartiles,
)
from mindeval.stats.exact import exact_mean, snap
from mindeval.stats.loo import others_mean

from .rollup import AVERAGE, Dimensions
from .sources import RaterScores
from .statistics import (
    STATISTICS,
    MetricOptions,
    group_statistics_for,
    statistics_for,
    verdict_keys,
)

AVG_LABEL = "Avg. P"
RANGE_QUESTION = "is its agreement at least the lowest human-human agreement?"  # the question :class:`Verdict` answers
Key = tuple[str, str]


class Cell(BaseModel):
    """Agreement of one pair of raters: one value per run (or run pairing) per metric."""

    row: str
    col: str
    values: dict[str, list[float]]
    n_items: list[int]
    notes: list[str] = Field(default_factory=list)
    ci: dict[str, list[float]] = Field(default_factory=dict)  # metric -> [low, high] of the point value
    n_raters: int = 2  # raters behind the cell (Avg. P counts the humans it averages)

    def summary(self, metric: str) -> list[float]:
        """The single value, or ``[q1, median, q3]`` over runs."""
        vals = self.values.get(metric, [])
        if len(vals) == 1:
            return [vals[0]]
        return quartiles(vals)

    def point(self, metric: str) -> float:
        """The single value, or the median over runs."""
        s = self.summary(metric)
        return s[0] if len(s) == 1 else s[1]


class Matrix(BaseModel):
    """All pairwise agreement cells among the raters, for one axis."""

    axis: str
    labels: list[str]
    kinds: dict[str, str]
    runs: dict[str, int]
    n_interactions: int
    options: MetricOptions
    cells: list[Cell]
    group_alpha: dict[str, float] = Field(default_factory=dict)  # categorical: also "fleiss_kappa"
    group_ci: dict[str, list[float]] = Field(default_factory=dict)
    group_n: dict[str, int] = Field(default_factory=dict)  # "interactions" and "raters" behind group_alpha
    categorical: bool = Field(default=False, exclude=True)  # the dimension's scale (JSON: "scale")
    title: str = Field(default="", exclude=True)  # the dimension's name, for reports

    def cell(self, a: str, b: str) -> Cell:
        for c in self.cells:
            if (c.row, c.col) in ((a, b), (b, a)):
                return c
        raise KeyError(f"no cell for {a} and {b}")


class Panel:
    """Scores of all raters on one common, ordered list of interactions."""

    def __init__(self, humans: Sequence[RaterScores], judges: Sequence[RaterScores], exclude: Sequence[str] = ()) -> None:
        self.humans = list(humans)
        self.judges = list(judges)
        excluded = set(exclude)
        keys: dict[Key, None] = {}
        for r in [*self.humans, *self.judges]:
            f = r.frame
            keep = ~f["interaction_id"].astype(str).isin(excluded)
            for k in zip(f.loc[keep, "profile_id"], f.loc[keep, "system"], strict=True):
                keys[k] = None
        self.keys: list[Key] = sorted(keys)
        self.excluded_keys = self._excluded_keys(excluded)
        self.keys = [k for k in self.keys if k not in self.excluded_keys]
        self.pairs = PairIndex([k[0] for k in self.keys])
        self._pos = {k: i for i, k in enumerate(self.keys)}

    def _excluded_keys(self, excluded: set[str]) -> set[Key]:
        out: set[Key] = set()
        for r in [*self.humans, *self.judges]:
            f = r.frame
            hit = f["interaction_id"].astype(str).isin(excluded)
            out.update(zip(f.loc[hit, "profile_id"], f.loc[hit, "system"], strict=True))
        return out

    def resampler(self, opts: MetricOptions) -> resampled.Resampler | None:
        """The panel's one bootstrap draw for ``opts`` (``None`` without resamples); cached."""
        if opts.resamples < 1:
            return None
        key = (opts.resamples, opts.ci, opts.seed)
        cache = self.__dict__.setdefault("_resamplers", {})
        if key not in cache:
            from mindeval.stats.seeding import rng_for

            cache[key] = resampled.Resampler(self.pairs, self.pairs.item_profile, opts.resamples,
                                             rng_for(opts.seed, "metaeval", "bootstrap"), level=opts.ci,
                                             clusters=self.clusters())
        return cache[key]

    def clusters(self) -> resampled.Clusters | None:
        """What the bootstrap draws whole in a multi-session study (a unit ``P#s<k>`` among the keys):
        each member's conversation with a system (all its sessions) and each member (all its sessions
        and systems); ``None`` with one session per member (interactions and profiles are drawn)."""
        members = [member_of(k[0]) for k in self.keys]
        if all(m == k[0] for m, k in zip(members, self.keys, strict=True)):
            return None
        chains = _codes(list(zip(members, (k[1] for k in self.keys), strict=True)))
        member = {int(p): m for p, m in zip(self.pairs.item_profile, members, strict=True)}  # a unit's member
        return resampled.Clusters(chains=chains, members=_codes([member[p] for p in range(self.pairs.n_profiles)]))

    def matrix_of(self, rater: RaterScores, axis: str) -> np.ndarray:
        """``runs × interactions`` scores (NaN where the rater has none)."""
        f = rater.frame[rater.frame["axis"] == axis]
        runs = sorted(f["run"].unique()) or [0]
        out = np.full((len(runs), len(self.keys)), np.nan)
        run_pos = {r: i for i, r in enumerate(runs)}
        pos = [self._pos.get(k, -1) for k in zip(f["profile_id"], f["system"], strict=True)]
        for rp, p, s in zip(f["run"].map(run_pos), pos, f["score"], strict=True):
            if p >= 0:
                out[rp, p] = s
        return out


def _codes(values: Sequence[object]) -> np.ndarray:
    """``0..k-1`` codes of ``values`` in order of first appearance."""
    seen: dict[object, int] = {}
    return np.asarray([seen.setdefault(v, len(seen)) for v in values], dtype=np.int64)


def _nanmean(rows: np.ndarray) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(rows, axis=0)


class _Scorer:
    def __init__(self, panel: Panel, opts: MetricOptions, categorical: bool = False) -> None:
        self.panel = panel
        self.opts = opts
        self.categorical = categorical
        self.boot = panel.resampler(opts)

    def pair(self, x: np.ndarray, y: np.ndarray) -> tuple[dict[str, float], int, list[str]]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", AgreementWarning)
            vals = {st.key: st.point(x, y, self.panel.pairs, self.opts)
                    for st in statistics_for(self.categorical, self.opts)}
        n = int(np.sum(~(np.isnan(x) | np.isnan(y))))
        return vals, n, sorted({str(w.message) for w in caught if issubclass(w.category, AgreementWarning)})

    def resampled_pair(self, x: np.ndarray, y: np.ndarray, metric: str) -> np.ndarray:
        """One metric of ``x`` and ``y`` on every resample of the panel's draw."""
        assert self.boot is not None
        return STATISTICS[metric].on_draw(x, y, self.panel.pairs, self.boot, self.opts)

    def cell(self, row: str, col: str, pairs: list[tuple[np.ndarray, np.ndarray]], n_raters: int = 2) -> Cell:
        values: dict[str, list[float]] = {}
        counts: list[int] = []
        notes: set[str] = set()
        for x, y in pairs:
            vals, n, msgs = self.pair(x, y)
            for m, v in vals.items():
                values.setdefault(m, []).append(v)
            counts.append(n)
            notes.update(msgs)
        ci: dict[str, list[float]] = {}
        if self.boot is not None:
            for m in values:
                draws = resampled.median_over_runs([self.resampled_pair(x, y, m) for x, y in pairs])
                ci[m] = list(self.boot.interval(draws))
        n_cell = int(np.median(counts)) if counts else 0
        if n_cell < MIN_ITEMS:
            msg = (f"agreement figures on {n_cell} shared interactions, below the minimum of {MIN_ITEMS} "
                   "(docs/metaeval.md): unreliable")
            warnings.warn(msg, AgreementWarning, stacklevel=2)
            notes.add(msg)
        return Cell(row=row, col=col, values=values, n_items=counts, notes=sorted(notes), ci=ci, n_raters=n_raters)


class Scores:
    """Every rater's scores on one axis, as the matrices use them (exact or paper arithmetic).

    ``human[label]``: one score per interaction; ``judge[label]``: runs × interactions;
    ``avg_all``: the average annotator over all humans (``None`` with fewer than two humans or
    on a categorical dimension); :meth:`loo` the average of the humans without one.
    """

    def __init__(self, panel: Panel, axis: str, opts: MetricOptions, categorical: bool = False) -> None:
        self.exact = opts.exact
        fix = snap if opts.exact else (lambda m: m)
        self.mean = exact_mean if opts.exact else _nanmean
        self.human = {r.label: fix(panel.matrix_of(r, axis)[0]) for r in panel.humans}
        self.judge = {r.label: fix(panel.matrix_of(r, axis)) for r in panel.judges}
        self.all_h = np.vstack(list(self.human.values())) if self.human else np.empty((0, len(panel.keys)))
        with_avg = len(self.human) >= 2 and not categorical
        self.avg_all = self.mean(self.all_h) if with_avg else None

    def loo(self, label: str) -> np.ndarray:
        """The average annotator without human ``label`` (exact: :func:`mindeval.stats.loo.others_mean`, the
        app's too; paper arithmetic: float means in rater order)."""
        idx = list(self.human).index(label)
        if self.exact:
            return others_mean(self.all_h, idx)
        return self.mean(np.delete(self.all_h, idx, axis=0))


def _run_pairs(a: np.ndarray, b: np.ndarray, note: Callable[[str], None]) -> list[tuple[np.ndarray, np.ndarray]]:
    if len(a) == 1:
        return [(a[0], y) for y in b]
    if len(b) == 1:
        return [(x, b[0]) for x in a]
    if len(a) != len(b):
        note(f"runs paired by index: {min(len(a), len(b))} of {len(a)} and {len(b)} runs used")
    return list(zip(a, b, strict=False))


def build_matrix(
    panel: Panel, axis: str, opts: MetricOptions | None = None, *, categorical: bool = False, title: str = ""
) -> Matrix:
    """The agreement matrix of every rater pair on ``axis`` (``categorical``: a dimension rated in categories)."""
    opts = opts or MetricOptions()
    scorer = _Scorer(panel, opts, categorical)
    sc = Scores(panel, axis, opts, categorical)
    human, judge, all_h, avg_all = sc.human, sc.judge, sc.all_h, sc.avg_all
    labels = [*human, *judge]
    if avg_all is not None:
        labels.append(AVG_LABEL)
    cells: list[Cell] = []
    hl = list(human)
    for i, a in enumerate(hl):
        for b in hl[i + 1:]:
            cells.append(scorer.cell(a, b, [(human[a], human[b])]))
    for j in judge:
        for h in hl:
            cells.append(scorer.cell(j, h, [(x, human[h]) for x in judge[j]]))
    jl = list(judge)
    for i, a in enumerate(jl):
        for b in jl[i + 1:]:
            extra: list[str] = []
            pairs = _run_pairs(judge[a], judge[b], extra.append)
            c = scorer.cell(a, b, pairs)
            c.notes = sorted(set(c.notes) | set(extra))
            cells.append(c)
    if avg_all is not None:
        for h in hl:
            cells.append(scorer.cell(AVG_LABEL, h, [(sc.loo(h), human[h])], n_raters=len(hl)))
        for j in jl:
            cells.append(scorer.cell(j, AVG_LABEL, [(x, avg_all) for x in judge[j]], n_raters=len(hl) + 1))
    group, group_ci, group_n = _group(all_h, axis, opts, categorical, scorer.boot)
    kinds = {**{h: "human" for h in hl}, **{j: "judge" for j in jl}}
    if avg_all is not None:
        kinds[AVG_LABEL] = "average"
    runs = {**{h: 1 for h in hl}, **{j: len(judge[j]) for j in jl}}
    if avg_all is not None:
        runs[AVG_LABEL] = 1
    return Matrix(
        axis=axis, labels=labels, kinds=kinds, runs=runs, n_interactions=len(panel.keys),
        options=opts, cells=cells, group_alpha=group, group_ci=group_ci, group_n=group_n, categorical=categorical,
        title=title,
    )


def _group(all_h: np.ndarray, axis: str, opts: MetricOptions, categorical: bool,
           boot: resampled.Resampler | None) -> tuple[dict[str, float], dict[str, list[float]], dict[str, int]]:
    """All humans together (:data:`metaeval.statistics.GROUP_STATISTICS`): values, intervals, sizes."""
    stats = group_statistics_for(categorical, opts)
    n_raters = all_h.shape[0]
    if n_raters < 2 or not stats:
        return {}, {}, {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AgreementWarning)
        group = {g.key: g.point(all_h) for g in stats}
    group_n = {"interactions": int(((~np.isnan(all_h)).sum(axis=0) >= 2).sum()), "raters": n_raters}
    if categorical:
        group_n["fleiss_interactions"] = int((~np.isnan(all_h).any(axis=0)).sum())
    group_ci = {g.key: list(boot.interval(g.resampled(all_h, boot.items))) for g in stats} if boot is not None else {}
    n_fleiss = group_n.get("fleiss_interactions", group_n["interactions"])
    if n_fleiss < MIN_ITEMS:
        what = "Fleiss' κ" if categorical else "all-humans Krippendorff α"
        warnings.warn(f"{what} ({axis}) on {n_fleiss} interactions × {n_raters} raters, below the minimum of "
                      f"{MIN_ITEMS} interactions (docs/metaeval.md): unreliable", AgreementWarning, stacklevel=3)
    return group, group_ci, group_n


def build_all(
    panel: Panel, opts: MetricOptions | None = None, axes: Sequence[str] | None = None, dims: Dimensions | None = None
) -> dict[str, Matrix]:
    """One matrix per axis of the target (``dims``, MindEval by default) and the average score."""
    dims = dims or Dimensions()
    return {
        ax: build_matrix(panel, ax, opts, categorical=dims.categorical and ax != AVERAGE,
                         title=dims.titles.get(ax, ""))
        for ax in (dims.all_axes if axes is None else axes)
    }


# ------------------------------------------------------------------------- verdicts


class Verdict(BaseModel):
    """Is a judge's agreement with the average human within human-human agreement?"""

    judge: str
    axis: str
    metrics: dict[str, dict[str, float | str]]
    inside: bool

    def line(self, opts: MetricOptions) -> str:
        parts = []
        for m, d in self.metrics.items():
            st = STATISTICS[m]
            name = st.short(opts) + (" vs the humans (median)" if st.scale == "categorical" else f" vs {AVG_LABEL}")
            parts.append(f"{name} {d['value']:.4f} is {d['position']} the human-human range "
                         f"[{d['low']:.4f}, {d['high']:.4f}]")
        word = "YES" if self.inside else "NO"
        return f"range check {self.judge} ({self.axis}): {RANGE_QUESTION} {word}: " + "; ".join(parts)


def verdicts(matrix: Matrix) -> list[Verdict]:
    """One verdict per judge: median agreement with Avg. P against the human-human range.

    A judge passes when, for Kendall τ and for MIPSA, its median agreement with the
    average human is at least the lowest human-human agreement ("inside" or "above"
    the range). On a categorical dimension the judge's Cohen's κ with each human, its
    median over the humans, takes the place of both. Needs at least two humans; NaN
    values fail.
    """
    humans = [lab for lab in matrix.labels if matrix.kinds[lab] == "human"]
    judges = [lab for lab in matrix.labels if matrix.kinds[lab] == "judge"]
    if len(humans) < 2 or (AVG_LABEL not in matrix.labels and not matrix.categorical):
        return []
    out: list[Verdict] = []
    for j in judges:
        metrics: dict[str, dict[str, float | str]] = {}
        ok = True
        for m in verdict_keys(matrix.categorical):
            hh = [matrix.cell(a, b).point(m) for i, a in enumerate(humans) for b in humans[i + 1:]]
            hh = [v for v in hh if not np.isnan(v)]
            if matrix.categorical:
                with_humans = [v for v in (matrix.cell(j, h).point(m) for h in humans) if not np.isnan(v)]
                val = float(np.median(with_humans)) if with_humans else float("nan")
            else:
                val = matrix.cell(j, AVG_LABEL).point(m)
            if not hh or np.isnan(val):
                position, low, high = "not comparable with", float("nan"), float("nan")
                ok = False
            else:
                low, high = min(hh), max(hh)
                position = "below" if val < low else ("above" if val > high else "inside")
                ok &= val >= low
            metrics[m] = {"value": val, "low": low, "high": high, "position": position}
        out.append(Verdict(judge=j, axis=matrix.axis, metrics=metrics, inside=ok))
    return out


def long_table(matrices: dict[str, Matrix]) -> pd.DataFrame:
    """Every cell and metric as one row (the CSV layout)."""
    rows = []
    for ax, m in matrices.items():
        for c in m.cells:
            for metric, vals in c.values.items():
                s = c.summary(metric)
                q = s if len(s) == 3 else [np.nan, s[0], np.nan]
                rows.append({
                    "axis": ax, "rater_a": c.row, "rater_b": c.col, "metric": metric,
                    "variant": STATISTICS[metric].variant(m.options), "n_runs": len(vals),
                    "q1": q[0], "median": q[1], "q3": q[2],
                    "ci_low": c.ci.get(metric, [np.nan, np.nan])[0], "ci_high": c.ci.get(metric, [np.nan, np.nan])[1],
                    "n_interactions": int(np.median(c.n_items)) if c.n_items else 0,
                    "n_raters": c.n_raters,
                })
    return pd.DataFrame(rows)


__all__ = ["AVERAGE", "AVG_LABEL", "Matrix", "MetricOptions", "Panel", "build_all", "build_matrix", "verdicts"]
