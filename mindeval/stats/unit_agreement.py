"""Agreement on categorical or ordinal units with bootstrap intervals, computed from additive counts.

Every statistic here is a function of sums over items: a pair's confusion matrix (Cohen's κ,
weighted κ, exact agreement, precision/recall/F1), the coincidence matrix of Krippendorff's α, the
category counts of Fleiss' κ. Each item's contribution is a row of a matrix ``X`` (items × cells);
a bootstrap draw is a row of item counts ``W`` (an item counted as often as its cluster, e.g. its
conversation, was drawn), so ``W @ X`` gives every draw's sums at once and the statistic is
evaluated on all of them together. Row 0 of ``W`` is all ones: the point estimate.

Values are category codes ``0..k-1`` (ordinal: in scale order), NaN = not rated. The figures
equal scikit-learn's ``cohen_kappa_score`` / ``precision_recall_fscore_support``, the
``krippendorff`` package and statsmodels' ``fleiss_kappa`` (checked in ``tests/stats``).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from .bootstrap import percentile_interval, resample_counts

Weights = Literal["none", "quadratic"]


def draw_weights(clusters: np.ndarray, per_cluster: np.ndarray) -> np.ndarray:
    """Item counts ``(1 + resamples, items)`` from cluster counts ``(resamples, k)``: row 0 all ones."""
    codes = np.asarray(clusters, dtype=np.int64)
    return np.vstack([np.ones((1, len(codes))), per_cluster[:, codes]])


def cluster_draws(k: int, resamples: int, seed: int) -> np.ndarray:
    """``(resamples, k)`` counts of ``k`` clusters drawn with replacement (one draw shared by every field);
    no rows for ``resamples`` 0 (``--resamples 0``: point values only)."""
    if resamples < 1 or k < 1:
        return np.zeros((0, max(k, 0)))
    return resample_counts(k, resamples, np.random.default_rng(seed))


def interval(values: np.ndarray, level: float) -> tuple[float, float, float]:
    """``(point, low, high)`` from per-draw values whose element 0 is the point estimate."""
    if len(values) < 2:
        return float(values[0]), float("nan"), float("nan")
    low, high = percentile_interval(values[1:, None], level)
    return float(values[0]), float(low[0]), float(high[0])


def _onehot_pairs(a: np.ndarray, b: np.ndarray, k: int) -> np.ndarray:
    ok = ~np.isnan(a) & ~np.isnan(b)
    x = np.zeros((len(a), k * k))
    idx = np.where(ok)[0]
    x[idx, a[idx].astype(int) * k + b[idx].astype(int)] = 1.0
    return x


def confusions(w: np.ndarray, a: np.ndarray, b: np.ndarray, k: int) -> np.ndarray:
    """Per draw, the ``k × k`` confusion of raters ``a`` (rows) and ``b`` over items both rated."""
    return (w @ _onehot_pairs(a, b, k)).reshape(len(w), k, k)


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def kappa(conf: np.ndarray, weights: Weights = "none") -> np.ndarray:
    """Cohen's κ (``weights="quadratic"``: weighted by squared distance of the codes) per confusion.

    As scikit-learn's ``cohen_kappa_score``: ``1 − observed / chance`` disagreement on any number of
    items (one item the raters disagree on: κ = 0); NaN only when no chance disagreement is possible
    (both raters used one and the same category, or no item)."""
    k = conf.shape[-1]
    i, j = np.indices((k, k))
    d = (i != j).astype(float) if weights == "none" else (i - j).astype(float) ** 2
    n = conf.sum(axis=(1, 2))
    expected = _ratio(conf.sum(axis=2)[:, :, None] * conf.sum(axis=1)[:, None, :], n[:, None, None])
    obs = (conf * d).sum(axis=(1, 2))
    exp = (expected * d).sum(axis=(1, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where((exp > 0) & (n >= 1), 1.0 - obs / np.where(exp > 0, exp, 1.0), np.nan)


def exact_agreement(conf: np.ndarray) -> np.ndarray:
    """Share of items on which the two raters agree exactly."""
    return _ratio(np.trace(conf, axis1=1, axis2=2), conf.sum(axis=(1, 2)))


def prf(conf: np.ndarray, positive: np.ndarray) -> dict[str, np.ndarray]:
    """Precision, recall and F1 of the row rater (prediction) against the column rater (reference),
    the codes in ``positive`` (a boolean mask over codes) being the positive class."""
    pos = positive.astype(bool)
    tp = conf[:, pos][:, :, pos].sum(axis=(1, 2))
    pred = conf[:, pos, :].sum(axis=(1, 2))
    ref = conf[:, :, pos].sum(axis=(1, 2))
    return {"precision": _ratio(tp, pred), "recall": _ratio(tp, ref), "f1": _ratio(2 * tp, pred + ref)}


def coincidences(w: np.ndarray, m: np.ndarray, k: int) -> np.ndarray:
    """Per draw, Krippendorff's ``k × k`` coincidence matrix of raters × items ``m`` (NaN = missing)."""
    rated = ~np.isnan(m)
    counts = np.stack([((m == c) & rated).sum(axis=0) for c in range(k)], axis=1).astype(float)  # items × k
    mu = counts.sum(axis=1)
    pairs = counts[:, :, None] * counts[:, None, :] - np.einsum("ic,cd->icd", counts, np.eye(k))
    with np.errstate(invalid="ignore", divide="ignore"):
        per_item = np.where((mu >= 2)[:, None, None], pairs / np.where(mu >= 2, mu - 1, 1.0)[:, None, None], 0.0)
    return (w @ per_item.reshape(len(mu), k * k)).reshape(len(w), k, k)


def alpha(coinc: np.ndarray, level: Literal["nominal", "ordinal"]) -> np.ndarray:
    """Krippendorff's α per coincidence matrix (``ordinal``: the rank metric over the codes' order)."""
    k = coinc.shape[-1]
    nc = coinc.sum(axis=2)  # draws × k
    n = nc.sum(axis=1)
    if level == "nominal":
        delta = np.broadcast_to((1.0 - np.eye(k))[None], coinc.shape)
    else:
        cum = np.concatenate([np.zeros((len(nc), 1)), np.cumsum(nc, axis=1)], axis=1)  # cum[:, c] = Σ_{g<c}
        i, j = np.indices((k, k))
        lo, hi = np.minimum(i, j), np.maximum(i, j)
        between = cum[:, hi + 1] - cum[:, lo]
        delta = (between - (nc[:, i] + nc[:, j]) / 2.0) ** 2
    d_obs = (coinc * delta).sum(axis=(1, 2))
    d_exp = (nc[:, :, None] * nc[:, None, :] * delta).sum(axis=(1, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(d_exp > 0, 1.0 - (n - 1) * d_obs / np.where(d_exp > 0, d_exp, 1.0), np.nan)


def fleiss(w: np.ndarray, m: np.ndarray, k: int) -> np.ndarray:
    """Fleiss' κ per draw over the items every rater of ``m`` (raters × items) rated."""
    r = m.shape[0]
    full = ~np.isnan(m).any(axis=0)
    counts = np.stack([(m == c).sum(axis=0) for c in range(k)], axis=1).astype(float) * full[:, None]
    agree = (counts * (counts - 1)).sum(axis=1)
    t = w @ np.column_stack([full.astype(float), agree, counts])
    n_items, p_bar_num, cat = t[:, 0], t[:, 1], t[:, 2:]
    p_bar = _ratio(p_bar_num, n_items * r * (r - 1))
    shares = _ratio(cat, (n_items * r)[:, None])
    pe = (shares**2).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where((pe < 1) & (n_items >= 1), (p_bar - pe) / np.where(pe < 1, 1.0 - pe, 1.0), np.nan)


def majority(m: np.ndarray, severity: np.ndarray) -> tuple[np.ndarray, int]:
    """Per item the most frequent code among the raters (NaN = not rated); a tie goes to the code with the
    higher ``severity`` (``severity[code]``), and a tie between codes of equal severity is NaN (left out).
    Returns the codes and the number of items left out for a tie."""
    out = np.full(m.shape[1], np.nan)
    left_out = 0
    for i in range(m.shape[1]):
        col = m[:, i][~np.isnan(m[:, i])].astype(int)
        if not len(col):
            continue
        counts = np.bincount(col, minlength=len(severity))
        top = np.flatnonzero(counts == counts.max())
        worst = top[severity[top] == severity[top].max()]
        if len(worst) == 1:
            out[i] = worst[0]
        else:
            left_out += 1
    return out, left_out
