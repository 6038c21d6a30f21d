"""Prediction-powered inference of a mean (Angelopoulos et al., Science 2023), with the power
tuning of PPI++ (Angelopoulos, Duchi & Zrnic 2023): human labels on a random subset correct the
judge's scores on every item, giving a valid interval for the mean on the human scale.

The same estimator, tuning and normal interval as ``ppi_py.ppi_mean_pointestimate`` /
``ppi_py.ppi_mean_ci`` (ppi-python 0.2.3; checked equal in tests/leaderboard/test_human_scale.py).

With ``groups`` (a multi-session study: the units are sessions, clustered by member) the same point
estimate gets a cluster-robust standard error: the estimate is a sum over members of each member's
contribution ψ_g(λ) = λ·u_g + v_g, where

    u_g = c_U·Σ_{i∈g, unrated}(f_i − f̄_U)/N − c_L·Σ_{i∈g, rated}(f_i − f̄_L)/n,
    v_g = c_L·Σ_{i∈g, rated}(y_i − ȳ)/n,

(f: judge, y: human, N unrated and n rated units, c² = G/(G−1) for the G members with a unit of that
part, or 1 with ``small_sample=False``); se² = Σ_g ψ_g², λ (when tuned) minimises it: −Σu_g·v_g / Σu_g²
clipped to [0, 1]; Student's t with G_L − 1 degrees of freedom (G_L members rated). A member's rated
and unrated sessions covary through ψ_g; with one unit per member it is the plain PPI variance.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from pydantic import BaseModel
from scipy.stats import norm, t


class MeanInterval(BaseModel):
    """A mean with its two-sided normal interval; ``lam`` is the weight on the judge (0: humans only)."""

    estimate: float
    ci_low: float
    ci_high: float
    lam: float


def _lam(y: np.ndarray, yhat: np.ndarray, yhat_all: np.ndarray) -> float:
    """PPI++'s variance-minimizing weight on the predictions, clipped to [0, 1]."""
    n, big_n = len(y), len(yhat_all)
    rough = yhat_all.mean() + (y - yhat).mean()
    g, gh = y - rough, yhat - rough
    cov = 2 * np.mean((g - g.mean()) * (gh - gh.mean()))
    var = np.var(np.concatenate([gh, yhat_all - rough]), ddof=1)
    if var == 0:
        return 0.0
    return float(np.clip(cov / (2 * (1 + n / big_n) * var), 0.0, 1.0))


class Groups(NamedTuple):
    """The cluster (member) of each rated and each unrated unit, for a clustered standard error."""

    rated: np.ndarray | list
    unrated: np.ndarray | list


def ppi_mean(y: np.ndarray, yhat: np.ndarray, yhat_all: np.ndarray, *, level: float = 0.95,
             lam: float | None = None, small_sample: bool = True, groups: Groups | None = None) -> MeanInterval:
    """Mean of the human scale from human labels ``y`` and the judge's ``yhat`` on the same items
    and its ``yhat_all`` on unlabeled items of the same population (``lam=None``: tuned; 1: plain PPI;
    0: humans only).

    ``small_sample``: unbiased variances and Student's t with n - 1 degrees of freedom (n labels)
    instead of the normal quantile, which covers 91% instead of 95% at n = 20 (benchmarks/bench_ppi.py);
    ``False`` is ppi-python's interval exactly. Both agree as n grows. ``groups``: the units' clusters
    (module docstring: clustered standard error, t with one less than the rated clusters)."""
    est, se, lam, n = _ppi(y, yhat, yhat_all, lam, small_sample, groups)
    z = float(t.ppf(0.5 + level / 2, n - 1) if small_sample else norm.ppf(0.5 + level / 2))
    return MeanInterval(estimate=est, ci_low=est - z * se, ci_high=est + z * se, lam=lam)


def _ppi(y, yhat, yhat_all, lam: float | None, small_sample: bool,
         groups: Groups | None = None) -> tuple[float, float, float, int]:
    """Estimate, standard error, weight and number of independent labels (rated clusters with
    ``groups``) of the PPI(++) mean."""
    if groups is not None:
        return _clustered(y, yhat, yhat_all, lam, small_sample, groups)
    y, yhat, yhat_all = (np.asarray(a, dtype=float) for a in (y, yhat, yhat_all))
    if not len(yhat_all):  # every item labeled: nothing for the judge to add
        lam, yhat_all = 0.0, np.zeros(1)
    if lam is None:
        lam = _lam(y, yhat, yhat_all)
    est = float(lam * yhat_all.mean() + (y - lam * yhat).mean())
    ddof = 1 if small_sample else 0
    se = float(np.sqrt(np.var(lam * yhat_all, ddof=ddof) / len(yhat_all) + np.var(y - lam * yhat, ddof=ddof) / len(y)))
    return est, se, float(lam), len(y)


def _clustered(y, yhat, yhat_all, lam: float | None, small_sample: bool,
               groups: Groups) -> tuple[float, float, float, int]:
    """The PPI(++) mean with the cluster-robust standard error of the module docstring."""
    y, yhat, f_u = (np.asarray(a, dtype=float) for a in (y, yhat, yhat_all))
    if len(groups.rated) != len(y) or len(groups.unrated) != len(f_u):
        raise ValueError("groups must name the cluster of every rated and every unrated unit")
    codes, inv = np.unique(np.concatenate([np.asarray(groups.rated, dtype=str), np.asarray(groups.unrated, dtype=str)]),
                           return_inverse=True)
    g_l, g_u = inv[:len(y)], inv[len(y):]

    def part(idx: np.ndarray, dev: np.ndarray) -> np.ndarray:
        """Per cluster, c·Σ dev / len(dev) (c² = G/(G−1) over the G clusters of the part)."""
        if not len(dev):
            return np.zeros(len(codes))
        k = len(np.unique(idx))
        c = (np.sqrt(k / (k - 1)) if k > 1 else np.nan) if small_sample else 1.0
        return c * np.bincount(idx, weights=dev, minlength=len(codes)) / len(dev)

    u = part(g_u, f_u - f_u.mean()) - part(g_l, yhat - yhat.mean())
    v = part(g_l, y - y.mean())
    if not len(f_u):  # every unit rated: nothing for the judge to add
        lam = 0.0
    elif lam is None:
        lam = float(np.clip(-(u @ v) / (u @ u), 0.0, 1.0)) if u @ u > 0 else 0.0  # NaN (one member): 0
    f_bar = f_u.mean() if len(f_u) else 0.0
    est = float(lam * f_bar + y.mean() - lam * yhat.mean())
    psi = v if lam == 0 else lam * u + v
    return est, float(np.sqrt(np.sum(psi**2))), float(lam), len(np.unique(g_l))


def ppi_diff(a: tuple, b: tuple, *, level: float = 0.95) -> tuple[float, float, float]:
    """Difference of two PPI++ means, ``a`` minus ``b`` (each ``(y, yhat, yhat_all)`` as for
    ``ppi_mean``, or with a fourth element, its :class:`Groups`), treating the two systems' estimates
    as **independent**: se = sqrt(se_a² + se_b²), Student's t with min(n_a, n_b) - 1 degrees of freedom
    (n: labels, or rated clusters). When both systems ran on the same profiles and their scores correlate
    positively, the true variance of the difference is smaller: the interval is then conservative.
    Returns (estimate, ci_low, ci_high)."""
    ea, sa, _, na = _ppi(*a[:3], None, True, *a[3:])
    eb, sb, _, nb = _ppi(*b[:3], None, True, *b[3:])
    est, se = ea - eb, float(np.hypot(sa, sb))
    z = float(t.ppf(0.5 + level / 2, min(na, nb) - 1))
    return est, est - z * se, est + z * se


def plan_n(width: float, *, sd_human: float, sd_judge: float, corr: float, n_total: int,
           level: float = 0.95, min_n: int = 2) -> int | None:
    """Fewest human labels ``n`` among ``n_total`` judged items for a PPI++ interval (as ``ppi_mean``:
    tuned weight, Student's t) of expected total width ``width``, from the variance formula
    Var = λ²σ_f²/(N−n) + (σ_y² − 2λρσ_yσ_f + λ²σ_f²)/n with the optimal λ = ρσ_y/σ_f / (1 + n/(N−n))
    clipped to [0, 1]. None when even every item labeled is not enough."""
    cov = corr * sd_human * sd_judge
    for n in range(max(min_n, 2), n_total + 1):
        rest = n_total - n
        lam = 0.0 if rest == 0 or sd_judge == 0 else float(np.clip(cov / (sd_judge ** 2 * (1 + n / rest)), 0, 1))
        var = (lam ** 2 * sd_judge ** 2 / rest if rest else 0.0) + (sd_human ** 2 - 2 * lam * cov
                                                                     + lam ** 2 * sd_judge ** 2) / n
        if 2 * float(t.ppf(0.5 + level / 2, n - 1)) * np.sqrt(var) <= width:
            return n
    return None
