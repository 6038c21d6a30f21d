"""Exact means: scores are means of small integers, so compare them as the rationals they are.

A float mean of integer scores depends on summation order in its last bits (averaging the
same three annotators in another order can turn a tie into a win). :func:`snap` maps every
value to the nearest fraction with a denominator of at most :data:`MAX_DENOMINATOR` and
back to the float nearest that fraction, so equal rationals become equal floats whatever
order they were summed in. This is exact for every mean MindEval forms (denominators are
products of annotator, axis, sub-axis, judge-sample and interaction counts, far below 10^6;
float error is about 1e-15, far below the 1e-12 gap between such fractions).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

MAX_DENOMINATOR = 10**6


def snap_value(x: float) -> float:
    """One value as the float of its exact rational (non-finite values unchanged)."""
    return float(Fraction(x).limit_denominator(MAX_DENOMINATOR)) if math.isfinite(x) else x


def snap(values: np.ndarray | list[float]) -> np.ndarray:
    """Every value as the float of its exact rational (NaN stays NaN); same shape."""
    arr = np.array(values, dtype=np.float64)
    ok = np.isfinite(arr)
    if ok.any():
        uniq, inverse = np.unique(arr[ok], return_inverse=True)
        arr[ok] = np.array([snap_value(float(u)) for u in uniq])[inverse]
    return arr


def exact_mean(values: np.ndarray, axis: int = 0) -> np.ndarray:
    """NaN-skipping mean along ``axis``, snapped (NaN where every value is NaN)."""
    arr = np.asarray(values, dtype=np.float64)
    count = np.sum(~np.isnan(arr), axis=axis)
    total = np.nansum(snap(arr), axis=axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        return snap(np.where(count > 0, total / np.where(count > 0, count, 1), np.nan))
