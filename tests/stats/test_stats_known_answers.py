"""Known-answer tests of mindeval.stats: tests, CIs, clusters, pairwise accuracy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mindeval.stats import (
    PairedTest,
    bootstrap_mean_ci,
    greedy_clusters,
    paired_bootstrap_pvalue,
    paired_permutation_pvalue,
    pairwise_accuracy,
    rng_for,
    self_preference,
)

R = 2000
TESTS = [paired_permutation_pvalue, paired_bootstrap_pvalue]


@pytest.mark.parametrize("test", TESTS)
def test_identical_systems_get_p_equal_one(test):
    scores = np.random.default_rng(1).integers(1, 7, size=(50, 6)).astype(float)
    p = test(scores - scores, resamples=R, rng=rng_for(0, "x"))
    assert p.tolist() == [1.0] * 6


@pytest.mark.parametrize("test", TESTS)
def test_ties_count_as_extreme_with_float_averages(test):
    # Differences that are multiples of 0.2 (averages of five integer scores) sum to
    # exactly zero in real arithmetic but not in binary floating point.
    d = np.array([0.2, 0.4, -0.6, 0.2, -0.2] * 6)
    assert abs(d.sum()) > 0  # floating-point residue the tie tolerance must absorb
    assert test(d, resamples=R, rng=rng_for(0, "x"))[0] == pytest.approx(1.0, abs=0.02)


@pytest.mark.parametrize("test", TESTS)
def test_clear_separation_is_significant(test):
    rng = np.random.default_rng(2)
    b = rng.integers(1, 5, size=50).astype(float)
    a = b + rng.integers(1, 3, size=50)  # a beats b on every profile by 1 or 2
    p = test(a - b, resamples=R, rng=rng_for(0, "x"))[0]
    assert p < 0.001
    assert p >= 1 / (R + 1)  # a Monte Carlo p-value is never zero


def test_small_n_permutation_is_exact():
    # n = 3, 2**3 = 8 <= R sign vectors: enumerated; only all-plus and all-minus reach |sum| = 3.
    p = paired_permutation_pvalue(np.array([1.0, 1.0, 1.0]), resamples=R, rng=rng_for(0, "x"))
    assert p[0] == pytest.approx(2 / 8)


def test_pvalues_are_symmetric_and_seeded():
    rng = np.random.default_rng(3)
    d = rng.integers(-2, 3, size=(40, 6)).astype(float)
    p1 = paired_permutation_pvalue(d, resamples=R, rng=rng_for(7, "a", "b"))
    p2 = paired_permutation_pvalue(-d, resamples=R, rng=rng_for(7, "a", "b"))
    p3 = paired_permutation_pvalue(d, resamples=R, rng=rng_for(8, "a", "b"))
    assert np.array_equal(p1, p2)
    assert not np.array_equal(p1, p3)


@pytest.mark.parametrize("test", TESTS)
def test_type_one_error_is_controlled_under_the_null(test):
    rng = np.random.default_rng(4)
    rejections = 0
    sims = 300
    for i in range(sims):
        a = rng.integers(1, 7, size=40).astype(float)
        b = rng.integers(1, 7, size=40).astype(float)
        rejections += test(a - b, resamples=R, rng=rng_for(i, "null"))[0] < 0.05
    # 0.05 nominal; binomial sd with 300 sims is 0.0126
    assert rejections / sims <= 0.09


def test_empty_sample_gives_nan_with_warning():
    with pytest.warns(RuntimeWarning):
        p = paired_permutation_pvalue(np.zeros((0, 6)), resamples=R, rng=rng_for(0))
    assert np.isnan(p).all()
    with pytest.warns(RuntimeWarning):
        mean, low, high = bootstrap_mean_ci(np.zeros((0, 2)), resamples=R, rng=rng_for(0))
    assert np.isnan(mean).all() and np.isnan(low).all()


def test_non_transitive_case_clusters_as_documented():
    means = {"A": 3.20, "C": 3.14, "B": 3.00}
    significant = {("A", "B")}
    clusters = greedy_clusters(means, lambda m, c: (m, c) in significant)
    assert clusters == {"A": 1, "C": 1, "B": 2}


def test_clusters_break_mean_ties_by_name_and_reopen_only_on_current_cluster():
    means = {"z": 4.0, "a": 4.0, "m": 3.0, "q": 2.0}
    # a (first by name among the tie) beats m; nobody in {m} beats q, although a does.
    sig = {("a", "m"), ("a", "q")}
    clusters = greedy_clusters(means, lambda x, y: (x, y) in sig)
    assert clusters == {"a": 1, "z": 1, "m": 2, "q": 2}


def test_bootstrap_ci_is_seeded_and_brackets_the_mean():
    x = np.random.default_rng(5).integers(1, 7, size=(50, 6)).astype(float)
    m1, lo1, hi1 = bootstrap_mean_ci(x, resamples=R, rng=rng_for(0, "s"))
    m2, lo2, hi2 = bootstrap_mean_ci(x, resamples=R, rng=rng_for(0, "s"))
    _, lo3, _ = bootstrap_mean_ci(x, resamples=R, rng=rng_for(1, "s"))
    assert np.array_equal(lo1, lo2) and np.array_equal(hi1, hi2)
    assert not np.array_equal(lo1, lo3)
    assert np.all(lo1 < m1) and np.all(m1 < hi1)
    np.testing.assert_allclose(m1, x.mean(axis=0))


@settings(max_examples=6, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(
    weights=st.lists(st.floats(min_value=0.2, max_value=1.0), min_size=6, max_size=6),
    n=st.integers(min_value=40, max_value=80),
)
def test_bootstrap_ci_covers_the_true_mean_about_95_percent(weights, n):
    probs = np.array(weights) / sum(weights)
    true_mean = float(np.dot(np.arange(1, 7), probs))
    rng = rng_for(n, repr(weights))
    sims = 400
    data = rng.choice(np.arange(1, 7), p=probs, size=(sims, n)).astype(float)
    covered = 0
    for i in range(sims):
        _, lo, hi = bootstrap_mean_ci(data[i], resamples=R, rng=rng_for(i, "coverage"))
        covered += lo[0] <= true_mean <= hi[0]
    # Percentile intervals for a mean with n >= 40 cover close to 95%; sd of the
    # estimate with 400 simulations is about 0.011.
    assert 0.91 <= covered / sims <= 0.985


def test_pairwise_accuracy_matches_table5_arithmetic():
    systems = [f"s{i:02d}" for i in range(12)]
    a = {s: float(12 - i) for i, s in enumerate(systems)}
    b = dict(a)
    # three adjacent swaps -> 3 discordant pairs of 66
    for x, y in [("s00", "s01"), ("s04", "s05"), ("s08", "s09")]:
        b[x], b[y] = b[y], b[x]
    res = pairwise_accuracy(a, b)
    assert (res.n_agree, res.n_pairs) == (63, 66)
    assert res.accuracy == pytest.approx(63 / 66)


def test_pairwise_accuracy_ties_agree_only_with_ties():
    assert pairwise_accuracy({"x": 1.0, "y": 1.0}, {"x": 1.0, "y": 1.0}).accuracy == 1.0
    assert pairwise_accuracy({"x": 1.0, "y": 1.0}, {"x": 2.0, "y": 1.0}).accuracy == 0.0
    assert np.isnan(pairwise_accuracy({"x": 1.0}, {"x": 2.0, "y": 1.0}).accuracy)


def test_self_preference_counts_rank_changes_per_item():
    default = {"judge": {"p1": 1.0, "p2": 3.0}, "o": {"p1": 2.0, "p2": 2.0}}
    other = {"judge": {"p1": 3.0, "p2": 3.0}, "o": {"p1": 2.0, "p2": 2.0}}
    sp = self_preference(default, other, "judge")
    # p1: rank 2 -> 1 (+1); p2: rank 1 -> 1 (0)
    assert sp.mean_rank_delta == pytest.approx(0.5)
    assert sp.share_improved == pytest.approx(0.5)
    assert sp.n_items == 2


@pytest.mark.parametrize("test", ["permutation", "bootstrap"])
def test_shared_draw_projection_equals_direct_test(test):
    rng = np.random.default_rng(6)
    a = rng.integers(1, 7, size=(30, 6)).astype(float)
    b = rng.integers(1, 7, size=(30, 6)).astype(float)
    tester = PairedTest(30, test=test, resamples=R, rng=rng_for(0, "shared"))
    via_projection = tester.pvalue_from(tester.project(a), tester.project(b), (a - b).sum(axis=0))
    np.testing.assert_array_equal(via_projection, tester.pvalue(a - b))
