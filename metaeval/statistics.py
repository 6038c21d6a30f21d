"""The registry of agreement statistics: one entry per statistic, everything metaeval needs of it.

An entry (:class:`Statistic`) holds the point function, its resampled twin and which draw it
resamples (its interval rule: interactions, or whole profiles), its labels, the scale it applies
to, whether verdicts and judge tests use it, and its heatmap style. The matrices, verdicts,
judge-vs-judge tests, power analysis, CSV/JSON/Markdown reports and heatmaps all read this table,
so a new statistic is one entry here (and, to show it in its own matrix, one :class:`Layout`).
The functions themselves live with the other pure statistics in :mod:`mindeval.stats.agreement`
and :mod:`mindeval.stats.resampled`.

Group statistics (all humans together: Krippendorff's α, Fleiss' κ) are :class:`GroupStatistic`
entries in :data:`GROUP_STATISTICS`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel

from mindeval.stats import agreement, resampled
from mindeval.stats.agreement import IccForm, PairIndex, TauVariant, TieRule

Scale = Literal["ordinal", "categorical"]


class MetricOptions(BaseModel):
    """Which variants the matrices use (recorded in every output)."""

    tau_variant: TauVariant = "b"
    mipsa_ties: TieRule = "sign"
    alpha: bool = True
    # Scores and the average annotator as exact rationals (mindeval.stats.exact), so ties and
    # τ do not depend on the order raters are averaged in. False = plain float means in rater
    # order, the arithmetic of the published tables (--paper-compatible).
    exact: bool = True
    # Bootstrap intervals: 0 resamples = point values only. Interactions are resampled for τ,
    # α and κ, whole profiles for MIPSA; one seeded draw for every cell (mindeval.stats.resampled).
    resamples: int = 0
    ci: float = 0.95
    seed: int = 0


@dataclass(frozen=True)
class Heatmap:
    """Colour scale of a statistic's heatmap triangle."""

    cmap: str
    vmin: float
    vmax: float
    title: str  # the colour bar's label


@dataclass(frozen=True)
class Statistic:
    """One agreement statistic of a pair of raters (score vectors aligned on the same interactions)."""

    key: str  # the name in JSON, CSV and the Python API ("tau")
    label: Callable[[MetricOptions], str]  # in captions: "Kendall τ-b"
    short: Callable[[MetricOptions], str]  # in verdict lines: "τ-b"
    variant: Callable[[MetricOptions], str]  # CSV 'variant' column: "kendall tau-b"
    scale: Scale  # the dimensions it is computed on
    point: Callable[[np.ndarray, np.ndarray, PairIndex, MetricOptions], float]
    resampled: Callable[[np.ndarray, np.ndarray, PairIndex, np.ndarray, MetricOptions], np.ndarray]
    resample: Literal["items", "profiles"]  # interval rule: which counts of the draw ``resampled`` takes
    heatmap: Heatmap
    optional: bool = False  # left out with --no-alpha (MetricOptions.alpha False)
    verdict: bool = False  # used by verdicts, judge-vs-judge tests and power
    margin: float = 1.0  # share of the non-inferiority margin (τ units) that applies to it

    def on_draw(self, x: np.ndarray, y: np.ndarray, pairs: PairIndex, boot: Any, opts: MetricOptions) -> np.ndarray:
        """The statistic on every resample of ``boot`` (a :class:`mindeval.stats.resampled.Resampler`)."""
        counts = boot.profiles if self.resample == "profiles" else boot.items
        return self.resampled(x, y, pairs, counts, opts)


def _alpha(level: str, scale: Scale) -> Statistic:
    """Krippendorff's α of the two raters at ``level``."""
    return Statistic(
        key=f"alpha_{level}", label=lambda o: f"Krippendorff α ({level})", short=lambda o: f"α {level}",
        variant=lambda o: f"krippendorff alpha {level}", scale=scale,
        point=lambda x, y, p, o: agreement.krippendorff_alpha(np.vstack([x, y]), level),
        resampled=lambda x, y, p, c, o: resampled.krippendorff_alpha(np.vstack([x, y]), level, c),
        resample="items", optional=True,
        heatmap=Heatmap("PuOr", -1.0, 1.0, "Krippendorff α" if scale == "ordinal" else "Krippendorff α (nominal)"),
    )


def _icc(form: IccForm, key: str, name: str) -> Statistic:
    """Intraclass correlation of the two raters (two-way random effects, absolute agreement)."""
    return Statistic(
        key=key, label=lambda o: name, short=lambda o: name, variant=lambda o: f"{name} two-way random absolute",
        scale="ordinal", point=lambda x, y, p, o: agreement.icc(np.vstack([x, y]), form),
        resampled=lambda x, y, p, c, o: resampled.icc(np.vstack([x, y]), c, form),
        resample="items", heatmap=Heatmap("RdBu", -1.0, 1.0, "ICC (two-way random)"),
    )


# In output order (a matrix cell's values and the CSV rows follow it).
STATISTICS: dict[str, Statistic] = {s.key: s for s in (
    Statistic(
        key="tau", label=lambda o: f"Kendall τ-{o.tau_variant}", short=lambda o: f"τ-{o.tau_variant}",
        variant=lambda o: f"kendall tau-{o.tau_variant}", scale="ordinal",
        point=lambda x, y, p, o: agreement.kendall_tau(x, y, o.tau_variant),
        resampled=lambda x, y, p, c, o: resampled.kendall_tau(x, y, c, o.tau_variant),
        resample="items", heatmap=Heatmap("RdBu", -1.0, 1.0, "Kendall τ"), verdict=True,
    ),
    Statistic(
        key="mipsa", label=lambda o: f"MIPSA (ties={o.mipsa_ties})", short=lambda o: "MIPSA",
        variant=lambda o: f"ties={o.mipsa_ties}", scale="ordinal",
        point=lambda x, y, p, o: agreement.mipsa(x, y, p, o.mipsa_ties),
        resampled=lambda x, y, p, c, o: resampled.mipsa(x, y, p, c, o.mipsa_ties),
        resample="profiles", heatmap=Heatmap("Greens", 0.0, 1.0, "MIPSA"), verdict=True,
        margin=0.5,  # its scale is (τ + 1) / 2
    ),
    _alpha("ordinal", "ordinal"),
    _alpha("interval", "ordinal"),
    _icc("single", "icc2_1", "ICC(2,1)"),
    _icc("average", "icc2_k", "ICC(2,k)"),
    Statistic(
        key="spearman", label=lambda o: "Spearman ρ", short=lambda o: "ρ", variant=lambda o: "spearman rho",
        scale="ordinal", point=lambda x, y, p, o: agreement.spearman(x, y),
        resampled=lambda x, y, p, c, o: resampled.spearman(x, y, c),
        resample="items", heatmap=Heatmap("RdBu", -1.0, 1.0, "Spearman ρ"),
    ),
    Statistic(
        key="kappa", label=lambda o: "Cohen's κ", short=lambda o: "Cohen's κ", variant=lambda o: "cohen kappa",
        scale="categorical", point=lambda x, y, p, o: agreement.cohen_kappa(x, y),
        resampled=lambda x, y, p, c, o: resampled.cohen_kappa(x, y, c),
        resample="items", heatmap=Heatmap("RdBu", -1.0, 1.0, "Cohen's κ"), verdict=True,
    ),
    _alpha("nominal", "categorical"),
)}


def statistics_for(categorical: bool, opts: MetricOptions, *, verdict: bool = False) -> list[Statistic]:
    """The statistics computed on a dimension of this scale (``verdict``: only those verdicts use)."""
    scale = "categorical" if categorical else "ordinal"
    return [s for s in STATISTICS.values() if s.scale == scale and (opts.alpha or not s.optional)
            and (s.verdict or not verdict)]


def verdict_keys(categorical: bool = False) -> list[str]:
    """Keys of the statistics verdicts, judge-vs-judge tests and power use on this scale."""
    scale = "categorical" if categorical else "ordinal"
    return [s.key for s in STATISTICS.values() if s.scale == scale and s.verdict]


# ------------------------------------------------------------------------- group statistics


@dataclass(frozen=True)
class GroupStatistic:
    """Agreement of all humans together, from their raters × interactions matrix."""

    key: str  # the key in Matrix.group_alpha
    header: str  # its column in the report's all-humans table
    scale: Scale
    point: Callable[[np.ndarray], float]
    resampled: Callable[[np.ndarray, np.ndarray], np.ndarray]  # (matrix, interaction counts)
    optional: bool = True  # left out with --no-alpha


GROUP_STATISTICS: dict[str, GroupStatistic] = {g.key: g for g in (
    GroupStatistic("fleiss_kappa", "Fleiss κ", "categorical", agreement.fleiss_kappa, resampled.fleiss_kappa,
                   optional=False),
    GroupStatistic("nominal", "α nominal", "categorical", lambda m: agreement.krippendorff_alpha(m, "nominal"),
                   lambda m, c: resampled.krippendorff_alpha(m, "nominal", c)),
    GroupStatistic("ordinal", "ordinal", "ordinal", lambda m: agreement.krippendorff_alpha(m, "ordinal"),
                   lambda m, c: resampled.krippendorff_alpha(m, "ordinal", c)),
    GroupStatistic("interval", "interval", "ordinal", lambda m: agreement.krippendorff_alpha(m, "interval"),
                   lambda m, c: resampled.krippendorff_alpha(m, "interval", c)),
    GroupStatistic("icc2_1", "ICC(2,1)", "ordinal", lambda m: agreement.icc(m, "single"),
                   lambda m, c: resampled.icc(m, c, "single"), optional=False),
    GroupStatistic("icc2_k", "ICC(2,k)", "ordinal", lambda m: agreement.icc(m, "average"),
                   lambda m, c: resampled.icc(m, c, "average"), optional=False),
)}


def group_statistics_for(categorical: bool, opts: MetricOptions) -> list[GroupStatistic]:
    scale = "categorical" if categorical else "ordinal"
    return [g for g in GROUP_STATISTICS.values() if g.scale == scale and (opts.alpha or not g.optional)]


# --------------------------------------------------------------------------------- layouts


@dataclass(frozen=True)
class Layout:
    """One matrix display: a statistic below the diagonal, one above (Markdown and heatmaps)."""

    key: str
    lower: str
    upper: str
    heading: str  # the report section of these matrices
    caption: Callable[[MetricOptions], str] | None = None  # default: "LOWER below the diagonal, UPPER above"
    group_intro: str | None = None  # the all-humans table follows these matrices, with this intro

    @property
    def scale(self) -> Scale:
        return STATISTICS[self.lower].scale

    @property
    def optional(self) -> bool:
        return STATISTICS[self.lower].optional and STATISTICS[self.upper].optional

    def describe(self, opts: MetricOptions) -> str:
        if self.caption is not None:
            return self.caption(opts)
        return f"{STATISTICS[self.lower].label(opts)} below the diagonal, {STATISTICS[self.upper].label(opts)} above"


# In report order; the first layout of a scale is how its matrices are shown first.
LAYOUTS: dict[str, Layout] = {lay.key: lay for lay in (
    Layout("kappa", "kappa", "alpha_nominal", "Categorical dimensions: Cohen's κ and Krippendorff α (nominal)",
           group_intro="All humans together (Fleiss' κ on the interactions every human rated; Krippendorff α):"),
    Layout("tau_mipsa", "tau", "mipsa", "Kendall τ and MIPSA"),
    Layout("alpha", "alpha_ordinal", "alpha_interval", "Krippendorff α",
           caption=lambda o: "Krippendorff α: ordinal below the diagonal, interval above",
           group_intro="All humans together (Krippendorff α; ICC on the interactions every human rated):"),
    Layout("icc", "icc2_1", "icc2_k", "Intraclass correlation (ICC)",
           caption=lambda o: "ICC, two-way random effects, absolute agreement: single rater ICC(2,1) below the "
           "diagonal, mean of the pair ICC(2,k) above"),
    Layout("spearman", "spearman", "spearman", "Spearman ρ",
           caption=lambda o: "Spearman ρ in both triangles"),
)}


def layouts_for(categorical: bool, opts: MetricOptions) -> list[Layout]:
    """The layouts a matrix of this scale is shown in (the first is its main one)."""
    scale = "categorical" if categorical else "ordinal"
    return [lay for lay in LAYOUTS.values() if lay.scale == scale and (opts.alpha or not lay.optional)]
