"""Scales of rated units: levels with weights, issue flags and points per criterion.

A *rating* is one judged unit of a conversation: a clinician reply under reply-level judging,
or one dimension under conversation-level judging. It has a level (or ``None``: not relevant)
and 0/1 issue flags. A conversation groups its ratings; a profile groups its conversations
(sessions, repeats and patient models of one system). Reported, each with a 95% percentile
bootstrap interval that resamples **profiles** whole (one draw per report, shared by every
quantity, so a headline formula over several of them has a paired interval):

* per level: the share of ratings at it (pooled), the mean over conversations of each one's
  share, the share of conversations whose worst rating is at it, and the *incident* share
  (conversations with at least one rating at it or worse);
* per flag: the same three shares (pooled, mean per conversation, incident);
* with weights: each conversation's mean weight, their mean and nearest-rank 99th percentile;
* with points: each conversation's points met / points possible, and their mean clipped to [0, 1].

**Denominators** (one rule for every share and mean): a rating that is not relevant leaves the
numerator and the denominator of every statistic, flags included; a conversation with no
relevant rating (or no applicable criterion) leaves every per-conversation statistic. Both are
counted (``not_relevant_*``). Levels are ordered best to worst; "at it or worse" follows that order.

Per dimension (``pct_best_practice[DETECT]``): every quantity but ``points_score`` over the ratings
whose unit is that code alone, computed on demand for a formula that reads it, on the report's
own resample counts (so overall and per-dimension figures share one draw).

Inputs are plain records; a record that contradicts the scale (unknown level, missing flag,
a unit rated twice) raises ``ValueError``: nothing is filled in.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
from pydantic import BaseModel, PrivateAttr

from ..formula import Formula, split_name
from .bootstrap import cluster_counts, percentile_interval
from .scale_spec import NATURAL_UNITS, CriterionResult, Rating, ScaleSpec

P99 = 0.99


class Estimate(BaseModel):
    """A statistic and its 95% bootstrap interval (``None`` when nothing was relevant)."""

    value: float | None
    ci95: tuple[float, float] | None


class ScoreEstimate(Estimate):
    """A declared score's estimate; ``why``: the reason its value is undefined (a division by zero)."""

    why: str | None = None


class Shares(BaseModel):
    """One level's or flag's shares (``worst``: levels only)."""

    ratings: Estimate  # share of relevant ratings
    conversations: Estimate  # mean over conversations of each one's share
    incident: Estimate  # conversations with at least one rating at it (levels: or worse)
    worst: Estimate | None = None  # conversations whose worst rating is at this level


class ConversationRow(BaseModel):
    """One conversation's own figures."""

    profile: str
    conversation: str
    ratings: int
    not_relevant: int
    levels: dict[str, int]
    flags: dict[str, int]
    worst: str | None
    mean_weight: float | None
    points: float | None  # points met / points possible (not clipped)


class ScaleReport(BaseModel):
    """Everything reported of a scale for one system."""

    profiles: int
    conversations: int
    ratings: int
    not_relevant_ratings: int
    not_relevant_conversations: int  # with ratings, none relevant
    levels: dict[str, Shares]
    flags: dict[str, Shares]
    mean_weight: Estimate | None
    p99_weight: Estimate | None
    points: Estimate | None  # mean of points met / possible, clipped to [0, 1]
    points_conversations: int
    rows: list[ConversationRow]

    _draws: dict[str, np.ndarray] = PrivateAttr(default_factory=dict)  # quantity -> resampled values
    _level: float = PrivateAttr(default=0.95)
    _table: _Table | None = PrivateAttr(default=None)
    _weights: np.ndarray | None = PrivateAttr(default=None)  # row 0 ones, then the resample counts

    def quantities(self, units: Iterable[str] = ()) -> dict[str, float]:
        """Every reported quantity by the name a headline formula uses (NaN: undefined); with
        ``units``, also each one's per-dimension quantities (``pct_best_practice[DETECT]``)."""
        return {k: float(v[0]) for k, v in self._formula_values(units).items()}

    def score(self, formula: Formula) -> ScoreEstimate:
        """A headline formula's value and its interval over the report's shared resamples (an
        undefined value says why: :meth:`~mindeval.formula.Formula.why_undefined`)."""
        values = self._formula_values(formula.units)
        est = _estimate(formula.evaluate(values), self._level)
        why = None if est.value is not None else formula.why_undefined({k: float(v[0]) for k, v in values.items()})
        return ScoreEstimate(value=est.value, ci95=est.ci95, why=why)

    def _formula_values(self, units: Iterable[str] = ()) -> dict[str, np.ndarray]:
        draws = dict(self._draws)
        if units and self._table is not None and self._weights is not None:
            draws.update(unit_draws(self._table, self._weights, units))
        return formula_units(draws)


def formula_units(draws: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Quantities in a formula's units: ``pct_`` quantities as percentages."""
    return {k: v if split_name(k)[0] in NATURAL_UNITS else 100 * v for k, v in draws.items()}


# ----------------------------------------------------------------------------- tables


class _Table:
    """Per conversation: counts of relevant ratings per level and flag, weights, points."""

    def __init__(self, spec: ScaleSpec, ratings: Iterable[Rating], criteria: Iterable[CriterionResult],
                 index: _Table | None = None) -> None:
        self.spec = spec
        self.ids: dict[str, int] = dict(index.ids) if index else {}  # ``index``: share its conversation columns
        self.profile_of: list[str] = list(index.profile_of) if index else []
        rows = self.rows = list(ratings)
        results = list(criteria)
        for r in [*rows, *results]:
            self._index(r.profile, r.conversation)
        c, nl, nf = len(self.ids), len(spec.levels), len(spec.flags)
        self.rated = np.zeros(c, dtype=bool)  # has any rating
        self.not_relevant = np.zeros(c)
        self.levels = np.zeros((c, nl))
        self.flags = np.zeros((c, nf))
        self.weight = np.zeros(c)
        self._fill_ratings(rows)
        self.achieved, self.possible = np.zeros(c), np.zeros(c)
        self._fill_points(results)

    def _index(self, profile: str, conversation: str) -> int:
        if conversation not in self.ids:
            self.ids[conversation] = len(self.ids)
            self.profile_of.append(profile)
        elif self.profile_of[self.ids[conversation]] != profile:
            raise ValueError(f"conversation {conversation} is given under profiles "
                             f"{self.profile_of[self.ids[conversation]]} and {profile}")
        return self.ids[conversation]

    def _fill_ratings(self, rows: list[Rating]) -> None:
        spec = self.spec
        level_ix = {lv: i for i, lv in enumerate(spec.levels)}
        seen: set[tuple[str, str]] = set()
        for r in rows:
            if (r.conversation, r.unit) in seen:
                raise ValueError(f"unit {r.unit} of conversation {r.conversation} is rated twice")
            seen.add((r.conversation, r.unit))
            i = self.ids[r.conversation]
            self.rated[i] = True
            if r.level is None:
                if any(r.flags.values()):
                    raise ValueError(f"unit {r.unit} of conversation {r.conversation} is not relevant "
                                     "but raises a flag")
                self.not_relevant[i] += 1
                continue
            if r.level not in level_ix:
                raise ValueError(f"'{r.level}' is not a level ({', '.join(spec.levels)})")
            if set(r.flags) != set(spec.flags):
                raise ValueError(f"unit {r.unit} of conversation {r.conversation} gives flags "
                                 f"{sorted(r.flags)}, not the declared {sorted(spec.flags)}")
            self.levels[i, level_ix[r.level]] += 1
            self.flags[i] += [r.flags[f] for f in spec.flags]
            if spec.weights is not None:
                self.weight[i] += spec.weights[r.level]

    def _fill_points(self, results: list[CriterionResult]) -> None:
        points = self.spec.points
        given: dict[str, set[str]] = {}
        for r in results:
            if r.criterion not in points:
                raise ValueError(f"'{r.criterion}' is not a points criterion ({', '.join(points)})")
            have = given.setdefault(r.conversation, set())
            if r.criterion in have:
                raise ValueError(f"criterion {r.criterion} of conversation {r.conversation} is given twice")
            have.add(r.criterion)
            if r.met is None:
                continue
            i = self.ids[r.conversation]
            self.possible[i] += max(points[r.criterion], 0.0)
            self.achieved[i] += points[r.criterion] if r.met else 0.0
        for conv, have in given.items():
            if have != set(points):
                raise ValueError(f"conversation {conv} lacks criterion {sorted(set(points) - have)[0]}")

    def only(self, unit: str) -> _Table:
        """The table of the ratings of one unit (a dimension code), on the same conversation columns
        (so the same resample counts apply); no points criteria (they belong to no dimension)."""
        return _Table(self.spec.model_copy(update={"points": {}}), [r for r in self.rows if r.unit == unit], (),
                      index=self)

    @property
    def n(self) -> np.ndarray:
        return self.levels.sum(axis=1)

    def worst(self) -> np.ndarray:
        """Index of each conversation's worst level (-1: no relevant rating)."""
        present = self.levels > 0
        last = present.shape[1] - 1 - np.argmax(present[:, ::-1], axis=1)
        return np.where(present.any(axis=1), last, -1)


# ----------------------------------------------------------------------------- statistics


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def _per_conv(w: np.ndarray, value: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """Count-weighted mean of ``value`` over the kept conversations, per row of ``w``."""
    return _ratio(w @ np.where(keep, value, 0.0), w @ keep.astype(float))


def nearest_rank(values: np.ndarray, w: np.ndarray, q: float = P99) -> np.ndarray:
    """Per row of counts ``w``, the nearest-rank ``q`` quantile of ``values`` drawn that often:
    the smallest value with at least ``ceil(q * n)`` of the ``n`` drawn at or below it."""
    order = np.argsort(values, kind="stable")
    cum = np.cumsum(w[:, order], axis=1)
    total = cum[:, -1] if cum.shape[1] else np.zeros(w.shape[0])
    rank = np.maximum(np.ceil(q * total - 1e-9), 1.0)
    idx = np.argmax(cum >= rank[:, None], axis=1) if cum.shape[1] else np.zeros(w.shape[0], dtype=int)
    out = values[order][idx] if len(values) else np.full(w.shape[0], np.nan)
    return np.where(total > 0, out, np.nan)


def _estimate(values: np.ndarray, level: float) -> Estimate:
    """Row 0 is the point value, the other rows the resamples."""
    point = float(values[0])
    if math.isnan(point):
        return Estimate(value=None, ci95=None)
    low, high = percentile_interval(values[1:, None], level)
    return Estimate(value=point, ci95=(float(low[0]), float(high[0])))


def _level_draws(t: _Table, w: np.ndarray) -> dict[str, np.ndarray]:
    """Every quantity (shares as fractions) per row of counts ``w``."""
    n, has = t.n, t.n > 0
    worst = t.worst()
    out: dict[str, np.ndarray] = {}
    for j, lv in enumerate(t.spec.levels):
        out[f"pct_{lv}"] = _ratio(w @ t.levels[:, j], w @ n)
        out[f"conv_pct_{lv}"] = _per_conv(w, _ratio(t.levels[:, j], n), has)
        out[f"incident_pct_{lv}"] = _per_conv(w, (worst >= j).astype(float), has)
        out[f"worst_pct_{lv}"] = _per_conv(w, (worst == j).astype(float), has)
    for j, fl in enumerate(t.spec.flags):
        k = t.flags[:, j]
        out[f"pct_flag_{fl}"] = _ratio(w @ k, w @ n)
        out[f"conv_pct_flag_{fl}"] = _per_conv(w, _ratio(k, n), has)
        out[f"incident_pct_flag_{fl}"] = _per_conv(w, (k > 0).astype(float), has)
    if t.spec.weights is not None:
        mean = _ratio(t.weight, n)
        out["mean_weight"] = _per_conv(w, mean, has)
        out["p99_weight"] = nearest_rank(mean[has], w[:, has])
    if t.spec.points:
        applicable = t.possible > 0
        out["points_score"] = np.clip(_per_conv(w, _ratio(t.achieved, t.possible), applicable), 0.0, 1.0)
    return out


def unit_draws(t: _Table, w: np.ndarray, units: Iterable[str]) -> dict[str, np.ndarray]:
    """Every quantity of each unit's ratings alone (``pct_best_practice[DETECT]``), on the same
    resample counts ``w`` as the whole (one draw shared by the overall and per-dimension values)."""
    return {f"{k}[{u}]": v for u in sorted(set(units)) for k, v in _level_draws(t.only(u), w).items()}


def scale_report(spec: ScaleSpec, ratings: Iterable[Rating] = (), criteria: Iterable[CriterionResult] = (), *,
                 resamples: int, rng: np.random.Generator, level: float = 0.95) -> ScaleReport:
    """Every statistic of the module docstring for one system's ratings and criterion results."""
    t = _Table(spec, ratings, criteria)
    profiles = sorted(set(t.profile_of))
    codes = np.array([profiles.index(p) for p in t.profile_of], dtype=np.int64)
    draws = cluster_counts(codes, resamples, rng)[1] if len(codes) else np.zeros((resamples, 0))
    w = np.vstack([np.ones((1, len(codes))), draws])  # row 0: the sample itself
    q = _level_draws(t, w)

    def est(name: str) -> Estimate:
        return _estimate(q[name], level)

    levels = {lv: Shares(ratings=est(f"pct_{lv}"), conversations=est(f"conv_pct_{lv}"),
                         incident=est(f"incident_pct_{lv}"), worst=est(f"worst_pct_{lv}")) for lv in spec.levels}
    flags = {fl: Shares(ratings=est(f"pct_flag_{fl}"), conversations=est(f"conv_pct_flag_{fl}"),
                        incident=est(f"incident_pct_flag_{fl}")) for fl in spec.flags}
    n = t.n
    report = ScaleReport(
        profiles=len(profiles), conversations=int(t.rated.sum()), ratings=int(n.sum() + t.not_relevant.sum()),
        not_relevant_ratings=int(t.not_relevant.sum()), not_relevant_conversations=int((t.rated & (n == 0)).sum()),
        levels=levels, flags=flags,
        mean_weight=est("mean_weight") if spec.weights is not None else None,
        p99_weight=est("p99_weight") if spec.weights is not None else None,
        points=est("points_score") if spec.points else None, points_conversations=int((t.possible > 0).sum()),
        rows=_rows(t))
    report._draws = q
    report._level = level
    report._table, report._weights = t, w
    return report


def _rows(t: _Table) -> list[ConversationRow]:
    spec, n, worst = t.spec, t.n, t.worst()
    out = []
    for conv, i in t.ids.items():
        out.append(ConversationRow(
            profile=t.profile_of[i], conversation=conv, ratings=int(n[i] + t.not_relevant[i]),
            not_relevant=int(t.not_relevant[i]), levels={lv: int(t.levels[i, j]) for j, lv in enumerate(spec.levels)},
            flags={fl: int(t.flags[i, j]) for j, fl in enumerate(spec.flags)},
            worst=spec.levels[worst[i]] if worst[i] >= 0 else None,
            mean_weight=float(t.weight[i] / n[i]) if spec.weights is not None and n[i] else None,
            points=float(t.achieved[i] / t.possible[i]) if t.possible[i] > 0 else None))
    return out


class ScoreTest(BaseModel):
    """A paired test of a headline score between two systems on the profiles both have."""

    n_shared: int  # profiles
    diff: float | None  # score(a) - score(b); None when undefined for either
    p_value: float | None


def paired_score_test(spec: ScaleSpec, formula: Formula, a: Iterable[Rating | CriterionResult],
                      b: Iterable[Rating | CriterionResult], *,
                      resamples: int, rng: np.random.Generator, sided: str = "one",
                      tol: float = 1e-9) -> ScoreTest:
    """Permutation test of ``formula`` between systems ``a`` and ``b`` over their shared profiles:
    each resample swaps, per profile with probability 1/2, the two systems' conversations (a
    profile's conversations stay together). ``sided="one"`` counts resamples at least as far as
    the observed difference in its direction, ``"two"`` in either; p = (1 + hits) / (resamples + 1)."""
    ra, rb = list(a), list(b)
    shared = sorted({r.profile for r in ra} & {r.profile for r in rb})
    keep = set(shared)
    rows = [r.model_copy(update={"conversation": f"a\x00{r.conversation}"}) for r in ra if r.profile in keep]
    rows += [r.model_copy(update={"conversation": f"b\x00{r.conversation}"}) for r in rb if r.profile in keep]
    if not shared:
        return ScoreTest(n_shared=0, diff=None, p_value=None)
    t = _Table(spec, [r for r in rows if isinstance(r, Rating)], [r for r in rows if isinstance(r, CriterionResult)])
    side = np.array([conv.startswith("b\x00") for conv in t.ids], dtype=float)
    codes = np.array([shared.index(p) for p in t.profile_of], dtype=np.int64)
    swap = np.vstack([np.zeros((1, len(shared))), rng.integers(0, 2, size=(resamples, len(shared)))])[:, codes]
    w_a = 1.0 - np.abs(side - swap)  # 1 where the conversation counts for a in this resample (row 0: a's own)
    fa, fb = (np.asarray(formula.evaluate(formula_units({**_level_draws(t, w), **unit_draws(t, w, formula.units)})),
                         dtype=np.float64) for w in (w_a, 1.0 - w_a))
    d = fa - fb
    if not np.isfinite(d[0]):
        return ScoreTest(n_shared=len(shared), diff=None, p_value=None)
    far = np.abs(d[1:]) if sided == "two" else np.where(d[0] < 0, -1.0, 1.0) * d[1:]
    hits = int((far >= abs(d[0]) - tol).sum())  # an undefined resample (NaN) is no hit
    return ScoreTest(n_shared=len(shared), diff=float(d[0]), p_value=(1.0 + hits) / (resamples + 1.0))
