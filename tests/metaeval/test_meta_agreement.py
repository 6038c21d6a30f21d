"""Agreement metrics against independent, hand-written computations."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from mindeval.stats.agreement import (
    AgreementWarning,
    PairIndex,
    kendall_tau,
    krippendorff_alpha,
    mipsa,
    pairwise_accuracy,
    quartiles,
)

# ------------------------------------------------------------- independent versions


def naive_tau(x: list[float], y: list[float], variant: str = "b") -> float:
    pairs = list(itertools.combinations(range(len(x)), 2))
    c = sum(1 for i, j in pairs if (x[i] - x[j]) * (y[i] - y[j]) > 0)
    d = sum(1 for i, j in pairs if (x[i] - x[j]) * (y[i] - y[j]) < 0)
    if variant == "b":
        n0 = len(pairs)
        t1 = sum(1 for i, j in pairs if x[i] == x[j])
        t2 = sum(1 for i, j in pairs if y[i] == y[j])
        return (c - d) / math.sqrt((n0 - t1) * (n0 - t2))
    n = len(x)
    m = min(len(set(x)), len(set(y)))
    return 2 * (c - d) / (n * n * (m - 1) / m)


def naive_mipsa(x, y, profiles, rule="sign") -> float:
    per = []
    for p in dict.fromkeys(profiles):
        idx = [i for i, q in enumerate(profiles) if q == p and not (np.isnan(x[i]) or np.isnan(y[i]))]
        agree = total = 0
        for i, j in itertools.combinations(idx, 2):
            sx, sy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
            if rule == "exclude" and (sx == 0 or sy == 0):
                continue
            total += 1
            agree += int(sx == sy)
        if total:
            per.append(agree / total)
    return float(np.mean(per))


def naive_alpha(a: list[float], b: list[float], level: str) -> float:
    """Krippendorff's α for two raters and complete data, from the coincidence definition."""
    values = a + b
    freq = {v: values.count(v) for v in sorted(set(values))}
    order = sorted(freq)

    def delta(c: float, k: float) -> float:
        if level == "interval":
            return (c - k) ** 2
        lo, hi = sorted((order.index(c), order.index(k)))
        s = sum(freq[order[g]] for g in range(lo, hi + 1))
        return (s - (freq[c] + freq[k]) / 2) ** 2

    n = len(values)
    d_o = sum(2 * delta(p, q) for p, q in zip(a, b, strict=True)) / n
    d_e = sum(delta(values[i], values[j]) for i in range(n) for j in range(n) if i != j) / (n * (n - 1))
    return 1 - d_o / d_e


# --------------------------------------------------------------------------- Kendall τ

X = [1, 2, 2, 3, 4, 4, 5, 6, 3, 2]
Y = [2, 1, 3, 3, 4, 6, 5, 5, 2, 2]


@pytest.mark.parametrize("variant", ["b", "c"])
def test_kendall_with_ties_matches_hand_computation(variant):
    assert kendall_tau(X, Y, variant) == pytest.approx(naive_tau(X, Y, variant), abs=1e-12)


def test_tau_b_and_tau_c_differ_on_a_non_square_table():
    x, y = [1, 1, 2, 2, 3, 3], [1, 2, 1, 2, 2, 2]
    assert kendall_tau(x, y, "b") != pytest.approx(kendall_tau(x, y, "c"))


def test_kendall_drops_missing_ratings_pairwise():
    x = [1, 2, np.nan, 4, 5, 3]
    y = [2, 1, 3, np.nan, 5, 4]
    assert kendall_tau(x, y) == pytest.approx(naive_tau([1, 2, 5, 3], [2, 1, 5, 4]))


def test_kendall_constant_rater_is_nan_with_warning():
    with pytest.warns(AgreementWarning, match="constant rater"):
        assert math.isnan(kendall_tau([3, 3, 3, 3], [1, 2, 3, 4]))


def test_kendall_needs_two_common_interactions():
    with pytest.warns(AgreementWarning, match="at least 2"):
        assert math.isnan(kendall_tau([1, np.nan, 3], [np.nan, 2, np.nan]))


def test_kendall_rejects_unknown_variant():
    with pytest.raises(ValueError, match="variant"):
        kendall_tau([1, 2], [1, 2], "a")


# ------------------------------------------------------------------------------ MIPSA

PROFILES = ["p1"] * 3 + ["p2"] * 3 + ["p3"] * 2 + ["p4"]
A = np.array([1, 2, 3, 4, 4, 2, 5, 1, 3], dtype=float)
B = np.array([1, 3, 2, 4, 5, 1, 5, 5, 6], dtype=float)


def test_mipsa_sign_rule_by_hand():
    # p1: (1,2) agree, (1,3) agree, (2,3) disagree -> 2/3
    # p2: (4,4) vs (4,5): tie in A only -> disagree; (4,2)/(4,1) agree; (4,2)/(5,1) agree -> 2/3
    # p3: (5,1) vs (5,5): tie in B only -> disagree -> 0
    # p4: one system, no pair, not counted
    expected = (2 / 3 + 2 / 3 + 0) / 3
    assert mipsa(A, B, PROFILES) == pytest.approx(expected)
    assert mipsa(A, B, PROFILES) == pytest.approx(naive_mipsa(A, B, PROFILES))


def test_mipsa_both_tied_pair_agrees_under_sign_rule():
    assert mipsa([2, 2], [5, 5], ["p", "p"]) == 1.0
    assert mipsa([2, 2], [5, 6], ["p", "p"]) == 0.0


def test_mipsa_exclude_rule_drops_tied_pairs():
    # p1: 2/3; p2: the (4,4) pair is dropped -> 2/2; p3: dropped entirely -> profile not counted
    assert mipsa(A, B, PROFILES, ties="exclude") == pytest.approx((2 / 3 + 1.0) / 2)
    assert mipsa(A, B, PROFILES, ties="exclude") == pytest.approx(naive_mipsa(A, B, PROFILES, "exclude"))


def test_mipsa_taub_rule_is_rescaled_per_profile_tau_b_with_half_for_undefined():
    from scipy.stats import kendalltau

    per = []
    for p in ["p1", "p2", "p3"]:
        idx = [i for i, q in enumerate(PROFILES) if q == p]
        t = kendalltau(A[idx], B[idx]).statistic
        per.append(0.5 if np.isnan(t) else (t + 1) / 2)
    assert mipsa(A, B, PROFILES, ties="taub") == pytest.approx(np.mean(per))
    assert per[2] == 0.5  # p3: B is constant over the profile


def test_all_tie_rules_agree_without_ties():
    rng = np.random.default_rng(3)
    profiles = [f"p{i // 4}" for i in range(40)]
    x = rng.permutation(40).astype(float)
    y = x + rng.normal(0, 8, 40)
    values = {rule: mipsa(x, y, profiles, ties=rule) for rule in ("sign", "exclude", "taub")}
    assert values["sign"] == pytest.approx(values["exclude"]) == pytest.approx(values["taub"])
    assert values["sign"] == pytest.approx(naive_mipsa(x, y, profiles))


def test_mipsa_ignores_missing_ratings():
    a = np.array([1, 2, np.nan, 3, 1, 2], dtype=float)
    b = np.array([1, 2, 3, 1, np.nan, 3], dtype=float)
    prof = ["p", "p", "p", "q", "q", "q"]
    # p: only (1,2)/(1,2) agree -> 1; q: only (3,2)/(1,3) disagree -> 0
    assert mipsa(a, b, prof) == pytest.approx(0.5)
    assert mipsa(a, b, prof) == pytest.approx(naive_mipsa(a, b, prof))


def test_mipsa_with_fewer_than_two_systems_per_profile_is_nan_with_warning():
    with pytest.warns(AgreementWarning, match="at least 2 systems"):
        assert math.isnan(mipsa([1, 2, 3], [3, 2, 1], ["a", "b", "c"]))


def test_mipsa_constant_raters_do_not_crash():
    assert mipsa([3, 3, 3], [3, 3, 3], ["p"] * 3) == 1.0  # every pair tied by both
    assert mipsa([3, 3, 3], [3, 3, 3], ["p"] * 3, ties="taub") == 0.5
    with pytest.warns(AgreementWarning, match="no system pair"):
        assert math.isnan(mipsa([3, 3, 3], [3, 3, 3], ["p"] * 3, ties="exclude"))


def test_pair_index_is_reusable_and_checks_length():
    idx = PairIndex(PROFILES)
    assert len(idx.i) == 3 + 3 + 1
    assert mipsa(A, B, idx) == mipsa(A, B, PROFILES)
    with pytest.raises(ValueError, match="length"):
        mipsa(A[:-1], B[:-1], idx)


# ------------------------------------------------------------------ pairwise accuracy


def test_pairwise_accuracy_twelve_systems_like_table5():
    ref = np.arange(12, 0, -1, dtype=float)
    other = ref.copy()
    # swap six adjacent pairs: 6 of the 66 system pairs flip
    for i in range(0, 12, 2):
        other[i], other[i + 1] = other[i + 1], other[i]
    assert pairwise_accuracy(ref, other) == pytest.approx(60 / 66)


def test_pairwise_accuracy_ties_and_too_few_systems():
    assert pairwise_accuracy([3, 3, 1], [3, 2, 1]) == pytest.approx(2 / 3)
    with pytest.warns(AgreementWarning):
        assert math.isnan(pairwise_accuracy([1, np.nan], [1, 2]))


# ---------------------------------------------------------------- Krippendorff's α

RA = [1, 2, 3, 3, 4, 5, 6, 2, 4, 5]
RB = [1, 3, 3, 2, 4, 6, 5, 2, 5, 5]


@pytest.mark.parametrize("level", ["interval", "ordinal"])
def test_alpha_matches_the_coincidence_definition(level):
    assert krippendorff_alpha([RA, RB], level) == pytest.approx(naive_alpha(RA, RB, level), abs=1e-9)


def test_alpha_skips_units_with_one_rating():
    a = RA + [2.0]
    b = RB + [np.nan]
    assert krippendorff_alpha([a, b], "interval") == pytest.approx(naive_alpha(RA, RB, "interval"))


def test_alpha_identical_values_is_nan_with_warning_not_a_crash():
    with pytest.warns(AgreementWarning, match="identical"):
        assert math.isnan(krippendorff_alpha([[4, 4, 4], [4, 4, 4]], "ordinal"))
    with pytest.warns(AgreementWarning, match="at least 2 raters"):
        assert math.isnan(krippendorff_alpha([[1, np.nan], [np.nan, 2]], "interval"))


# -------------------------------------------------------------------------- quartiles


def test_quartiles_over_runs():
    assert quartiles([0.1, 0.2, 0.3, 0.4, 0.5]) == pytest.approx([0.2, 0.3, 0.4])
    assert quartiles([np.nan, 0.5, 0.7]) == pytest.approx([0.55, 0.6, 0.65])
    assert all(math.isnan(v) for v in quartiles([np.nan]))
