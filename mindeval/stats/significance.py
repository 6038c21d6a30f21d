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


def paired_permutation_pvalue(diffs: np.ndarray, *, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Two-sided sign-flip permutation p-value per criterion (see module docstring)."""
    d = _as_diffs(diffs)
    n, k = d.shape
    if n == 0:
        return _empty(k)
    total = d.sum(axis=0)
    bits, exact = _sign_bits(n, resamples, rng)
    # sum(s_i d_i) with s_i = 2 b_i - 1  ==  2 (b @ d) - sum(d)
    flipped = np.abs(2.0 * (bits @ d) - total)
    hits = (flipped >= np.abs(total) - TIE_TOL).sum(axis=0)
    if exact:
        return hits / bits.shape[0]
    return (1.0 + hits) / (resamples + 1.0)


def paired_bootstrap_pvalue(diffs: np.ndarray, *, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Two-sided paired-bootstrap p-value per criterion (see module docstring)."""
    d = _as_diffs(diffs)
    n, k = d.shape
    if n == 0:
        return _empty(k)
    sums = resample_counts(n, resamples, rng) @ d  # n * δ*, same sign as δ*
    not_above = (sums <= TIE_TOL).sum(axis=0)
    not_below = (sums >= -TIE_TOL).sum(axis=0)
    p = 2.0 * (1.0 + np.minimum(not_above, not_below)) / (resamples + 1.0)
    return np.minimum(p, 1.0)


def paired_pvalue(
    diffs: np.ndarray, *, test: TestName = "permutation", resamples: int, rng: np.random.Generator
) -> np.ndarray:
    """Dispatch to the named paired test."""
    if test == "permutation":
        return paired_permutation_pvalue(diffs, resamples=resamples, rng=rng)
    if test == "bootstrap":
        return paired_bootstrap_pvalue(diffs, resamples=resamples, rng=rng)
    raise ValueError(f"unknown test {test!r}; choose one of {TESTS}")
