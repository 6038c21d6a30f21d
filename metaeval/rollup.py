"""Sub-axis ratings → the five axis scores → the average score (paper footnote 7).

An axis score is the mean of the sub-axes of that axis that were rated; ``0`` and
``NaN`` mean "not rated". An axis with no rated sub-axis has no score (NaN). The
average score is the mean of the five axis scores and exists only when all five do:
averaging fewer axes would be a different quantity, so such a rating gets NaN and
the caller is warned with a count.

``zeros="zero"`` is the paper-compatible mode: the authors averaged a ``0`` in as a
score of zero (``docs/criteria-mapping.md`` §3), which lowers the axes of affected
ratings but is what their published tables report.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from mindeval.errors import MindEvalError
from mindeval.records import AXES

AVERAGE = "average"
ALL_AXES: tuple[str, ...] = (*AXES, AVERAGE)
RATING_COLUMNS: tuple[str, ...] = ("interaction_id", "profile_id", "system", "rater", "subaxis_id", "score")
KEY = ["interaction_id", "profile_id", "system", "rater"]
ZERO_POLICIES: tuple[str, ...] = ("missing", "zero")


class RollupWarning(UserWarning):
    """Some ratings lack an axis, so their average score is NaN."""


def rollup(
    ratings: pd.DataFrame, subaxis_axis: dict[str, str], *, source: str = "<ratings>", zeros: str = "missing"
) -> pd.DataFrame:
    """Roll a frame of sub-axis ratings up to axis scores.

    ``ratings`` has the columns :data:`RATING_COLUMNS`; ``subaxis_axis`` maps each
    sub-axis id to its axis code. Returns one row per (interaction, rater, axis) with
    the columns ``interaction_id, profile_id, system, rater, axis, score``, where
    ``axis`` runs over the five axes and ``"average"``.
    """
    if zeros not in ZERO_POLICIES:
        raise ValueError(f"zeros must be one of {ZERO_POLICIES}, got {zeros!r}")
    missing = [c for c in RATING_COLUMNS if c not in ratings.columns]
    if missing:
        raise MindEvalError(f"ratings lack column(s) {', '.join(missing)}", path=source)
    unknown = sorted(set(ratings["subaxis_id"]) - set(subaxis_axis))
    if unknown:
        raise MindEvalError(
            f"unknown sub-axis id(s) {', '.join(map(str, unknown))}; known: {', '.join(sorted(subaxis_axis))}",
            path=source, field="subaxis_id",
        )
    bad_axes = sorted(set(subaxis_axis.values()) - set(AXES))
    if bad_axes:
        raise MindEvalError(f"sub-axes map to unknown axes {bad_axes}; axes are {AXES}", path=source)
    frame = ratings.loc[:, list(RATING_COLUMNS)].copy()
    score = pd.to_numeric(frame["score"], errors="coerce").astype(float)
    frame["score"] = score if zeros == "zero" else score.where(score != 0)
    out_of_range = frame["score"].notna() & ~frame["score"].between(0 if zeros == "zero" else 1, 6)
    if out_of_range.any():
        row = frame[out_of_range].iloc[0]
        raise MindEvalError(
            f"score {row['score']:g} of rater {row['rater']} on {row['interaction_id']} is outside 1-6 (0 = not rated)",
            path=source, field=str(row["subaxis_id"]),
        )
    frame["axis"] = frame["subaxis_id"].map(subaxis_axis)
    dup = frame.duplicated(subset=[*KEY, "subaxis_id"])
    if dup.any():
        row = frame[dup].iloc[0]
        raise MindEvalError(
            f"rater {row['rater']} rated sub-axis {row['subaxis_id']} of {row['interaction_id']} twice",
            path=source, field=str(row["subaxis_id"]),
        )
    axis = frame.groupby([*KEY, "axis"], sort=False, dropna=False)["score"].mean().unstack("axis")
    axis = axis.reindex(columns=list(AXES))
    complete = axis.notna().all(axis=1)
    axis[AVERAGE] = axis[list(AXES)].mean(axis=1).where(complete)
    n_incomplete = int((~complete).sum())
    if n_incomplete:
        warnings.warn(
            f"{source}: {n_incomplete} rating(s) have an axis with no rated sub-axis; "
            "their average score is NaN",
            RollupWarning, stacklevel=2,
        )
    long = axis.reset_index().melt(id_vars=KEY, value_vars=list(ALL_AXES), var_name="axis", value_name="score")
    long["score"] = long["score"].astype(float)
    return long


def judge_axis_frame(rows: pd.DataFrame) -> pd.DataFrame:
    """Add the ``average`` axis (mean of the five) to a wide frame of judge axis scores."""
    out = rows.copy()
    vals = out[list(AXES)].astype(float)
    out[AVERAGE] = vals.mean(axis=1).where(vals.notna().all(axis=1), np.nan)
    return out
