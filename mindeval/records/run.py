"""A run directory read back (:func:`mindeval.rundir.read_run`): its config, rows and summary."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from .config_json import RunConfig
from .rows import InteractionRecord, JudgmentRecord, RunSummary
from .target import TargetInfo


class Run(BaseModel):
    """A run directory read back: its config, rows and summary (absent files are empty)."""

    path: str
    config: RunConfig | None
    target: TargetInfo  # the config's block (mindeval.rundir.read_run upgrades older directories)
    interactions: list[InteractionRecord]
    judgments: list[JudgmentRecord]
    summary: RunSummary | None

    @property
    def axes(self) -> tuple[str, ...]:
        """The judge's dimensions: the target's axis codes."""
        return tuple(self.target.axes)

    def to_frame(self) -> Any:
        """A pandas DataFrame, one row per judge sample and one column per axis (NaN when failed)."""
        import pandas as pd

        cols = ["interaction_id", "profile_id", "model", "judge_model", "sample", "protocol",
                "parse_status", "severe", "n_turns"]
        axes = self.axes
        rows = []
        for j in self.judgments:
            row = {c: getattr(j, c) for c in cols}
            row.update({ax: float("nan") if (v := (j.scores or {}).get(ax)) is None else float(v) for ax in axes})
            row["average"] = float("nan") if j.average is None else j.average
            rows.append(row)
        return pd.DataFrame(rows, columns=[*cols, *axes, "average"])
