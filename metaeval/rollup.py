"""Sub-axis ratings → the axis scores → the average score (paper footnote 7).

An axis score is the mean of the sub-axes of that axis that were rated; ``0`` and
``NaN`` mean "not rated". An axis with no rated sub-axis has no score (NaN). The
average score is the mean of the axis scores and exists only when all of them do:
averaging fewer axes would be a different quantity, so such a rating gets NaN and
the caller is warned with a count.

``zeros="zero"`` is the paper-compatible mode: the authors averaged a ``0`` in as a
score of zero (``docs/criteria-mapping.md`` §3), which lowers the axes of affected
ratings but is what their published tables report.

The axes are the target's (:class:`Dimensions`; MindEval's five by default). On a
categorical scale every axis has exactly one sub-axis (the roll-up is the identity),
a score must be one of the scale's level values (``0`` may be one of them) and only
``NaN`` means "not rated".
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import numpy as np
import pandas as pd

from mindeval.errors import MindEvalError
from mindeval.records import AXES
from mindeval.targets.guidelines import Guidelines

if TYPE_CHECKING:
    from mindeval.records import TargetInfo
    from mindeval.targets import Target

AVERAGE = "average"
ALL_AXES: tuple[str, ...] = (*AXES, AVERAGE)
MINDEVAL = "mindeval"


@dataclass(frozen=True)
class Dimensions:
    """The rated dimensions of a target as the meta-evaluation needs them (default: MindEval)."""

    target: str = MINDEVAL
    axes: tuple[str, ...] = AXES
    kind: Literal["ordinal", "categorical"] = "ordinal"
    values: tuple[int, ...] = tuple(range(1, 7))
    subaxis_axis: dict[str, str] | None = None  # the human form; None: the source's own mapping
    levels: dict[str, int] = field(default_factory=dict)  # level id and label -> value
    titles: dict[str, str] = field(default_factory=dict)  # axis code -> name (reports)
    # The target's declared properties (targets/<name>/target.yaml): the authors' annotation
    # file is in its form (authors_release); its outputs carry no target key (legacy_files).
    authors_release: bool = True
    legacy_files: bool = True

    @property
    def all_axes(self) -> tuple[str, ...]:
        return (*self.axes, AVERAGE)

    @property
    def categorical(self) -> bool:
        return self.kind == "categorical"

    @classmethod
    def from_guidelines(cls, name: str, g: Guidelines) -> Dimensions:
        levels = {key: lv.value for lv in g.levels for key in (lv.id, lv.label)}
        return cls(target=name, axes=g.axis_codes, kind=g.scale_kind,  # type: ignore[arg-type]
                   values=g.score_values(), subaxis_axis={s.id: s.axis for s in g.human_subaxes},
                   levels=levels if g.scale_kind == "categorical" else {},
                   titles={a.code: a.name for a in g.judge_axes}, authors_release=False, legacy_files=False)

    @classmethod
    def of_target(cls, target: Target) -> Dimensions:
        """A loaded target's dimensions: a target in the form of the authors' release (the built-in
        ``mindeval``) has the default ones, with the human form of its own guidelines file (a sub-axis
        added there rolls up into its axis)."""
        if target.manifest.authors_release:
            return cls(target=target.name, legacy_files=target.manifest.legacy_files,
                       subaxis_axis={s.id: s.axis for s in target.guidelines.human_subaxes})
        return cls.from_guidelines(target.name, target.guidelines)

    @classmethod
    def from_info(cls, info: TargetInfo) -> Dimensions:
        """From a run's ``config.json`` target block alone: the human form is taken to have one
        sub-axis per dimension, named by its code."""
        levels = {key: lv.value for lv in info.scale.levels for key in (lv.id, lv.label)}
        return cls(target=info.name, axes=tuple(info.axes), kind=info.scale.kind, values=info.values(),
                   subaxis_axis={a: a for a in info.axes},
                   levels=levels if info.scale.kind == "categorical" else {}, authors_release=False,
                   legacy_files=info.legacy_files)

    def form(self) -> dict[str, str]:
        """The human form: sub-axis id -> axis (MindEval's from its guidelines when not given)."""
        if self.subaxis_axis is not None:
            return self.subaxis_axis
        from mindeval.targets.guidelines import load_guidelines

        return {s.id: s.axis for s in load_guidelines().human_subaxes}

    def value(self, raw: object) -> float:
        """A rating as a number: a number as is, a level id or label as its value, blank/NA as NaN."""
        if raw is None or (isinstance(raw, float) and np.isnan(raw)):
            return np.nan
        if isinstance(raw, str):
            text = raw.strip()
            if text in self.levels:
                return float(self.levels[text])
            if text.upper() in ("", "NA", "N/A", "NAN"):
                return np.nan
            try:
                return float(text)
            except ValueError:
                return np.inf  # reported as out of the scale by rollup()
        return float(raw)  # type: ignore[arg-type]
RATING_COLUMNS: tuple[str, ...] = ("interaction_id", "profile_id", "system", "rater", "subaxis_id", "score")
KEY = ["interaction_id", "profile_id", "system", "rater"]
ZERO_POLICIES: tuple[str, ...] = ("missing", "zero")


class RollupWarning(UserWarning):
    """Some ratings lack an axis, so their average score is NaN."""


def rollup(
    ratings: pd.DataFrame, subaxis_axis: dict[str, str], *, source: str = "<ratings>", zeros: str = "missing",
    dims: Dimensions | None = None,
) -> pd.DataFrame:
    """Roll a frame of sub-axis ratings up to axis scores.

    ``ratings`` has the columns :data:`RATING_COLUMNS`; ``subaxis_axis`` maps each
    sub-axis id to its axis code. Returns one row per (interaction, rater, axis) with
    the columns ``interaction_id, profile_id, system, rater, axis, score``, where
    ``axis`` runs over the target's axes (``dims``, MindEval's five by default) and ``"average"``.
    """
    dims = dims or Dimensions()
    axes = list(dims.axes)
    if zeros not in ZERO_POLICIES:
        raise ValueError(f"zeros must be one of {ZERO_POLICIES}, got {zeros!r}")
    _check_columns(ratings, subaxis_axis, axes, source)
    frame = _scores(ratings.loc[:, list(RATING_COLUMNS)].copy(), dims, zeros, source)
    frame["axis"] = frame["subaxis_id"].map(subaxis_axis)
    dup = frame.duplicated(subset=[*KEY, "subaxis_id"])
    if dup.any():
        row = frame[dup].iloc[0]
        raise MindEvalError(
            f"rater {row['rater']} rated sub-axis {row['subaxis_id']} of {row['interaction_id']} twice",
            path=source, field=str(row["subaxis_id"]),
        )
    axis = frame.groupby([*KEY, "axis"], sort=False, dropna=False)["score"].mean().unstack("axis")
    axis = axis.reindex(columns=axes)
    complete = axis.notna().all(axis=1)
    axis[AVERAGE] = axis[axes].mean(axis=1).where(complete)
    n_incomplete = int((~complete).sum())
    if n_incomplete:
        warnings.warn(
            f"{source}: {n_incomplete} rating(s) have an axis with no rated sub-axis; "
            "their average score is NaN",
            RollupWarning, stacklevel=2,
        )
    long = axis.reset_index().melt(id_vars=KEY, value_vars=list(dims.all_axes), var_name="axis", value_name="score")
    long["score"] = long["score"].astype(float)
    return long


def _check_columns(ratings: pd.DataFrame, subaxis_axis: dict[str, str], axes: list[str], source: str) -> None:
    missing = [c for c in RATING_COLUMNS if c not in ratings.columns]
    if missing:
        raise MindEvalError(f"ratings lack column(s) {', '.join(missing)}", path=source)
    unknown = sorted(set(ratings["subaxis_id"]) - set(subaxis_axis))
    if unknown:
        raise MindEvalError(
            f"unknown sub-axis id(s) {', '.join(map(str, unknown))}; known: {', '.join(sorted(subaxis_axis))}",
            path=source, field="subaxis_id",
        )
    bad_axes = sorted(set(subaxis_axis.values()) - set(axes))
    if bad_axes:
        raise MindEvalError(f"sub-axes map to unknown axes {bad_axes}; axes are {tuple(axes)}", path=source)


def _scores(frame: pd.DataFrame, dims: Dimensions, zeros: str, source: str) -> pd.DataFrame:
    """``frame`` with its scores as numbers on the scale (NaN: not rated); a score off the scale is an error."""
    if dims.categorical:
        frame["score"] = frame["score"].map(dims.value).astype(float)
        bad = frame["score"].notna() & ~frame["score"].isin([float(v) for v in dims.values])
        what = "not a level of the scale (" + ", ".join(f"{k}={v}" for k, v in dims.levels.items()) + ")"
    else:
        lo, hi = min(dims.values), max(dims.values)
        score = pd.to_numeric(frame["score"], errors="coerce").astype(float)
        frame["score"] = score if zeros == "zero" else score.where(score != 0)
        bad = frame["score"].notna() & ~frame["score"].between(0 if zeros == "zero" else lo, hi)
        what = f"outside {lo}-{hi} (0 = not rated)"
    if bad.any():
        row = frame[bad].iloc[0]
        raise MindEvalError(
            f"score {row['score']:g} of rater {row['rater']} on {row['interaction_id']} is {what}",
            path=source, field=str(row["subaxis_id"]),
        )
    return frame


def judge_axis_frame(rows: pd.DataFrame, axes: tuple[str, ...]) -> pd.DataFrame:
    """Add the ``average`` axis (mean of ``axes``) to a wide frame of judge axis scores."""
    out = rows.copy()
    vals = out[list(axes)].astype(float)
    out[AVERAGE] = vals.mean(axis=1).where(vals.notna().all(axis=1), np.nan)
    return out
