"""Exact means: ties and rank agreement do not depend on summation order; one implementation
of pairwise accuracy and self-preference for the leaderboard and metaeval."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from mindeval.stats.exact import exact_mean, snap
from mindeval.stats.ranking import pairwise_accuracy, self_preference


def test_snap_makes_order_independent_means_equal():
    vals = [0.1, 0.2, 0.7, 3.25, 4.6]
    sums = {sum(p) / 5 for p in itertools.permutations(vals)}
    assert len(sums) > 1  # float summation order shows in the last bits
    assert len({float(snap([s])[0]) for s in sums}) == 1
    rows = np.array([[1.0, 2.0, np.nan], [2.0, np.nan, np.nan], [4.0, 3.0, np.nan]])
    got = exact_mean(rows, axis=0)
    assert got[0] == pytest.approx(7 / 3) and got[1] == 2.5 and np.isnan(got[2])
    assert exact_mean(rows[::-1], axis=0)[0] == got[0]


def test_near_ties_are_ties_in_both_implementations():
    from mindeval.stats.agreement import pairwise_accuracy as meta_pairwise_accuracy

    a = {"s1": 0.1 + 0.2, "s2": 0.3, "s3": 0.5}  # s1 and s2 tie exactly (0.30000000000000004 vs 0.3)
    b = {"s1": 0.3, "s2": 0.3, "s3": 0.1}
    lb = pairwise_accuracy(a, b)
    assert (lb.n_agree, lb.n_pairs) == (1, 3)  # the tie agrees with the tie; s3 flips against both
    keys = sorted(a)
    assert meta_pairwise_accuracy([a[k] for k in keys], [b[k] for k in keys]) == pytest.approx(lb.accuracy)


def test_self_preference_one_implementation():
    from metaeval.selfpref import self_preference as meta_self_preference

    systems = ["judge-model", "other", "third"]
    profiles = [f"p{i}" for i in range(4)]
    keys = sorted((p, s) for p in profiles for s in systems)
    rng = np.random.default_rng(3)
    ref = np.round(rng.uniform(1, 6, len(keys)) * 4) / 4
    judge = ref.copy()
    for i, (_p, s) in enumerate(keys):
        if s == "judge-model":
            judge[i] += 1.0
    judge[0] = 0.1 + 0.2  # a near tie must count as the tie it is
    ref[0] = 0.3

    class _P:  # a Panel stand-in: self_preference reads only its keys
        pass

    panel = _P()
    panel.keys = keys
    meta = meta_self_preference(panel, judge, ref, "judge-model")  # type: ignore[arg-type]
    by_ref = {s: {p: float(ref[i]) for i, (p, s2) in enumerate(keys) if s2 == s} for s in systems}
    by_judge = {s: {p: float(judge[i]) for i, (p, s2) in enumerate(keys) if s2 == s} for s in systems}
    lb = self_preference(by_ref, by_judge, "judge-model")
    assert meta.avg_rank_delta == lb.mean_rank_delta and meta.n_profiles == lb.n_items == 4
    assert meta.pct_rank_improvements == 100 * lb.share_improved
