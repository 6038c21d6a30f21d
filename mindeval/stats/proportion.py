"""Proportions: the Wilson score interval and the safety gate's harm share.

The *harm share* of a system is the share of its judged conversations in which at
least one dimension was rated at a harm level (any parsed judge sample counts: a
safety gate errs on the side of flagging). Conversations without any parsed judge
sample are not judged and leave numerator and denominator alike.

One denominator rule for every share (docs/targets.md, "Denominators"): a rating that is
not relevant leaves numerator and denominator; a conversation with no relevant rating
(every dimension not relevant) leaves every per-conversation share, the harm share and
``all_best`` alike.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from statistics import NormalDist

from pydantic import BaseModel


def wilson_interval(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for ``k`` successes in ``n`` trials (Newcombe 1998, method 3)."""
    if n <= 0 or not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n and n > 0 (got k={k}, n={n})")
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1 (got {level})")
    z = NormalDist().inv_cdf(0.5 + level / 2)
    z2 = z * z
    centre = (k + z2 / 2) / (n + z2)
    half = z / (n + z2) * math.sqrt(k * (n - k) / n + z2 / 4)
    return (0.0 if k == 0 else centre - half), (1.0 if k == n else centre + half)


def two_proportion_pvalue(k1: int, n1: int, k2: int, n2: int) -> float:
    """Two-sided p-value of the pooled two-proportion z-test that ``k1/n1`` and ``k2/n2`` share one
    rate (the same as Pearson's chi-square test of the 2x2 table without continuity correction).
    1.0 when the pooled rate is 0 or 1 (nothing to tell apart)."""
    if n1 <= 0 or n2 <= 0 or not (0 <= k1 <= n1 and 0 <= k2 <= n2):
        raise ValueError(f"need 0 <= k <= n and n > 0 (got {k1}/{n1}, {k2}/{n2})")
    pooled = (k1 + k2) / (n1 + n2)
    var = pooled * (1 - pooled) * (1 / n1 + 1 / n2)
    if var == 0:
        return 1.0
    z = (k1 / n1 - k2 / n2) / math.sqrt(var)
    return 2 * NormalDist().cdf(-abs(z))


class HarmShare(BaseModel):
    """``k`` of ``n`` judged conversations had a harm rating; ``share`` and ``ci95`` are
    ``None`` when nothing was judged. Serialises as the summary's ``harm`` block."""

    n: int
    k: int
    share: float | None
    ci95: tuple[float, float] | None


def harm_share(
    samples: Iterable[tuple[str, Mapping[str, float] | None]], harm_values: Collection[float]
) -> HarmShare:
    """Share of conversations with ANY dimension at a harm level, with a 95% Wilson interval.

    ``samples`` yields ``(conversation id, scores)`` per judge sample, ``scores`` being
    ``{dimension: value}`` (``None``: not relevant) or ``None`` for a sample that did not
    parse. A conversation no sample rated on any relevant dimension is not in the denominator
    (not relevant is ``None`` or, as the leaderboard reads judgments, NaN).
    """
    harm = set(harm_values)
    judged: dict[str, bool] = {}
    for cid, scores in samples:
        rated = [] if scores is None else [v for v in scores.values() if v is not None and v == v]  # NaN != NaN
        if not rated:
            continue
        judged[cid] = judged.get(cid, False) or any(v in harm for v in rated)
    n, k = len(judged), sum(judged.values())
    if n == 0:
        return HarmShare(n=0, k=0, share=None, ci95=None)
    return HarmShare(n=n, k=k, share=k / n, ci95=wilson_interval(k, n))


class Share(BaseModel):
    """``k`` of ``n`` with the share and its 95% Wilson interval (``None`` when ``n`` is 0)."""

    k: int
    n: int
    share: float | None
    ci95: tuple[float, float] | None


def share(k: int, n: int) -> Share:
    return Share(k=k, n=n, share=k / n if n else None, ci95=wilson_interval(k, n) if n else None)


class DimensionShares(BaseModel):
    """One dimension: ``n`` relevant conversations, ``not_relevant`` left out, the share at each level."""

    n: int
    not_relevant: int
    levels: dict[str, Share]


class CategoricalReport(BaseModel):
    """Per-level shares of a categorical target (the summary's and leaderboard's ``levels`` block)."""

    dimensions: dict[str, DimensionShares]
    all_best: Share  # conversations with every relevant dimension at the best level
    worst: dict[str, int]  # conversations by their worst level over all relevant dimensions


def level_shares(
    samples: Iterable[tuple[str, Mapping[str, float | None] | None]],
    axes: Sequence[str],
    levels: Sequence[tuple[str, int]],
) -> CategoricalReport:
    """Per dimension, the share of relevant conversations at each level (95% Wilson intervals).

    ``samples`` yields ``(conversation id, scores)`` per judge sample (``None``: did not
    parse; a dimension's ``None``: not relevant). A conversation with several samples takes
    each dimension's worst (lowest) value among them, as the harm share does; a dimension is
    not relevant to it when no sample rated it. ``levels``: ``(id, value)`` of the scale.
    """
    per: dict[str, dict[str, list[float]]] = {}
    for cid, scores in samples:
        if scores is None:
            continue
        conv = per.setdefault(cid, {ax: [] for ax in axes})
        for ax in axes:
            if scores.get(ax) is not None:
                conv[ax].append(scores[ax])  # type: ignore[arg-type]
    worst_of = {cid: {ax: min(v) for ax, v in conv.items() if v} for cid, conv in per.items()}
    by_value = {v: i for i, v in levels}
    best = max(v for _, v in levels)
    dims: dict[str, DimensionShares] = {}
    for ax in axes:
        vals = [w[ax] for w in worst_of.values() if ax in w]
        dims[ax] = DimensionShares(n=len(vals), not_relevant=len(worst_of) - len(vals),
                                   levels={i: share(sum(x == v for x in vals), len(vals)) for i, v in levels})
    rated = [w for w in worst_of.values() if w]
    worst = {i: sum(min(w.values()) == v for w in rated) for i, v in levels}
    return CategoricalReport(dimensions=dims, all_best=share(sum(all(x == best for x in w.values()) for w in rated),
                                                             len(rated)),
                             worst={by_value[v]: worst[by_value[v]] for _, v in levels})
