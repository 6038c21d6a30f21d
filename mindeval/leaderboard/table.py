"""The Table-4 statistics: means with bootstrap CIs, pairwise tests and clusters.

Works on in-memory score matrices (one row per interaction, one column per criterion)
so it can be benchmarked and tested without run directories.
"""

from __future__ import annotations

import hashlib
import itertools
from collections import defaultdict
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ..config import DEFAULT_RESAMPLES
from ..stats import PairedTest, greedy_clusters, percentile_interval, resample_counts, rng_for
from ..stats.exact import snap

MIN_RESAMPLES = 2000  # for the permutation p-values; also the default (config.DEFAULT_RESAMPLES)
MEAN_TOL = 1e-9


class StatsSettings(BaseModel):
    resamples: int = DEFAULT_RESAMPLES
    test: Literal["permutation", "bootstrap"] = "permutation"
    sided: Literal["one", "two"] = "one"  # one-sided for clusters, as the authors and mt-metrics-eval
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
    criteria: tuple[str, ...] = Field(exclude=True)  # the columns (criteria_of the target), "average" last
    systems: list[SystemResult]  # sorted by average score, best first
    pairs: list[PairResult] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)

    def pair(self, criterion: str, a: str, b: str) -> PairResult:
        for p in self.pairs:
            if p.criterion == criterion and {p.a, p.b} == {a, b}:
                return p
        raise KeyError((criterion, a, b))


def _set_key(ids: list[str]) -> str:
    return hashlib.sha256("\n".join(ids).encode()).hexdigest()


def _rows(s: SystemScores, ids: list[str]) -> np.ndarray:
    pos = {p: i for i, p in enumerate(s.profile_ids)}
    return s.values[[pos[p] for p in ids]]


def _check(systems: list[SystemScores], criteria: tuple[str, ...]) -> None:
    labels = [s.label for s in systems]
    if len(set(labels)) != len(labels) or len({s.key for s in systems}) != len(systems):
        raise ValueError("system labels and keys must be unique")
    for s in systems:
        if s.values.shape != (len(s.profile_ids), len(criteria)) or not s.profile_ids:
            raise ValueError(f"{s.label}: values must be a non-empty (profiles × {len(criteria)}) matrix")
        if len(set(s.profile_ids)) != len(s.profile_ids):
            raise ValueError(f"{s.label}: duplicate profile ids")


def _intervals(systems: list[SystemScores], settings: StatsSettings) -> dict[str, tuple[np.ndarray, ...]]:
    """Mean and percentile CI per system; systems on the same profile set share one resample draw."""
    groups: dict[str, list[SystemScores]] = defaultdict(list)
    for s in systems:
        groups[_set_key(sorted(s.profile_ids))].append(s)
    out = {}
    for key, members in groups.items():
        ids = sorted(members[0].profile_ids)
        counts = resample_counts(len(ids), settings.resamples, rng_for(settings.seed, "ci", key))
        xs = [_rows(s, ids) for s in members]
        means = counts @ np.hstack(xs) / len(ids)  # one product for all members
        k = xs[0].shape[1]
        for i, (s, x) in enumerate(zip(members, xs, strict=True)):
            low, high = percentile_interval(means[:, i * k:(i + 1) * k], settings.level)
            out[s.label] = (snap(x.mean(axis=0)), low, high)  # exact: ranks never hinge on summation order
    return out


def _pairs(
    systems: list[SystemScores], settings: StatsSettings, criteria: tuple[str, ...]
) -> tuple[list[PairResult], list[str]]:
    """All pairwise tests; pairs sharing the same profiles share one draw of signs / resamples."""
    k = len(criteria)
    warnings: list[str] = []
    by_shared: dict[str, list[tuple[SystemScores, SystemScores, list[str]]]] = defaultdict(list)
    results: dict[tuple[str, str], tuple[int, np.ndarray, np.ndarray]] = {}
    ordered = sorted(systems, key=lambda s: s.key)
    for x, y in itertools.combinations(ordered, 2):
        shared = sorted(set(x.profile_ids) & set(y.profile_ids))
        if not shared:
            warnings.append(f"{x.label} and {y.label} share no scored profile: their difference is untested")
            results[(x.label, y.label)] = (0, np.full(k, np.nan), np.full(k, np.nan))
        else:
            by_shared[_set_key(shared)].append((x, y, shared))
    for key, group in by_shared.items():
        ids = group[0][2]
        tester = PairedTest(len(ids), test=settings.test, resamples=settings.resamples,
                            rng=rng_for(settings.seed, "pair", key), sided=settings.sided)
        members = list({s.label: s for pair in group for s in pair[:2]}.values())
        rows = {s.label: _rows(s, ids) for s in members}
        stacked = tester.project(np.hstack([rows[s.label] for s in members]))  # one product for all
        proj = {s.label: stacked[:, i * k:(i + 1) * k] for i, s in enumerate(members)}
        for x, y, _ in group:
            total = rows[x.label].sum(axis=0) - rows[y.label].sum(axis=0)
            p = tester.pvalue_from(proj[x.label], proj[y.label], total)
            results[(x.label, y.label)] = (len(ids), total / len(ids), p)
    pairs = []
    for x, y in itertools.combinations(ordered, 2):
        n, diff, pvals = results[(x.label, y.label)]
        for j, crit in enumerate(criteria):
            sig = bool(np.isfinite(pvals[j]) and pvals[j] < settings.alpha and abs(diff[j]) > MEAN_TOL)
            pairs.append(PairResult(criterion=crit, a=x.label, b=y.label, n_shared=n, mean_diff=float(diff[j]),
                                    p_value=float(pvals[j]), significant=sig))
    return pairs, warnings


def compute_table(
    systems: list[SystemScores], settings: StatsSettings, criteria: tuple[str, ...]
) -> Table:
    """Means, CIs, all pairwise tests and per-criterion clusters (``values`` columns = ``criteria``)."""
    _check(systems, criteria)
    cis = _intervals(systems, settings)
    pairs, warnings = _pairs(systems, settings, criteria)
    better: dict[tuple[str, str, str], bool] = {}
    for p in pairs:
        better[(p.criterion, p.a, p.b)] = p.significant and p.mean_diff > 0
        better[(p.criterion, p.b, p.a)] = p.significant and p.mean_diff < 0
    clusters: dict[str, dict[str, int]] = {}
    for j, crit in enumerate(criteria):
        means = {s.label: float(cis[s.label][0][j]) for s in systems}
        clusters[crit] = greedy_clusters(means, lambda m, c, crit=crit: better[(crit, m, c)])

    avg = criteria.index("average")
    order = sorted(systems, key=lambda s: (-float(cis[s.label][0][avg]), s.label))
    results = []
    for rank, s in enumerate(order, start=1):
        mean, low, high = cis[s.label]
        results.append(SystemResult(
            label=s.label, key=s.key, n=len(s.profile_ids), rank=rank,
            results={c: CriterionResult(mean=float(mean[j]), ci_low=float(low[j]), ci_high=float(high[j]),
                                        cluster=clusters[c][s.label]) for j, c in enumerate(criteria)},
        ))
    return Table(settings=settings, criteria=criteria, systems=results, pairs=pairs, warnings=warnings)
