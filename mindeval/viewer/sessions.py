"""A multi-session run's figures per session number, as ``summary.json``'s ``by_session`` holds them
(:func:`mindeval.scoring.blocks.by_session_block`), for the viewer's run overview and its HTML export.

The values are read, never recomputed: each session number's n (its conversations) and profiles, then
the mean and p99 of the conversations' mean weights, each level's incident share (a conversation with
a unit at that level or worse), each flag's incident share, the points score and the declared score,
every one with its 95% interval. A one-session run has no ``by_session`` and so no table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ..records import SUMMARY_FILE, RunSummary


class SessionFigure(BaseModel):
    """One figure of a session number: its value and 95% interval (None: undefined there)."""

    name: str
    value: float | None
    ci95: tuple[float, float] | None
    percent: bool = False  # a share, shown as a percentage

    def text(self) -> str:
        """``2.75 [2.50, 3.00]``, ``50% [0%, 100%]``, or ``n/a``."""
        if self.value is None or self.ci95 is None:
            return "n/a"

        def f(x: float) -> str:
            return f"{100 * x:.0f}%" if self.percent else f"{x:.2f}"
        return f"{f(self.value)} [{f(self.ci95[0])}, {f(self.ci95[1])}]"


class SessionRow(BaseModel):
    """One session number: n (its conversations), its profiles and its figures."""

    session: int
    n: int
    profiles: int
    figures: list[SessionFigure]


class RunSessions(BaseModel):
    """The per-session table of one run; ``why``: the reason it has no figures (units not read as levels)."""

    rows: list[SessionRow] = []
    why: str | None = None

    def header(self) -> list[str]:
        return ["session", "n", "profiles", *(f.name for f in self.rows[0].figures)] if self.rows else []

    def cells(self) -> list[list[str]]:
        return [[str(r.session), str(r.n), str(r.profiles), *(f.text() for f in r.figures)] for r in self.rows]


def _figure(name: str, est: dict[str, Any] | None, percent: bool = False) -> list[SessionFigure]:
    if not est:
        return []
    ci = est.get("ci95")
    return [SessionFigure(name=name, value=est.get("value"), ci95=tuple(ci) if ci else None, percent=percent)]


def _row(session: str, block: dict[str, Any], score_label: str) -> SessionRow:
    figures = [*_figure("mean weight", block.get("mean_weight")), *_figure("p99 weight", block.get("p99_weight"))]
    for level, shares in list((block.get("levels") or {}).items())[1:]:  # the best level: every conversation
        figures += _figure(f"{level} or worse", shares.get("incident"), percent=True)
    for flag, shares in (block.get("flags") or {}).items():
        figures += _figure(f"flag {flag}", shares.get("incident"), percent=True)
    figures += _figure("points", block.get("points")) + _figure(score_label, block.get("score"))
    return SessionRow(session=int(session), n=block["conversations"], profiles=block["profiles"], figures=figures)


def run_sessions(run_dir: str | Path) -> RunSessions | None:
    """The per-session table of the run in ``run_dir`` from its ``summary.json``; None without one
    (a one-session run, or no summary yet)."""
    path = Path(run_dir) / SUMMARY_FILE
    if not path.is_file():
        return None
    extra = RunSummary.read(path).model_extra or {}
    block = extra.get("by_session")
    if not block:
        return None
    if "why" in block:
        return RunSessions(why=str(block["why"]))
    label = str((extra.get("score") or {}).get("label") or "score")
    return RunSessions(rows=[_row(k, b, label) for k, b in block.items()])
