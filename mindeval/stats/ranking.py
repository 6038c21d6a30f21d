"""Agreement between two leaderboards (paper Table 5): the ONE implementation, used by
``mindeval leaderboard --compare-to`` and ``metaeval compare``.

Scores are compared exactly (:func:`mindeval.stats.exact.snap`), so a tie is a tie
whatever order a mean was summed in.

* System-level pairwise accuracy (Kocmi et al., 2021): the share of system pairs that
  both leaderboards order the same way. A pair agrees when the signs of the two score
  differences are equal (-1, 0 or +1), so a tie agrees only with a tie.
* Self-preference of a judge that is also a clinician: on each item (profile) the
  systems are ranked by score in both leaderboards (1 = best; tied scores share the
  average rank); the rank change of that system is ``rank_default - rank_other``
  (positive = it ranks better under the other leaderboard's judge).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping

import numpy as np
from pydantic import BaseModel

from .exact import snap_value


class PairwiseAccuracy(BaseModel):
    accuracy: float  # NaN when fewer than two shared systems
    n_pairs: int
    n_agree: int
    systems: list[str]


class SelfPreference(BaseModel):
    system: str
    mean_rank_delta: float  # NaN when no shared items
    share_improved: float  # share of items where the system ranks strictly better
    n_items: int


def _sign(x: float) -> int:
    return 0 if x == 0 else (1 if x > 0 else -1)


def pairwise_accuracy(a: Mapping[str, float], b: Mapping[str, float]) -> PairwiseAccuracy:
    """Pairwise accuracy over the systems scored (finitely) in both ``a`` and ``b``."""
    shared = sorted(s for s in a if s in b and math.isfinite(a[s]) and math.isfinite(b[s]))
    a = {s: snap_value(a[s]) for s in shared}
    b = {s: snap_value(b[s]) for s in shared}
    agree = total = 0
    for x, y in itertools.combinations(shared, 2):
        total += 1
        agree += _sign(a[x] - a[y]) == _sign(b[x] - b[y])
    acc = agree / total if total else float("nan")
    return PairwiseAccuracy(accuracy=acc, n_pairs=total, n_agree=agree, systems=shared)


def _ranks(scores: Mapping[str, float], systems: list[str]) -> dict[str, float]:
    # Imported here: scipy.stats costs ~2 s to import and most importers of mindeval.stats never rank.
    from scipy.stats import rankdata

    vals = np.array([snap_value(scores[s]) for s in systems], dtype=np.float64)
    return dict(zip(systems, rankdata(-vals, method="average"), strict=True))


def self_preference(
    default: Mapping[str, Mapping[str, float]],
    other: Mapping[str, Mapping[str, float]],
    system: str,
) -> SelfPreference:
    """Rank change of ``system`` per item between two leaderboards.

    ``default`` and ``other`` map system → {item → score}. On each item, only systems
    scored on it in both leaderboards are ranked; items where ``system`` is missing
    or is the only such system are skipped.
    """
    if system not in default or system not in other:
        raise ValueError(f"{system!r} is not in both leaderboards")
    deltas: list[float] = []
    for item in sorted(set(default[system]) & set(other[system])):
        peers = sorted(s for s in default if s in other and item in default[s] and item in other[s])
        if len(peers) < 2:
            continue
        r_def = _ranks({s: default[s][item] for s in peers}, peers)[system]
        r_oth = _ranks({s: other[s][item] for s in peers}, peers)[system]
        deltas.append(float(r_def - r_oth))
    if not deltas:
        return SelfPreference(system=system, mean_rank_delta=float("nan"), share_improved=float("nan"), n_items=0)
    arr = np.array(deltas)
    return SelfPreference(
        system=system,
        mean_rank_delta=float(arr.mean()),
        share_improved=float((arr > 0).mean()),
        n_items=len(deltas),
    )
