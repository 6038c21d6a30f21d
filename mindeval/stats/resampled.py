"""Agreement statistics on bootstrap resamples, vectorised over resamples.

A resample is a row of counts (how often each interaction, or each profile, is drawn);
every function here takes a ``(resamples, n)`` count matrix and returns one value per
resample. With a row of ones each equals the point implementation in
:mod:`mindeval.stats.agreement` (tested), so there is one definition of each statistic and this
module only evaluates it on many weighted copies at once:

* Kendall τ-b / τ-c as quadratic forms of the counts over the pair-sign matrices (a drawn
  twice interaction is a tie with itself in both raters, as in the expanded sample);
* Spearman ρ as the count-weighted correlation of each resample's count-weighted mid-ranks;
* Krippendorff's α (nominal, ordinal, interval) from count-weighted coincidence matrices;
  the ordinal distance is recomputed from each resample's value frequencies;
* Cohen's and Fleiss' κ from count-weighted category shares;
* ICC(2,1) / ICC(2,k) from count-weighted two-way ANOVA sums of squares;
* MIPSA as the count-weighted mean of the profiles' shares (profiles are resampled whole).

:class:`Resampler` holds one seeded draw of interaction counts and of profile counts for
a list of interactions; every cell, judge pair and verdict of a comparison uses the same
draw, so differences between two judges are paired.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from .agreement import (
    IccForm,
    PairIndex,
    TauVariant,
    TieRule,
    icc_from_mean_squares,
    mipsa_profiles,
)
from .bootstrap import cluster_counts, percentile_interval, resample_counts


class Clusters(NamedTuple):
    """What is drawn whole in a multi-session study: ``chains[i]``, the code of interaction ``i``'s
    conversation (member × system: all its sessions), and ``members[p]``, the member code of profile
    unit ``p`` (the ``pairs``' profile codes: a member × session)."""

    chains: np.ndarray
    members: np.ndarray


class Resampler:
    """One seeded bootstrap draw over the interactions (and, whole, over the profiles) of a panel.

    With ``clusters`` (a multi-session study) whole conversations are drawn instead of interactions
    and whole members instead of profile units, so a member's sessions are never drawn apart; with
    one session per member (codes ``0..n-1``) that is the same draw, number for number."""

    def __init__(self, pairs: PairIndex, profile_codes: np.ndarray, resamples: int, rng: np.random.Generator,
                 level: float = 0.95, clusters: Clusters | None = None) -> None:
        self.pairs = pairs
        self.resamples = resamples
        self.level = level
        if clusters is None:
            self.items = resample_counts(pairs.n_items, resamples, rng)
            self.profiles, self.profile_items = cluster_counts(profile_codes, resamples, rng)
        else:
            self.items = cluster_counts(clusters.chains, resamples, rng)[1]
            self.profiles = cluster_counts(clusters.members, resamples, rng)[1]
            self.profile_items = self.profiles[:, np.asarray(profile_codes, dtype=np.int64)]

    def interval(self, resampled: np.ndarray) -> tuple[float, float]:
        """Percentile interval of one statistic's resampled values (NaN resamples left out)."""
        low, high = percentile_interval(np.asarray(resampled, dtype=float)[:, None], self.level)
        return float(low[0]), float(high[0])


def _keep(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return ~(np.isnan(x) | np.isnan(y))


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def kendall_tau(x: np.ndarray, y: np.ndarray, counts: np.ndarray, variant: TauVariant = "b") -> np.ndarray:
    """Kendall τ of ``x`` and ``y`` on every resample (NaN where a rater is constant)."""
    keep = _keep(x, y)
    a, b, c = x[keep], y[keep], counts[:, keep]
    sx = np.sign(a[:, None] - a[None, :])
    sy = np.sign(b[:, None] - b[None, :])
    k = len(a)
    both = c @ np.hstack([sx * sy, np.abs(sx), np.abs(sy)])  # one product for the three quadratic forms
    num, tx, ty = (np.einsum("ri,ri->r", both[:, i * k:(i + 1) * k], c) for i in range(3))
    if variant == "b":
        return _ratio(num, np.sqrt(tx * ty))  # num = 2 (concordant - discordant)
    n = c.sum(axis=1)
    classes = np.minimum(_distinct(a, c), _distinct(b, c)).astype(float)
    den = n**2 * (classes - 1) / np.where(classes > 0, classes, 1.0)
    return _ratio(num, den)


def _midranks(v: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Each value's mid-rank in every resample (resamples × len(v)): the ranks its drawn copies
    hold in the expanded sample, averaged (ties share their mean rank)."""
    values, code = np.unique(v, return_inverse=True)
    per_value = counts @ (code[:, None] == np.arange(len(values))[None, :]).astype(float)
    mid = np.cumsum(per_value, axis=1) - per_value / 2.0 + 0.5
    return mid[:, code]


def spearman(x: np.ndarray, y: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Spearman ρ of ``x`` and ``y`` on every resample (NaN where a rater is constant)."""
    keep = _keep(x, y)
    a, b, c = x[keep], y[keep], counts[:, keep]
    ra, rb = _midranks(a, c), _midranks(b, c)
    n = c.sum(axis=1, keepdims=True)
    da = ra - _ratio((c * ra).sum(axis=1, keepdims=True), n)
    db = rb - _ratio((c * rb).sum(axis=1, keepdims=True), n)
    cov, va, vb = ((c * u * v).sum(axis=1) for u, v in ((da, db), (da, da), (db, db)))
    return _ratio(cov, np.sqrt(va * vb))


def _distinct(v: np.ndarray, counts: np.ndarray) -> np.ndarray:
    values = np.unique(v)
    member = (v[:, None] == values[None, :]).astype(float)
    return ((counts @ member) > 0).sum(axis=1)


def krippendorff_alpha(data: np.ndarray, level: str, counts: np.ndarray) -> np.ndarray:
    """Krippendorff's α of a raters × interactions matrix (NaN = missing) on every resample.

    ``α = 1 − (n − 1) Σ o_ck δ_ck / Σ n_c n_k δ_ck`` with the coincidences ``o`` and value
    totals ``n_c`` summed over the drawn units, each as often as it is drawn.
    """
    m = np.asarray(data, dtype=float)
    pairable = (~np.isnan(m)).sum(axis=0) >= 2
    m, c = m[:, pairable], counts[:, pairable]
    values = np.unique(m[~np.isnan(m)])
    if len(values) < 2:
        return np.full(counts.shape[0], np.nan)
    code = np.where(np.isnan(m), -1, np.searchsorted(values, np.nan_to_num(m)))
    per_unit = np.stack([(code == v).sum(axis=0) for v in range(len(values))], axis=1).astype(float)
    m_u = per_unit.sum(axis=1)
    # coincidence entries (unit, c, k, weight): every ordered pair of two raters' values in a unit
    unit, first, second = [], [], []
    raters = m.shape[0]
    for i in range(raters):
        for j in range(raters):
            if i != j:
                ok = (code[i] >= 0) & (code[j] >= 0)
                unit.append(np.flatnonzero(ok))
                first.append(code[i][ok])
                second.append(code[j][ok])
    u, cc, kk = np.concatenate(unit), np.concatenate(first), np.concatenate(second)
    w = 1.0 / (m_u[u] - 1.0)
    n_c = c @ per_unit  # resamples × values
    n = n_c.sum(axis=1)
    if level == "nominal":
        d_o = c @ np.bincount(u, weights=w * (cc != kk), minlength=len(m_u))
        d_e = n**2 - (n_c**2).sum(axis=1)
    elif level == "interval":
        d_o = c @ np.bincount(u, weights=w * (values[cc] - values[kk]) ** 2, minlength=len(m_u))
        s1 = n_c @ values
        d_e = 2.0 * (n * (n_c @ values**2) - s1**2)
    elif level == "ordinal":
        # the ordinal distance is the interval distance between mid-ranks T_c = cumsum(n)_c - n_c / 2
        mid = np.cumsum(n_c, axis=1) - n_c / 2.0
        d_o = np.einsum("re,re->r", c[:, u], w * (mid[:, cc] - mid[:, kk]) ** 2)
        d_e = 2.0 * (n * np.einsum("rc,rc->r", n_c, mid**2) - np.einsum("rc,rc->r", n_c, mid) ** 2)
    else:
        raise ValueError(f"unknown level {level!r}")
    return 1.0 - (n - 1.0) * _ratio(d_o, d_e)


def cohen_kappa(x: np.ndarray, y: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Cohen's κ on every resample."""
    keep = _keep(x, y)
    a, b, c = x[keep], y[keep], counts[:, keep]
    cats = np.unique(np.concatenate([a, b]))
    n = c.sum(axis=1)
    pa = _ratio(c @ (a[:, None] == cats).astype(float), n[:, None])
    pb = _ratio(c @ (b[:, None] == cats).astype(float), n[:, None])
    observed = _ratio(c @ (a == b).astype(float), n)
    expected = (pa * pb).sum(axis=1)
    out = _ratio(observed - expected, 1.0 - expected)
    return np.where(np.isclose(expected, 1.0), np.nan, out)


def fleiss_kappa(data: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Fleiss' κ (interactions every rater rated) on every resample."""
    m = np.asarray(data, dtype=float)
    full = ~np.isnan(m).any(axis=0)
    m, c = m[:, full], counts[:, full]
    raters = m.shape[0]
    cats = np.unique(m)
    per_item = (m[:, :, None] == cats).sum(axis=0).astype(float)  # items × categories
    agree = (per_item * (per_item - 1)).sum(axis=1) / (raters * (raters - 1))
    n = c.sum(axis=1)
    observed = _ratio(c @ agree, n)
    shares = _ratio(c @ per_item, (n * raters)[:, None])
    expected = (shares**2).sum(axis=1)
    out = _ratio(observed - expected, 1.0 - expected)
    return np.where(np.isclose(expected, 1.0), np.nan, out)


def icc(data: np.ndarray, counts: np.ndarray, form: IccForm = "single") -> np.ndarray:
    """ICC(2,1) / ICC(2,k) of a raters × interactions matrix on every resample (complete interactions;
    the two-way ANOVA sums of squares weighted by the counts)."""
    m = np.asarray(data, dtype=float)
    keep = ~np.isnan(m).any(axis=0)
    m, c = m[:, keep], np.asarray(counts, dtype=float)[:, keep]
    k = m.shape[0]
    n = c.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        item_mean = m.mean(axis=0)  # (items,)
        grand = (c @ item_mean) / n  # (B,)
        rater_mean = (c @ m.T) / n[:, None]  # (B, k)
        ss_items = k * (c * (item_mean[None, :] - grand[:, None]) ** 2).sum(axis=1)
        ss_raters = n * ((rater_mean - grand[:, None]) ** 2).sum(axis=1)
        ss_total = (c[:, None, :] * (m[None, :, :] - grand[:, None, None]) ** 2).sum(axis=(1, 2))
        ss_error = ss_total - ss_items - ss_raters
        out = icc_from_mean_squares(ss_items / (n - 1), ss_raters / (k - 1), ss_error / ((n - 1) * (k - 1)), n, k,
                                    form)
    return np.where((n >= 2) & (ss_total > 0), out, np.nan)


def mipsa(x: np.ndarray, y: np.ndarray, pairs: PairIndex, profile_counts: np.ndarray,
          ties: TieRule = "sign") -> np.ndarray:
    """MIPSA on every resample of whole profiles (``profile_counts``: resamples × profiles)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        shares = mipsa_profiles(x, y, pairs, ties)
    if shares is None:
        return np.full(profile_counts.shape[0], np.nan)
    ok = ~np.isnan(shares)
    c = profile_counts[:, ok]
    return _ratio(c @ shares[ok], c.sum(axis=1))


def median_over_runs(per_run: Sequence[np.ndarray]) -> np.ndarray:
    """Per resample, the median over a judge's runs (the statistic reported for repeated judges)."""
    stack = np.vstack(per_run)
    if stack.shape[0] == 1:
        return stack[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmedian(stack, axis=0)


def leaderboard_accuracy(a: np.ndarray, b: np.ndarray, system: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """System-level pairwise accuracy (sign rule) of two raters' leaderboards on every resample.

    ``a``, ``b``: per-interaction scores; ``system[i]``: the system code of interaction ``i``;
    ``counts``: interaction counts of the draw (whole profiles for Table 5). A leaderboard is each
    system's count-weighted mean; a pair agrees when both leaderboards give it the same sign
    (differences within 1e-12 are ties).
    """
    codes = np.asarray(system, dtype=np.int64)
    k = int(codes.max()) + 1
    member = (codes[:, None] == np.arange(k)[None, :]).astype(float)

    def board(x: np.ndarray) -> np.ndarray:
        ok = np.isfinite(x)
        return _ratio(counts @ (member * np.where(ok, x, 0.0)[:, None]), counts @ (member * ok[:, None]))

    ba, bb = board(a), board(b)
    agree, total = np.zeros(counts.shape[0]), np.zeros(counts.shape[0])
    for s, t in itertools.combinations(range(k), 2):
        da, db = ba[:, s] - ba[:, t], bb[:, s] - bb[:, t]
        ok = np.isfinite(da) & np.isfinite(db)
        sa = np.where(np.abs(da) <= 1e-12, 0.0, np.sign(da))
        sb = np.where(np.abs(db) <= 1e-12, 0.0, np.sign(db))
        agree += ok & (sa == sb)
        total += ok
    return _ratio(agree, total)
