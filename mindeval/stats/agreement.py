"""Agreement metrics: Kendall τ, Spearman ρ, MIPSA, Krippendorff α, ICC(2,1) / ICC(2,k), pairwise
accuracy (ordinal scales), Cohen's κ and Fleiss' κ (categorical scales).

Every function takes score vectors aligned on the same interactions; ``NaN`` marks a
missing rating and the pair of vectors is reduced to the interactions both raters
scored. A value that cannot be computed (constant rater, too few interactions, no
profile with two systems) is ``NaN`` with an :class:`AgreementWarning`, never a crash
and never a made-up number.

MIPSA ties (equation (1) of the paper leaves them open), three rules:

* ``"sign"`` (default, equation (1) read literally, and the tie handling of Deutsch et
  al.'s accuracy that footnote 9 cites): a system pair *agrees* when both raters give
  it the same sign of score difference, the sign being -1, 0 or +1. Two raters who both
  tie a pair agree; a pair tied by exactly one rater is a disagreement.
* ``"exclude"``: pairs that either rater ties leave numerator and denominator.
* ``"taub"``: per profile, (Kendall τ-b + 1) / 2 over its systems, and 0.5 when τ-b is
  undefined (a rater gives all of the profile's systems the same score). Without ties
  this equals ``"sign"``; it is the rule that reproduces all 36 published human-human
  MIPSA values of the paper (Tables 3, 13-18), so it is what the authors computed.

Profiles with fewer than two systems rated by both raters have no pair and do not
enter the average over profiles.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Literal

import numpy as np

TauVariant = Literal["b", "c"]
TieRule = Literal["sign", "exclude", "taub"]
TAU_VARIANTS: tuple[str, ...] = ("b", "c")
TIE_RULES: tuple[str, ...] = ("sign", "exclude", "taub")


# Documented minimum (docs/metaeval.md): below 20 shared interactions the 95% interval of a
# Kendall τ around 0.4 is wider than ±0.3, so a figure on fewer is flagged with a warning.
MIN_ITEMS = 20


class AgreementWarning(UserWarning):
    """An agreement value could not be computed and is reported as NaN."""


def _warn(msg: str) -> float:
    warnings.warn(msg, AgreementWarning, stacklevel=3)
    return float("nan")


def _paired(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(x, dtype=float)
    b = np.asarray(y, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"score vectors differ in length ({a.shape} vs {b.shape})")
    keep = ~(np.isnan(a) | np.isnan(b))
    return a[keep], b[keep]


# ------------------------------------------------------------------------- Kendall τ


def kendall_tau(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray, variant: TauVariant = "b") -> float:
    """Kendall τ-b (default) or τ-c over the interactions both raters scored."""
    from scipy.stats import kendalltau

    if variant not in TAU_VARIANTS:
        raise ValueError(f"unknown Kendall variant {variant!r} (b or c)")
    a, b = _paired(x, y)
    if len(a) < 2:
        return _warn(f"Kendall τ needs at least 2 commonly rated interactions, got {len(a)}")
    if np.all(a == a[0]) or np.all(b == b[0]):
        return _warn("Kendall τ is undefined for a constant rater")
    return float(kendalltau(a, b, variant=variant).statistic)


def spearman(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float:
    """Spearman ρ (the correlation of the two raters' mid-ranks) over the interactions both scored."""
    from scipy.stats import spearmanr

    a, b = _paired(x, y)
    if len(a) < 2:
        return _warn(f"Spearman ρ needs at least 2 commonly rated interactions, got {len(a)}")
    if np.all(a == a[0]) or np.all(b == b[0]):
        return _warn("Spearman ρ is undefined for a constant rater")
    return float(spearmanr(a, b).statistic)


# ------------------------------------------------------------------------------ MIPSA


class PairIndex:
    """All within-profile system pairs ``(i, j)``, ``i < j``, of a list of interactions.

    Built once per set of interactions and reused for every pair of raters.
    """

    def __init__(self, profiles: Sequence[object]) -> None:
        codes: dict[object, int] = {}
        groups: list[list[int]] = []
        for pos, p in enumerate(profiles):
            if p not in codes:
                codes[p] = len(groups)
                groups.append([])
            groups[codes[p]].append(pos)
        first: list[int] = []
        second: list[int] = []
        owner: list[int] = []
        for g, members in enumerate(groups):
            for a_pos, i in enumerate(members):
                for j in members[a_pos + 1:]:
                    first.append(i)
                    second.append(j)
                    owner.append(g)
        self.n_items = len(profiles)
        self.n_profiles = len(groups)
        self.item_profile = np.asarray([codes[p] for p in profiles], dtype=np.int64)
        self.i = np.asarray(first, dtype=np.int64)
        self.j = np.asarray(second, dtype=np.int64)
        self.profile = np.asarray(owner, dtype=np.int64)


def mipsa(
    x: Sequence[float] | np.ndarray,
    y: Sequence[float] | np.ndarray,
    profiles: Sequence[object] | PairIndex,
    ties: TieRule = "sign",
) -> float:
    """Mean interaction-level pairwise system accuracy, equation (1) of the paper.

    ``profiles[n]`` names the patient profile of interaction ``n``; systems are the
    interactions sharing a profile. For each profile, the share of its system pairs
    that the two raters order the same way; then the mean over profiles.
    """
    shares = mipsa_profiles(x, y, profiles, ties)
    if shares is None:
        return float("nan")
    return float(np.mean(shares[~np.isnan(shares)]))


def mipsa_profiles(
    x: Sequence[float] | np.ndarray,
    y: Sequence[float] | np.ndarray,
    profiles: Sequence[object] | PairIndex,
    ties: TieRule = "sign",
) -> np.ndarray | None:
    """Each profile's agreement share (MIPSA's summand), NaN for a profile without a counted pair.

    Profiles in :class:`PairIndex` order; ``None`` (with a warning) when no profile has a pair.
    MIPSA is the mean of the finite shares; its bootstrap resamples them (profiles stay whole).
    """
    if ties not in TIE_RULES:
        raise ValueError(f"unknown tie rule {ties!r} (one of {', '.join(TIE_RULES)})")
    idx = profiles if isinstance(profiles, PairIndex) else PairIndex(profiles)
    a = np.asarray(x, dtype=float)
    b = np.asarray(y, dtype=float)
    if not (len(a) == len(b) == idx.n_items):
        raise ValueError("scores and profiles differ in length")
    if len(idx.i) == 0:
        _warn("MIPSA needs a profile with at least 2 systems; none has")
        return None
    da = a[idx.i] - a[idx.j]
    db = b[idx.i] - b[idx.j]
    valid = ~(np.isnan(da) | np.isnan(db))
    sa, sb = np.sign(da), np.sign(db)
    if ties == "exclude":
        valid &= (sa != 0) & (sb != 0)
    if not valid.any():
        _warn("MIPSA has no system pair that both raters scored (after the tie rule)")
        return None
    n_pairs = np.bincount(idx.profile, weights=valid, minlength=idx.n_profiles)
    counted = n_pairs > 0
    shares = np.full(idx.n_profiles, np.nan)
    if ties == "taub":
        shares[counted] = _taub_accuracy(sa, sb, valid, idx, n_pairs)[counted]
        return shares
    agree = (sa == sb) & valid
    n_agree = np.bincount(idx.profile, weights=agree, minlength=idx.n_profiles)
    shares[counted] = n_agree[counted] / n_pairs[counted]
    return shares


def _taub_accuracy(sa: np.ndarray, sb: np.ndarray, valid: np.ndarray, idx: PairIndex, n0: np.ndarray) -> np.ndarray:
    """Per profile (τ-b + 1) / 2 from pair signs; 0.5 where τ-b is undefined."""
    prod = np.where(valid, sa * sb, 0.0)
    conc = np.bincount(idx.profile, weights=prod > 0, minlength=idx.n_profiles)
    disc = np.bincount(idx.profile, weights=prod < 0, minlength=idx.n_profiles)
    tied_a = np.bincount(idx.profile, weights=valid & (sa == 0), minlength=idx.n_profiles)
    tied_b = np.bincount(idx.profile, weights=valid & (sb == 0), minlength=idx.n_profiles)
    denom = np.sqrt((n0 - tied_a) * (n0 - tied_b))
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = np.where(denom > 0, (conc - disc) / np.where(denom > 0, denom, 1.0), 0.0)
    return (tau + 1.0) / 2.0


def pairwise_accuracy(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray, ties: TieRule = "sign") -> float:
    """System-level pairwise accuracy between two leaderboards (Kocmi et al., 2021).

    ``x`` and ``y`` are the two leaderboards' scores of the same systems; the share of
    system pairs ordered the same way, with the MIPSA tie rule.
    """
    from .exact import snap
    from .ranking import pairwise_accuracy as leaderboard_pairwise_accuracy

    a, b = _paired(x, y)
    if len(a) < 2:
        return _warn(f"pairwise accuracy needs at least 2 systems on both leaderboards, got {len(a)}")
    if ties == "sign":  # the one implementation, shared with `mindeval leaderboard --compare-to`
        keys = [str(i) for i in range(len(a))]
        return leaderboard_pairwise_accuracy(dict(zip(keys, a, strict=True)), dict(zip(keys, b, strict=True))).accuracy
    return mipsa(snap(a), snap(b), [0] * len(a), ties=ties)


# ------------------------------------------------------------------ Krippendorff α


def krippendorff_alpha(
    data: np.ndarray | Sequence[Sequence[float]], level: Literal["nominal", "ordinal", "interval"]
) -> float:
    """Krippendorff's α of a raters × interactions matrix (NaN = missing).

    Guarded for the cases where the ``krippendorff`` package raises: fewer than two
    distinct values, or no interaction rated by two raters.
    """
    import krippendorff

    m = np.asarray(data, dtype=float)
    if m.ndim != 2 or m.shape[0] < 2:
        raise ValueError("Krippendorff's α needs a raters × interactions matrix with ≥ 2 raters")
    pairable = (~np.isnan(m)).sum(axis=0) >= 2
    if not pairable.any():
        return _warn("Krippendorff's α needs an interaction rated by at least 2 raters")
    m = m[:, pairable]
    values = np.unique(m[~np.isnan(m)])
    if len(values) < 2:
        return _warn("Krippendorff's α is undefined when every rating is identical")
    return float(krippendorff.alpha(reliability_data=m, level_of_measurement=level, value_domain=values))


# --------------------------------------------------------------------- Cohen's and Fleiss' κ


def _kappa(observed: float, expected: float, what: str) -> float:
    if np.isclose(expected, 1.0):
        return _warn(f"{what} is undefined when chance agreement is 1 (every rating in one category)")
    return float((observed - expected) / (1.0 - expected))


def cohen_kappa(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float:
    """Cohen's κ of two raters' categories over the interactions both rated (Cohen 1960).

    Categories are the values either rater used; chance agreement is the product of the
    two raters' own category shares. As scikit-learn's ``cohen_kappa_score`` on any number of
    interactions (one the raters disagree on: κ = 0); NaN when chance agreement is 1.
    """
    a, b = _paired(x, y)
    if len(a) < 1:
        return _warn("Cohen's κ needs a commonly rated interaction, got none")
    cats = np.unique(np.concatenate([a, b]))
    pa = (a[:, None] == cats).mean(axis=0)
    pb = (b[:, None] == cats).mean(axis=0)
    return _kappa(float(np.mean(a == b)), float(pa @ pb), "Cohen's κ")


def fleiss_kappa(data: np.ndarray | Sequence[Sequence[float]]) -> float:
    """Fleiss' κ of a raters × interactions matrix (Fleiss 1971), over the interactions
    every rater rated (a column with a NaN is left out)."""
    m = np.asarray(data, dtype=float)
    if m.ndim != 2 or m.shape[0] < 2:
        raise ValueError("Fleiss' κ needs a raters × interactions matrix with ≥ 2 raters")
    m = m[:, ~np.isnan(m).any(axis=0)]
    n_raters, n_items = m.shape
    if n_items < 1:
        return _warn("Fleiss' κ needs an interaction rated by every rater; none is")
    cats = np.unique(m)
    counts = (m[:, :, None] == cats).sum(axis=0)  # items × categories
    per_item = ((counts * (counts - 1)).sum(axis=1)) / (n_raters * (n_raters - 1))
    shares = counts.sum(axis=0) / (n_items * n_raters)
    return _kappa(float(per_item.mean()), float(shares @ shares), "Fleiss' κ")


# ------------------------------------------------------- intraclass correlation (ICC)


IccForm = Literal["single", "average"]


def icc_from_mean_squares(ms_items: np.ndarray, ms_raters: np.ndarray, ms_error: np.ndarray, n: np.ndarray | float,
                          k: int, form: IccForm) -> np.ndarray:
    """ICC(2,1) (``single``) or ICC(2,k) (``average``), two-way random effects, absolute agreement
    (Shrout & Fleiss 1979; McGraw & Wong 1996), from the two-way ANOVA mean squares of ``n`` items."""
    with np.errstate(invalid="ignore", divide="ignore"):
        if form == "single":
            return (ms_items - ms_error) / (ms_items + (k - 1) * ms_error + k * (ms_raters - ms_error) / n)
        return (ms_items - ms_error) / (ms_items + (ms_raters - ms_error) / n)


def icc(data: np.ndarray | Sequence[Sequence[float]], form: IccForm = "single") -> float:
    """ICC(2,1) or ICC(2,k) of a raters × interactions matrix, on the interactions every rater scored."""
    m = np.asarray(data, dtype=float)
    m = m[:, ~np.isnan(m).any(axis=0)]
    k, n = m.shape
    if k < 2 or n < 2:
        return _warn(f"ICC needs 2 raters on at least 2 commonly rated interactions, got {k} on {n}")
    grand = m.mean()
    ss_items = k * ((m.mean(axis=0) - grand) ** 2).sum()
    ss_raters = n * ((m.mean(axis=1) - grand) ** 2).sum()
    ss_error = ((m - grand) ** 2).sum() - ss_items - ss_raters
    if ss_items + ss_raters + ss_error <= 0:
        return _warn("ICC is undefined when every score is the same")
    return float(icc_from_mean_squares(np.float64(ss_items / (n - 1)), np.float64(ss_raters / (k - 1)),
                                       np.float64(ss_error / ((n - 1) * (k - 1))), n, k, form))


# --------------------------------------------------------------------------- quartiles


def quartiles(values: Sequence[float] | np.ndarray) -> list[float]:
    """``[q1, median, q3]`` over repeated runs (linear interpolation), NaNs ignored."""
    v = np.asarray(values, dtype=float)
    v = v[~np.isnan(v)]
    if len(v) == 0:
        return [float("nan")] * 3
    return [float(q) for q in np.percentile(v, [25, 50, 75])]
