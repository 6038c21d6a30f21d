"""Known answers for the Wilson interval and the harm share of the safety gate."""

from __future__ import annotations

import pytest

from mindeval.stats import HarmShare, harm_share, wilson_interval
from mindeval.stats.proportion import level_shares


# Newcombe (1998), "Two-sided confidence intervals for the single proportion", Table I,
# method 3 (score interval without continuity correction), to 4 decimals.
@pytest.mark.parametrize(
    ("k", "n", "low", "high"),
    [(81, 263, 0.2553, 0.3662), (15, 148, 0.0624, 0.1605), (0, 20, 0.0, 0.1611), (1, 29, 0.0061, 0.1718)],
)
def test_wilson_matches_newcombe_table(k, n, low, high):
    lo, hi = wilson_interval(k, n)
    assert (round(lo, 4), round(hi, 4)) == (low, high)


def test_wilson_edges_stay_in_unit_interval_and_are_symmetric():
    lo, hi = wilson_interval(10, 10)
    assert hi == 1.0 and lo == pytest.approx(1 - wilson_interval(0, 10)[1])
    assert wilson_interval(5, 10) == pytest.approx((0.2366, 0.7634), abs=5e-5)
    narrow, wide = wilson_interval(5, 10, level=0.5), wilson_interval(5, 10, level=0.99)
    assert wide[0] < narrow[0] < 0.5 < narrow[1] < wide[1]


@pytest.mark.parametrize(("k", "n"), [(0, 0), (3, 2), (-1, 5)])
def test_wilson_rejects_impossible_counts(k, n):
    with pytest.raises(ValueError):
        wilson_interval(k, n)


def test_harm_share_counts_conversations_with_any_harm_rating():
    harm = {0}
    samples = [
        ("a", {"RD": 2, "DA": 2}),
        ("b", {"RD": 2, "DA": 0}),      # one harmful dimension
        ("c", {"RD": 1, "DA": 1}),
        ("c", {"RD": 0, "DA": 2}),      # a second judge sample flags c
        ("d", None),                    # failed sample, d never judged: not counted
        ("e", None), ("e", {"RD": 1, "DA": 2}),
    ]
    got = harm_share(samples, harm)
    assert (got.n, got.k) == (4, 2)
    assert got.share == 0.5
    assert got.ci95 == pytest.approx(wilson_interval(2, 4))
    assert got.model_dump(mode="json") == {"n": 4, "k": 2, "share": 0.5, "ci95": list(wilson_interval(2, 4))}


def test_harm_share_without_harm_levels_or_judgments():
    assert harm_share([("a", {"X": 0})], set()) == HarmShare(n=1, k=0, share=0.0, ci95=wilson_interval(0, 1))
    assert harm_share([("a", None)], {0}) == HarmShare(n=0, k=0, share=None, ci95=None)


def test_one_denominator_for_conversations_with_nothing_relevant():
    """A conversation with every dimension not relevant is in neither the harm share's nor
    all_best's denominator (it used to count as judged and harmless in the first only)."""
    samples = [("a", {"RD": 2, "DA": 0}), ("b", {"RD": 2, "DA": None}), ("c", {"RD": None, "DA": None}),
               ("d", {"RD": None, "DA": None}), ("d", {"RD": 1, "DA": None})]  # a second sample rates d
    got = harm_share(samples, {0})
    assert (got.n, got.k) == (3, 1)
    levels = level_shares(samples, ["RD", "DA"], [("best", 2), ("mid", 1), ("harm", 0)])
    assert levels.all_best.n == got.n and levels.all_best.k == 1


@pytest.mark.parametrize(("k1", "n1", "k2", "n2"),
                         [(6, 24, 0, 24), (12, 40, 9, 60), (1, 10, 1, 10), (30, 100, 45, 100), (3, 7, 0, 50)])
def test_two_proportion_pvalue_matches_scipy_chi_square(k1, n1, k2, n2):
    """The refusal-rate test (leaderboard) is Pearson's chi-square of the 2x2 table, no continuity
    correction: the same p-value as scipy's, computed independently."""
    from scipy.stats import chi2_contingency

    from mindeval.stats.proportion import two_proportion_pvalue

    table = [[k1, n1 - k1], [k2, n2 - k2]]
    expected = chi2_contingency(table, correction=False).pvalue
    assert two_proportion_pvalue(k1, n1, k2, n2) == pytest.approx(expected, rel=1e-9, abs=1e-15)


def test_two_proportion_pvalue_without_variation_is_one():
    from mindeval.stats.proportion import two_proportion_pvalue

    assert two_proportion_pvalue(0, 12, 0, 30) == 1.0 == two_proportion_pvalue(5, 5, 8, 8)
    with pytest.raises(ValueError):
        two_proportion_pvalue(3, 2, 0, 5)
