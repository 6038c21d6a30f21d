"""Paired significance tests between two systems on the items they share.

Input is the matrix of paired differences ``d = a - b`` (items × criteria) on the
profiles both systems were scored on. Scores are discrete (1-6 and their averages),
so many resampled statistics equal the observed one exactly: every comparison counts
ties as "at least as extreme" (``>=`` with a tolerance of ``TIE_TOL`` for floating-point
error).

Sidedness (``sided``): ``"one"`` (the leaderboard default) tests whether the observed winner is better
(H1: the mean difference has the observed sign), as the authors' clustering and
mt-metrics-eval's ``AssignRanks`` do; ``"two"`` (the default of these functions) tests for any
difference.

* ``permutation`` (default): sign-flip test. Under the null hypothesis the sign of each
  paired difference is exchangeable. Two-sided statistic ``T = |sum(d)|``; one-sided
  ``T = s·sum(d)`` with ``s`` the observed sign; ``p = (1 + #{T* >= T}) / (R + 1)`` over
  ``R`` random sign vectors. When ``2**n <= R`` all sign vectors are enumerated instead
  and ``p = #{T* >= T} / 2**n`` (exact).
* ``bootstrap``: paired bootstrap in the style of Koehn (2004). Items are resampled with
  replacement and the resampled mean difference ``δ*`` recorded; one-sided
  ``p = (1 + #{resamples where the observed winner does not win}) / (R + 1)`` (ties count
  against it), two-sided ``p = min(1, 2 × that)``. On few items the bootstrap is
  anti-conservative: below :data:`BOOTSTRAP_MIN_N` items (25 one-sided, 40 two-sided)
  its type-I error exceeds α + 0.01 (measured by ``benchmarks/bench_significance.py``), and callers warn.
"""

from __future__ import annotations

import warnings
from typing import Literal

import numpy as np

from .bootstrap import resample_counts

TIE_TOL = 1e-9
TESTS: tuple[str, ...] = ("permutation", "bootstrap")
TestName = Literal["permutation", "bootstrap"]
SIDES: tuple[str, ...] = ("one", "two")
Sided = Literal["one", "two"]
# Smallest number of paired items from which the paired bootstrap's type-I error stays
# within 0.01 of alpha = 0.05 at every larger size simulated (10-50 items, 4000 simulations
# per size): benchmarks/bench_significance.py, figures in docs/leaderboard.md.
BOOTSTRAP_MIN_N: dict[str, int] = {"one": 25, "two": 40}


def small_sample_warning(test: str, n: int, sided: str = "two", alpha: float = 0.05) -> str | None:
    """A warning when ``test`` on ``n`` paired items rejects a true null too often."""
    need = BOOTSTRAP_MIN_N[sided]
    if test == "bootstrap" and n < need:
        return (f"the paired bootstrap ({sided}-sided) on {n} shared profiles rejects a true null more often "
                f"than alpha={alpha:g} (simulated type-I error above alpha + 0.01 below {need} profiles); "
                "prefer --test permutation")
    return None


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


def bootstrap_pvalue(resampled: np.ndarray, observed: np.ndarray, sided: Sided = "two") -> np.ndarray:
    """Paired-bootstrap p-value per column from resampled differences ``δ*`` (resamples × k).

    Any statistic works (a mean difference, a difference of two Kendall τ on the same
    resampled items): one-sided ``p = (1 + #{δ* on the other side of 0 than the observed
    δ, or 0}) / (R + 1)``, two-sided ``min(1, 2 ×`` the smaller tail ``)``. Resamples on
    which ``δ*`` is undefined (NaN) are left out of ``R``.
    """
    d = np.asarray(resampled, dtype=np.float64)
    if d.ndim == 1:
        d = d[:, None]
    total = np.asarray(observed, dtype=np.float64).reshape(-1)
    r = np.isfinite(d).sum(axis=0).astype(np.float64)
    not_above = (d <= TIE_TOL).sum(axis=0)
    not_below = (d >= -TIE_TOL).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        if sided == "two":
            p = np.minimum(2.0 * (1.0 + np.minimum(not_above, not_below)) / (r + 1.0), 1.0)
        else:
            p = (1.0 + np.where(total < 0, not_below, not_above)) / (r + 1.0)
    return np.where(r > 0, p, np.nan)


class PairedTest:
    """One draw of sign vectors (permutation) or resample counts (bootstrap) over ``n`` items.

    The draw can be reused for every pair of systems scored on the same ``n`` items:
    :meth:`project` each system's ``(n, k)`` scores once, then :meth:`pvalue_from`
    compares any two projections. This gives exactly the p-value of :meth:`pvalue` on
    the differences, since the statistics are linear in the scores.
    """

    def __init__(self, n: int, *, test: TestName, resamples: int, rng: np.random.Generator,
                 sided: Sided = "two") -> None:
        if test not in TESTS:
            raise ValueError(f"unknown test {test!r}; choose one of {TESTS}")
        if sided not in SIDES:
            raise ValueError(f"unknown sidedness {sided!r}; choose one of {SIDES}")
        self.sided = sided
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
        total = np.asarray(total_diff, dtype=np.float64).reshape(-1)
        if self.test == "permutation":
            # sum(s_i d_i) with s_i = 2 b_i - 1  ==  2 (b @ d) - sum(d)
            flipped = 2.0 * weighted - total
            if self.sided == "two":
                hits = (np.abs(flipped) >= np.abs(total) - TIE_TOL).sum(axis=0)
            else:
                sign = np.where(total < 0, -1.0, 1.0)
                hits = (sign * flipped >= np.abs(total) - TIE_TOL).sum(axis=0)
            if self.exact:
                return hits / self.weights.shape[0]
            return (1.0 + hits) / (self.resamples + 1.0)
        # bootstrap: weighted = n * δ*, same sign as δ*
        return bootstrap_pvalue(weighted, total, self.sided)

    def pvalue(self, diffs: np.ndarray) -> np.ndarray:
        """p-values for the paired differences ``a - b`` (items × criteria)."""
        d = _as_diffs(diffs)
        return self.pvalue_from(self.project(d), np.zeros((1, d.shape[1])), d.sum(axis=0))


def paired_permutation_pvalue(diffs: np.ndarray, *, resamples: int, rng: np.random.Generator,
                              sided: Sided = "two") -> np.ndarray:
    """Sign-flip permutation p-value per criterion (see module docstring)."""
    return paired_pvalue(diffs, test="permutation", resamples=resamples, rng=rng, sided=sided)


def paired_bootstrap_pvalue(diffs: np.ndarray, *, resamples: int, rng: np.random.Generator,
                            sided: Sided = "two") -> np.ndarray:
    """Paired-bootstrap p-value per criterion (see module docstring)."""
    return paired_pvalue(diffs, test="bootstrap", resamples=resamples, rng=rng, sided=sided)


def paired_pvalue(
    diffs: np.ndarray, *, test: TestName = "permutation", resamples: int, rng: np.random.Generator,
    sided: Sided = "two",
) -> np.ndarray:
    """p-value per criterion of the named paired test."""
    if test not in TESTS:
        raise ValueError(f"unknown test {test!r}; choose one of {TESTS}")
    d = _as_diffs(diffs)
    if d.shape[0] == 0:
        return _empty(d.shape[1])
    return PairedTest(d.shape[0], test=test, resamples=resamples, rng=rng, sided=sided).pvalue(d)
