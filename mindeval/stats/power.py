"""Simulated type-I error and power of the paired tests (for benchmarks and warnings).

A simulated benchmark: ``n`` profiles, two systems. An interaction's score on each of
the five axes is an integer 1-6, ``clip(round(3.4 + q + u + e))`` with a profile effect
``q ~ N(0, 0.5)`` (shared by both systems), an interaction effect ``u ~ N(0, 0.5)``
(shared by its axes) and axis noise ``e ~ N(0, 0.9)``; the criterion tested is the
average of the five axes, as in the leaderboard. System A's latent mean is raised by
``delta`` (0 = no true difference).

A test *declares A better* when its p-value is below ``alpha`` and A's mean is higher.
Type-I error is the share of null simulations where A is declared better, which is the
nominal ``alpha`` of a one-sided test of "A > B"; for a two-sided test the share where
either system is declared better is reported (nominal ``alpha`` too).
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import BaseModel

from .significance import PairedTest, Sided, TestName

AXES_N = 5


class RejectionRate(BaseModel):
    test: str
    sided: str
    n: int
    delta: float
    alpha: float
    sims: int
    rate: float


def simulate_scores(n: int, delta: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Average scores (``n``,) of systems A and B on the same ``n`` profiles."""
    q = rng.normal(0.0, 0.5, size=(n, 1))

    def system(shift: float) -> np.ndarray:
        u = rng.normal(0.0, 0.5, size=(n, 1))
        e = rng.normal(0.0, 0.9, size=(n, AXES_N))
        return np.clip(np.rint(3.4 + shift + q + u + e), 1, 6).mean(axis=1)

    return system(delta), system(0.0)


def rejection_rate(test: TestName, sided: Sided, n: int, *, delta: float = 0.0, alpha: float = 0.05,
                   sims: int = 2000, resamples: int = 1000, seed: int = 0) -> RejectionRate:
    """Share of ``sims`` simulated benchmarks in which the test rejects (see module docstring)."""
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(sims):
        a, b = simulate_scores(n, delta, rng)
        d = (a - b)[:, None]
        p = float(PairedTest(n, test=test, resamples=resamples, rng=rng, sided=sided).pvalue(d)[0])
        if p < alpha and (sided == "two" or d.sum() > 0):
            hits += 1
    return RejectionRate(test=test, sided=sided, n=n, delta=delta, alpha=alpha, sims=sims, rate=hits / sims)


def _z(p: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(p))


def power_at(n: int, se_pilot: float, n_pilot: int, delta: float, alpha: float = 0.05) -> float:
    """Power of a two-sided test at level ``alpha`` to detect a true difference ``delta`` with ``n`` items.

    Normal approximation: the standard error of the difference, measured on a pilot of
    ``n_pilot`` items (e.g. the bootstrap SD of Δτ), shrinks as ``1 / sqrt(n)``.
    """
    from scipy.stats import norm

    se = se_pilot * math.sqrt(n_pilot / n)
    z = _z(1 - alpha / 2)
    return float(norm.cdf(abs(delta) / se - z) + norm.cdf(-abs(delta) / se - z))


def required_n(se_pilot: float, n_pilot: int, delta: float, alpha: float = 0.05, power: float = 0.8) -> int:
    """Items needed for ``power`` at level ``alpha`` (two-sided) to detect ``delta`` (see :func:`power_at`)."""
    if not (se_pilot > 0 and delta != 0):
        raise ValueError("need a positive pilot standard error and a non-zero difference")
    return math.ceil(n_pilot * (se_pilot * (_z(1 - alpha / 2) + _z(power)) / abs(delta)) ** 2)
