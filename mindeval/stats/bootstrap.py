"""Percentile bootstrap confidence intervals for means, vectorised over resamples.

A resample is drawn as a row of counts (how often each item is picked, summing to
``n``); the resampled means of all columns are then one matrix product
``counts @ values / n``. This is exact (the same as indexing with replacement) and
avoids materialising ``resamples × n × columns`` arrays.
"""

from __future__ import annotations

import warnings

import numpy as np


def resample_counts(n: int, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """``(resamples, n)`` float matrix of bootstrap counts (rows sum to ``n``)."""
    if n < 1 or resamples < 1:
        raise ValueError("need n >= 1 and resamples >= 1")
    idx = rng.integers(0, n, size=(resamples, n))
    idx += (np.arange(resamples) * n)[:, None]
    counts = np.bincount(idx.ravel(), minlength=resamples * n)
    return counts.reshape(resamples, n).astype(np.float64)


def bootstrap_mean_ci(
    values: np.ndarray,
    *,
    resamples: int,
    rng: np.random.Generator,
    level: float = 0.95,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Means and percentile CIs of each column of ``values`` (items × columns).

    All columns share the same resampled items (an interaction is resampled with all
    its criteria). Returns ``(mean, low, high)``, each of shape ``(columns,)``; a 1-D
    input gives arrays of shape ``(1,)``. With no items the result is NaN and a
    warning is issued.
    """
    x = np.asarray(values, dtype=np.float64)
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2:
        raise ValueError("values must be 1-D or 2-D (items × columns)")
    n, k = x.shape
    if n == 0:
        warnings.warn("bootstrap of an empty sample: mean and CI are NaN", RuntimeWarning, stacklevel=2)
        nan = np.full(k, np.nan)
        return nan, nan.copy(), nan.copy()
    if not np.all(np.isfinite(x)):
        raise ValueError("values must be finite")
    low, high = percentile_interval((resample_counts(n, resamples, rng) @ x) / n, level)
    return x.mean(axis=0), low, high


def cluster_counts(clusters: np.ndarray, resamples: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Bootstrap counts that resample whole clusters (e.g. a profile with all its systems).

    ``clusters[i]`` is the cluster code (0..k-1) of item ``i``. Returns ``(per_cluster, per_item)``:
    the ``(resamples, k)`` cluster counts and the ``(resamples, n_items)`` counts of each item
    (an item is picked as often as its cluster).
    """
    codes = np.asarray(clusters, dtype=np.int64)
    k = int(codes.max()) + 1 if codes.size else 0
    per_cluster = resample_counts(k, resamples, rng)
    return per_cluster, per_cluster[:, codes]


def percentile_interval(resampled: np.ndarray, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Equal-tailed percentile interval per column of ``(resamples, k)`` resampled statistics.

    Resamples on which a statistic is undefined (NaN) are left out of its column; a column
    with no finite resample gives NaN.
    """
    if not 0 < level < 1:
        raise ValueError("level must be between 0 and 1")
    tail = (1.0 - level) / 2.0 * 100.0
    rows = np.ascontiguousarray(np.asarray(resampled, dtype=np.float64).T)  # sort along contiguous rows
    if rows.ndim == 1:
        rows = rows[None, :]
    if np.isnan(rows).any():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            low, high = np.nanpercentile(rows, [tail, 100.0 - tail], axis=1)
        return low, high
    low, high = np.percentile(rows, [tail, 100.0 - tail], axis=1)
    return low, high
