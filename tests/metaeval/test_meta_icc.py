"""ICC(2,1) and ICC(2,k) (two-way random, absolute agreement) against pingouin (its ICC(A,1) and
ICC(A,k), McGraw & Wong's names), and on resamples."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from metaeval.statistics import GROUP_STATISTICS, STATISTICS
from mindeval.stats import agreement, resampled

pingouin = pytest.importorskip("pingouin")


def _pingouin(m: np.ndarray) -> dict[str, float]:
    k, n = m.shape
    long = pd.DataFrame({"item": np.tile(np.arange(n), k), "rater": np.repeat(np.arange(k), n), "score": m.ravel()})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = pingouin.intraclass_corr(long, targets="item", raters="rater", ratings="score", nan_policy="omit")
    return dict(zip(res["Type"], res["ICC"], strict=True))


@pytest.mark.parametrize("seed", range(8))
def test_icc_equals_pingouin_on_random_data(seed):
    rng = np.random.default_rng(seed)
    k, n = int(rng.integers(2, 6)), int(rng.integers(8, 60))
    truth = rng.normal(3.5, 1, n)
    m = truth[None, :] + rng.normal(0, 0.3 + seed * 0.2, (k, n)) + rng.normal(0, 0.5, (k, 1))
    if seed % 2:
        m = np.clip(np.round(m), 1, 6)  # Likert scores, as the humans give
    ref = _pingouin(m)
    assert agreement.icc(m, "single") == pytest.approx(ref["ICC(A,1)"], abs=1e-9)
    assert agreement.icc(m, "average") == pytest.approx(ref["ICC(A,k)"], abs=1e-9)
    # missing ratings: both use the interactions every rater scored
    m[0, :3] = np.nan
    ref = _pingouin(m)
    assert agreement.icc(m, "single") == pytest.approx(ref["ICC(A,1)"], abs=1e-9)
    assert GROUP_STATISTICS["icc2_k"].point(m) == pytest.approx(ref["ICC(A,k)"], abs=1e-9)
    pair = _pingouin(m[:2])
    assert STATISTICS["icc2_1"].point(m[0], m[1], None, None) == pytest.approx(pair["ICC(A,1)"], abs=1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_resampled_icc_is_the_point_icc_of_the_expanded_sample(seed):
    rng = np.random.default_rng(seed)
    n = 30
    m = np.round(rng.normal(3.5, 1, n)[None, :] + rng.normal(0, 0.8, (3, n)))
    m[1, 4] = np.nan
    ones = np.ones((1, n))
    picks = rng.integers(0, n, n)
    counts = np.bincount(picks, minlength=n)[None, :].astype(float)
    for form in ("single", "average"):
        assert resampled.icc(m, ones, form)[0] == pytest.approx(agreement.icc(m, form), abs=1e-12)
        assert resampled.icc(m, counts, form)[0] == pytest.approx(agreement.icc(m[:, picks], form), abs=1e-12)


def test_icc_of_a_constant_study_is_nan_with_a_warning():
    with pytest.warns(agreement.AgreementWarning):
        assert np.isnan(agreement.icc(np.full((3, 10), 4.0)))
