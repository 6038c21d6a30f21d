"""Paired two-sided significance tests between two systems on the items they share.

Input is the matrix of paired differences ``d = a - b`` (items × criteria) on the
profiles both systems were scored on. Scores are discrete (1-6 and their averages),
so many resampled statistics equal the observed one exactly: every comparison counts
ties as "at least as extreme" (``>=`` with a tolerance of ``TIE_TOL`` for floating-point
error). Identical systems therefore get p = 1.

* ``permutation`` (default): sign-flip test. Under the null hypothesis the sign of each
  paired difference is exchangeable. Statistic ``T = |sum(d)|``;
  ``p = (1 + #{T* >= T}) / (R + 1)`` over ``R`` random sign vectors. When
  ``2**n <= R`` all sign vectors are enumerated instead and ``p = #{T* >= T} / 2**n``
  (exact).
* ``bootstrap``: paired bootstrap in the style of Koehn (2004). Items are resampled with
  replacement and the resampled mean difference ``δ*`` recorded;
  ``p = min(1, 2 (1 + min(#{δ* <= 0}, #{δ* >= 0})) / (R + 1))``, i.e. twice the share of
  resamples in which the observed winner does not win (ties count against it).
"""

from __future__ import annotations

import warnings
from typing import Literal

import numpy as np

from .bootstrap import resample_counts

TIE_TOL = 1e-9
TESTS: tuple[str, ...] = ("permutation", "bootstrap")
TestName = Literal["permutation", "bootstrap"]


def _as_diffs(diffs: np.ndarray) -> np.ndarray:
    d = np.asarray(diffs, dtype=np.float64)
    if d.ndim == 1:
        d = d[:, None]
    if d.ndim != 2:
        raise ValueError("differences must be 1-D or 2-D (items × criteria)")
    if not np.all(np.isfinite(d)):
        raise ValueError("differences must be finite")
    return d


def _empty(k: int) -> np.ndarray:
    warnings.warn("no shared items: the p-value is NaN", RuntimeWarning, stacklevel=3)
    return np.full(k, np.nan)


def _sign_bits(n: int, resamples: int, rng: np.random.Generator) -> tuple[np.ndarray, bool]:
    """0/1 matrix whose rows say which differences keep their sign; ``True`` when exhaustive."""
    if n < 63 and 2**n <= resamples:
        rows = np.arange(2**n, dtype=np.int64)[:, None]
        return ((rows >> np.arange(n, dtype=np.int64)) & 1).astype(np.float64), True
    raw = rng.bytes((resamples * n + 7) // 8)
    bits = np.unpackbits(np.frombuffer(raw, dtype=np.uint8), count=resamples * n)
    return bits.reshape(resamples, n).astype(np.float64), False


class PairedTest:
    """One draw of sign vectors (permutation) or resample counts (bootstrap) over ``n`` items.

    The draw can be reused for every pair of systems scored on the same ``n`` items:
    :meth:`project` each system's ``(n, k)`` scores once, then :meth:`pvalue_from`
    compares any two projections. This gives exactly the p-value of :meth:`pvalue` on
    the differences, since the statistics are linear in the scores.
    """

    def __init__(self, n: int, *, test: TestName, resamples: int, rng: np.random.Generator) -> None:
        if test not in TESTS:
            raise ValueError(f"unknown test {test!r}; choose one of {TESTS}")
        if n < 1 or resamples < 1:
            raise ValueError("need n >= 1 and resamples >= 1")
        self.n, self.test, self.resamples = n, test, resamples
        self.exact = False
        if test == "permutation":
            self.weights, self.exact = _sign_bits(n, resamples, rng)
        else:
            self.weights = resample_counts(n, resamples, rng)

    def project(self, x: np.ndarray) -> np.ndarray:
        """``(draws, k)`` weighted sums of one system's ``(n, k)`` scores."""
        x = _as_diffs(x)
        if x.shape[0] != self.n:
            raise ValueError(f"expected {self.n} items, got {x.shape[0]}")
        return self.weights @ x

    def pvalue_from(self, proj_a: np.ndarray, proj_b: np.ndarray, total_diff: np.ndarray) -> np.ndarray:
        """p-values from two projections and the observed ``sum(a - b)`` per criterion."""
        weighted = proj_a - proj_b
        if self.test == "permutation":
            # sum(s_i d_i) with s_i = 2 b_i - 1  ==  2 (b @ d) - sum(d)
            flipped = np.abs(2.0 * weighted - total_diff)
            hits = (flipped >= np.abs(total_diff) - TIE_TOL).sum(axis=0)
            if self.exact:
                return hits / self.weights.shape[0]
            return (1.0 + hits) / (self.resamples + 1.0)
        # bootstrap: weighted = n * δ*, same sign as δ*
        not_above = (weighted <= TIE_TOL).sum(axis=0)
        not_below = (weighted >= -TIE_TOL).sum(axis=0)
        return np.minimum(2.0 * (1.0 + np.minimum(not_above, not_below)) / (self.resamples + 1.0), 1.0)

    def pvalue(self, diffs: np.ndarray) -> np.ndarray:
        """p-values for the paired differences ``a - b`` (items × criteria)."""
        d = _as_diffs(diffs)
        return self.pvalue_from(self.project(d), np.zeros((1, d.shape[1])), d.sum(axis=0))


def paired_permutation_pvalue(diffs: np.ndarray, *, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Two-sided sign-flip permutation p-value per criterion (see module docstring)."""
    d = _as_diffs(diffs)
    if d.shape[0] == 0:
        return _empty(d.shape[1])
    return PairedTest(d.shape[0], test="permutation", resamples=resamples, rng=rng).pvalue(d)


def paired_bootstrap_pvalue(diffs: np.ndarray, *, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Two-sided paired-bootstrap p-value per criterion (see module docstring)."""
    d = _as_diffs(diffs)
    if d.shape[0] == 0:
        return _empty(d.shape[1])
    return PairedTest(d.shape[0], test="bootstrap", resamples=resamples, rng=rng).pvalue(d)


def paired_pvalue(
    diffs: np.ndarray, *, test: TestName = "permutation", resamples: int, rng: np.random.Generator
) -> np.ndarray:
    """Dispatch to the named paired test."""
    if test == "permutation":
        return paired_permutation_pvalue(diffs, resamples=resamples, rng=rng)
    if test == "bootstrap":
        return paired_bootstrap_pvalue(diffs, resamples=resamples, rng=rng)
    raise ValueError(f"unknown test {test!r}; choose one of {TESTS}")
