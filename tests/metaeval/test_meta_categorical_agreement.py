"""Categorical agreement (Cohen's κ, Fleiss' κ, Krippendorff α nominal) against textbook values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mindeval.stats.agreement import AgreementWarning, cohen_kappa, fleiss_kappa, krippendorff_alpha

NAN = math.nan


def test_cohen_kappa_textbook_two_by_two():
    # 50 proposals, two readers (Wikipedia "Cohen's kappa" example): 20 yes/yes, 5 yes/no,
    # 10 no/yes, 15 no/no. p_o = 0.7, p_e = 0.5 * 0.6 + 0.5 * 0.4 = 0.5, κ = 0.4.
    a = [1] * 20 + [1] * 5 + [0] * 10 + [0] * 15
    b = [1] * 20 + [0] * 5 + [1] * 10 + [0] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4)


def test_cohen_kappa_three_categories_by_hand():
    # 10 items, categories 0/1/2; agreement on items 0-2, 4-5, 7-8: p_o = 0.7.
    a = [2, 2, 2, 2, 1, 1, 1, 0, 0, 0]
    b = [2, 2, 2, 1, 1, 1, 0, 0, 0, 2]
    # marginals a: 2→.4 1→.3 0→.3; b: 2→.4 1→.3 0→.3; p_e = .16 + .09 + .09 = .34
    assert cohen_kappa(a, b) == pytest.approx((0.7 - 0.34) / (1 - 0.34))
    # a missing rating drops the item; perfect agreement is 1, systematic disagreement is negative
    assert cohen_kappa([2, 1, NAN, 0], [2, 1, 0, 0]) == pytest.approx(1.0)
    assert cohen_kappa([0, 1, 0, 1], [1, 0, 1, 0]) == pytest.approx(-1.0)


def test_cohen_kappa_matches_sklearn():
    sklearn = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(5)
    a = rng.integers(0, 3, 60)
    b = np.where(rng.random(60) < 0.6, a, rng.integers(0, 3, 60))
    assert cohen_kappa(a, b) == pytest.approx(sklearn.cohen_kappa_score(a, b))


def test_cohen_kappa_undefined_when_one_category():
    with pytest.warns(AgreementWarning, match="chance agreement is 1"):
        assert math.isnan(cohen_kappa([1, 1, 1], [1, 1, 1]))
    with pytest.warns(AgreementWarning, match="chance agreement is 1"):  # one shared item, agreed on: as sklearn
        assert math.isnan(cohen_kappa([1, NAN], [1, 0]))
    with pytest.warns(AgreementWarning, match="got none"):
        assert math.isnan(cohen_kappa([1, NAN], [NAN, 0]))


# Fleiss (1971) as tabulated on Wikipedia "Fleiss' kappa": 10 subjects, 14 raters, 5 categories;
# P̄ = 0.378, P̄e = 0.213, κ = 0.210.
FLEISS_COUNTS = [
    [0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7],
]


def _raters_by_items(counts: list[list[int]]) -> np.ndarray:
    cols = [[cat for cat, n in enumerate(row, start=1) for _ in range(n)] for row in counts]
    return np.array(cols, dtype=float).T  # rater identity does not matter to Fleiss' κ


def test_fleiss_kappa_textbook_example():
    m = _raters_by_items(FLEISS_COUNTS)
    assert m.shape == (14, 10)
    assert fleiss_kappa(m) == pytest.approx(0.20993, abs=5e-5)


def test_fleiss_kappa_uses_items_every_rater_rated():
    m = _raters_by_items(FLEISS_COUNTS)
    extra = np.full((14, 3), 1.0)
    extra[0, :] = NAN  # not rated by everyone: left out
    assert fleiss_kappa(np.hstack([m, extra])) == pytest.approx(fleiss_kappa(m))
    # two raters: Fleiss' κ is Scott's π, (p_o - p_e) / (1 - p_e) with pooled marginals
    a, b = [1, 1, 1, 0, 0, 0], [1, 1, 0, 0, 0, 1]
    pooled = (6 / 12) ** 2 * 2
    assert fleiss_kappa([a, b]) == pytest.approx((4 / 6 - pooled) / (1 - pooled))
    with pytest.warns(AgreementWarning, match="every rater"):
        assert math.isnan(fleiss_kappa([[1, NAN], [NAN, 2]]))


def test_krippendorff_alpha_nominal_textbook_example():
    # Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C:
    # 4 observers, 12 units, values 1-5 with missing data: nominal α = 0.743.
    data = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
        [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
    ]
    assert krippendorff_alpha(data, "nominal") == pytest.approx(0.743, abs=5e-4)
    assert krippendorff_alpha(data, "interval") == pytest.approx(0.849, abs=5e-4)
