"""The Table-4 statistics: means with bootstrap CIs, pairwise tests and clusters.

Works on in-memory score matrices (one row per interaction, one column per criterion)
so it can be benchmarked and tested without run directories.
"""

from __future__ import annotations

import itertools
import math
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ..stats import bootstrap_mean_ci, greedy_clusters, paired_pvalue, rng_for
from .loading import CRITERIA

MIN_RESAMPLES = 2000
MEAN_TOL = 1e-9


class StatsSettings(BaseModel):
    resamples: int = MIN_RESAMPLES
    test: Literal["permutation", "bootstrap"] = "permutation"
    seed: int = 0
    alpha: float = 0.05
    level: float = 0.95


class SystemScores(BaseModel):
    """Per-interaction scores of one system: ``values[i, j]`` = criterion ``j`` on ``profile_ids[i]``."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    label: str
    key: str
    profile_ids: list[str]
    values: np.ndarray


class CriterionResult(BaseModel):
    mean: float
    ci_low: float
    ci_high: float
    cluster: int


class SystemResult(BaseModel):
    label: str
    key: str
    n: int
    rank: int  # by average score (1 = best)
    results: dict[str, CriterionResult]


class PairResult(BaseModel):
    """Paired comparison of ``a`` and ``b`` on one criterion (``mean_diff`` = a - b on shared profiles)."""

    criterion: str
    a: str
    b: str
    n_shared: int
    mean_diff: float
    p_value: float
    significant: bool


class Table(BaseModel):
    settings: StatsSettings
    systems: list[SystemResult]  # sorted by average score, best first
    pairs: list[PairResult] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)

    def pair(self, criterion: str, a: str, b: str) -> PairResult:
        for p in self.pairs:
            if p.criterion == criterion and {p.a, p.b} == {a, b}:
                return p
        raise KeyError((criterion, a, b))


def _shared(x: SystemScores, y: SystemScores) -> tuple[np.ndarray, np.ndarray]:
    pos_y = {p: i for i, p in enumerate(y.profile_ids)}
    ix = [i for i, p in enumerate(x.profile_ids) if p in pos_y]
    iy = [pos_y[x.profile_ids[i]] for i in ix]
    return np.asarray(ix, dtype=np.int64), np.asarray(iy, dtype=np.int64)


def compute_table(systems: list[SystemScores], settings: StatsSettings) -> Table:
    """Means, CIs, all pairwise tests and per-criterion clusters."""
    warnings: list[str] = []
    labels = [s.label for s in systems]
    if len(set(labels)) != len(labels):
        raise ValueError("system labels must be unique")
    k = len(CRITERIA)
    cis: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    for s in systems:
        if s.values.shape != (len(s.profile_ids), k) or len(s.profile_ids) == 0:
            raise ValueError(f"{s.label}: values must be a non-empty (profiles × {k}) matrix")
        rng = rng_for(settings.seed, "ci", s.key)
        cis[s.label] = bootstrap_mean_ci(s.values, resamples=settings.resamples, rng=rng, level=settings.level)

    pairs: list[PairResult] = []
    better: dict[tuple[str, str, str], bool] = {}
    for x, y in itertools.combinations(sorted(systems, key=lambda s: s.key), 2):
        ix, iy = _shared(x, y)
        n = len(ix)
        if n == 0:
            warnings.append(f"{x.label} and {y.label} share no scored profile: their difference is untested")
            diff = np.full(k, np.nan)
            pvals = np.full(k, np.nan)
        else:
            d = x.values[ix] - y.values[iy]
            diff = d.mean(axis=0)
            rng = rng_for(settings.seed, "pair", x.key, y.key)
            pvals = paired_pvalue(d, test=settings.test, resamples=settings.resamples, rng=rng)
        for j, crit in enumerate(CRITERIA):
            sig = bool(np.isfinite(pvals[j]) and pvals[j] < settings.alpha and abs(diff[j]) > MEAN_TOL)
            pairs.append(PairResult(criterion=crit, a=x.label, b=y.label, n_shared=n, mean_diff=float(diff[j]),
                                    p_value=float(pvals[j]), significant=sig))
            better[(crit, x.label, y.label)] = sig and diff[j] > 0
            better[(crit, y.label, x.label)] = sig and diff[j] < 0

    clusters: dict[str, dict[str, int]] = {}
    for j, crit in enumerate(CRITERIA):
        means = {s.label: float(cis[s.label][0][j]) for s in systems}
        clusters[crit] = greedy_clusters(means, lambda m, c, crit=crit: better[(crit, m, c)])

    avg = CRITERIA.index("average")
    order = sorted(systems, key=lambda s: (-float(cis[s.label][0][avg]), s.label))
    results = []
    for rank, s in enumerate(order, start=1):
        mean, low, high = cis[s.label]
        results.append(SystemResult(
            label=s.label, key=s.key, n=len(s.profile_ids), rank=rank,
            results={c: CriterionResult(mean=float(mean[j]), ci_low=float(low[j]), ci_high=float(high[j]),
                                        cluster=clusters[c][s.label]) for j, c in enumerate(CRITERIA)},
        ))
    return Table(settings=settings, systems=results, pairs=pairs, warnings=warnings)


def finite_or_nan(x: float) -> float:
    return x if math.isfinite(x) else float("nan")
