"""The precision of written figures: the one place output files round their floats.

Agreement files (``agreement.json``, ``agreement.csv``, ``calibration.csv``) and leaderboard
files (``leaderboard.json`` and its CSVs) give every float to :data:`DECIMALS` decimal places.
The last bits of a float depend on the CPU's BLAS kernels and thread count (summation
order); six decimals are far below any difference a reader acts on, and make the files the
same on any x86-64 machine (docs/metaeval.md, docs/leaderboard.md).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

DECIMALS = 6


def rounded(x: float) -> float:
    """``x`` to :data:`DECIMALS` places; ``-0.0`` as ``0.0``; NaN and infinities unchanged."""
    return round(float(x), DECIMALS) + 0.0 if math.isfinite(x) else float(x)


def written(obj: Any) -> Any:
    """A JSON-safe copy as output files write it: floats :func:`rounded`, NaN and infinities
    as null, numpy scalars as Python values, tuples as lists, keys as strings."""
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float):
        return rounded(obj) if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): written(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [written(v) for v in obj]
    return obj


def written_cell(value: Any) -> Any:
    """One CSV cell as output files write it: floats :func:`rounded` (NaN kept: an empty
    cell), lists and tuples of floats rounded inside."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return rounded(value)
    if isinstance(value, list | tuple):
        return [written_cell(v) for v in value]
    return value
