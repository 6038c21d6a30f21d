"""Significance clusters by the greedy rule of Freitag et al. (2023).

Rule, exactly:

1. Sort systems by mean score, best first; equal means are ordered by system name
   (ascending, plain string order).
2. The first system opens cluster 1.
3. Each next system (the *candidate*) joins the current cluster unless **some member
   of the current cluster is significantly better than it**; then it opens a new
   cluster (number + 1), which becomes the current cluster.

"Significantly better" is supplied by the caller (the leaderboard uses: p < α, one-sided
by default or two-sided with ``--sided two``, and the paired mean difference favours the
member). Only the members of the
current cluster are consulted, so significance need not be transitive: with means
A 3.20 > C 3.14 > B 3.00 and only A vs B significant, A and C form cluster 1 and B
opens cluster 2 (A, a member of cluster 1, beats it). Comparing only adjacent
systems would instead have put all three together.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping


def rank_order(means: Mapping[str, float]) -> list[str]:
    """Systems sorted by mean (best first), name breaking ties; NaN means are not allowed."""
    for name, m in means.items():
        if not math.isfinite(m):
            raise ValueError(f"mean of {name!r} is not finite")
    return sorted(means, key=lambda s: (-means[s], s))


def greedy_clusters(
    means: Mapping[str, float], significantly_better: Callable[[str, str], bool]
) -> dict[str, int]:
    """Cluster number (1 = best) for every system; ``significantly_better(m, c)`` is the test."""
    order = rank_order(means)
    clusters: dict[str, int] = {}
    current: list[str] = []
    number = 0
    for cand in order:
        if not current or any(significantly_better(m, cand) for m in current):
            number += 1
            current = []
        current.append(cand)
        clusters[cand] = number
    return clusters
