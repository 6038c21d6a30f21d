"""Pairwise accuracy with tie calibration (Deutsch et al., 2023).

Over pairs of items, a metric (here a judge) *agrees* with the gold scores (humans) when
both give the pair the same sign of difference, where the metric's difference counts as a
tie when its absolute value is at most ``ε``; gold ties are exact. Tie calibration picks the
``ε`` that maximises this accuracy over every candidate — 0 (exact ties only, the ``sign``
rule) and each distinct absolute metric difference — so a metric is not punished for never
producing exact ties. Equal accuracies are resolved to the smallest ``ε``.

Pairs are all item pairs, or with ``groups`` only the pairs inside a group (e.g. the
systems of one profile, as MIPSA). Items with a NaN on either side are left out.
"""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel

from .exact import snap


class TieCalibration(BaseModel):
    accuracy: float  # at the calibrated epsilon; NaN without pairs
    epsilon: float
    accuracy_exact_ties: float  # epsilon = 0
    n_pairs: int


def _pairs(n: int, groups: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    i, j = np.triu_indices(n, k=1)
    if groups is not None:
        same = groups[i] == groups[j]
        i, j = i[same], j[same]
    return i, j


def accuracy_at(metric: np.ndarray, gold: np.ndarray, epsilon: float, groups: np.ndarray | None = None) -> float:
    """Pairwise accuracy when metric differences with ``|d| <= epsilon`` are ties (the definition)."""
    m, g, grp = _clean(metric, gold, groups)
    i, j = _pairs(len(m), grp)
    if len(i) == 0:
        return float("nan")
    dm = m[i] - m[j]
    sm = np.where(np.abs(dm) <= epsilon, 0.0, np.sign(dm))
    return float(np.mean(sm == np.sign(g[i] - g[j])))


def _clean(metric: np.ndarray, gold: np.ndarray, groups: np.ndarray | None) -> tuple[np.ndarray, np.ndarray,
                                                                                   np.ndarray | None]:
    m = snap(np.asarray(metric, dtype=float))
    g = snap(np.asarray(gold, dtype=float))
    keep = np.isfinite(m) & np.isfinite(g)
    grp = None if groups is None else np.asarray(groups)[keep]
    return m[keep], g[keep], grp


def tie_calibrated_accuracy(metric: np.ndarray, gold: np.ndarray, groups: np.ndarray | None = None) -> TieCalibration:
    """The best pairwise accuracy over tie thresholds ``ε`` and the ``ε`` that reaches it."""
    m, g, grp = _clean(metric, gold, groups)
    i, j = _pairs(len(m), grp)
    if len(i) == 0:
        nan = float("nan")
        return TieCalibration(accuracy=nan, epsilon=nan, accuracy_exact_ties=nan, n_pairs=0)
    dm = m[i] - m[j]
    sg = np.sign(g[i] - g[j])
    size = np.abs(dm)
    order = np.argsort(size, kind="stable")
    size = size[order]
    tie_ok = (sg == 0)[order].astype(np.int64)  # agrees if the metric ties the pair
    sign_ok = ((np.sign(dm) == sg) & (dm != 0))[order].astype(np.int64)  # agrees if it does not
    candidates = np.concatenate([[0.0], np.unique(size)])
    cut = np.searchsorted(size, candidates, side="right")  # pairs [0, cut) are ties
    tie_cum = np.concatenate([[0], np.cumsum(tie_ok)])
    sign_cum = np.concatenate([[0], np.cumsum(sign_ok)])
    acc = (tie_cum[cut] + sign_cum[-1] - sign_cum[cut]) / len(size)
    best = int(np.argmax(acc))  # first maximum = smallest epsilon
    return TieCalibration(accuracy=float(acc[best]), epsilon=float(candidates[best]),
                          accuracy_exact_ties=float(acc[0]), n_pairs=len(size))
