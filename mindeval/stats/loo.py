"""Leave-one-out agreement: one rater against the mean of the other raters, averaged exactly.

Ratings are small integers and their means, so the mean of the other raters is formed with
:class:`fractions.Fraction` arithmetic: two items whose means are the same rational are tied
whatever order the raters are summed in (a float sum in another order can split such a tie and
move Kendall τ by a few thousandths). A float input is read as the rational it stands for
(:func:`mindeval.stats.exact.snap_value`'s rule). This is the one implementation of the average
annotator's leave-one-out mean and τ, used by ``metaeval compare`` and the annotation app.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from .agreement import TauVariant, kendall_tau
from .exact import MAX_DENOMINATOR

Value = Fraction | int | float | None


def as_fraction(x: Value) -> Fraction | None:
    """A rating as an exact rational (``None`` / NaN: not rated)."""
    if x is None:
        return None
    if isinstance(x, Fraction | int):
        return Fraction(x)
    return Fraction(x).limit_denominator(MAX_DENOMINATOR) if math.isfinite(x) else None


def exact_means(rows: Sequence[Sequence[Value]]) -> list[Fraction | None]:
    """Per item (column), the mean of the rated values of ``rows`` (``None`` where nobody rated)."""
    out: list[Fraction | None] = []
    for col in zip(*rows, strict=True):
        got = [f for f in map(as_fraction, col) if f is not None]
        out.append(sum(got, Fraction(0)) / len(got) if got else None)
    return out


def others_mean(matrix: np.ndarray | Sequence[Sequence[Value]], left_out: int) -> np.ndarray:
    """The exact mean of every rater but ``left_out`` (raters × items; NaN/None = not rated), as floats
    (NaN where no other rater rated the item). Equal rationals give equal floats."""
    rows = [list(r) for i, r in enumerate(matrix) if i != left_out]
    return np.array([math.nan if m is None else float(m) for m in exact_means(rows)], dtype=float)


def loo_kendall_tau(matrix: np.ndarray | Sequence[Sequence[Value]], left_out: int,
                    variant: TauVariant = "b") -> tuple[float, np.ndarray, np.ndarray]:
    """Kendall τ of rater ``left_out`` against the exact mean of the others, over the items she rated that at
    least one other rated. Returns τ (NaN when undefined) and the two aligned float vectors (for intervals)."""
    own = np.array([math.nan if (f := as_fraction(v)) is None else float(f) for v in matrix[left_out]], dtype=float)
    ref = others_mean(matrix, left_out)
    keep = ~np.isnan(own) & ~np.isnan(ref)
    x, y = own[keep], ref[keep]
    return kendall_tau(x, y, variant), x, y
