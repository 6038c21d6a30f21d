"""``mindeval leaderboard --by session``: each system's figures per session number of a multi-session target.

Each system's rated units (the declared score's, :func:`mindeval.leaderboard.score.run_ratings`) and
criterion results are grouped by session number and reported by
:func:`mindeval.scoring.by_session.session_reports` (the summary's ``by_session`` reading): the mean
and p99 of the conversations' mean weights, the incident shares (conversations with a unit at a
level or worse, or with a flag) and the declared score, each with its 95% interval over that
session's profiles, and n conversations.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

from ..records import TargetInfo
from ..scoring import formula_of, scale_spec
from ..scoring.by_session import session_reports
from ..scoring.coverage import Coverage
from ..stats.reply_scales import Estimate, ScaleReport, ScoreEstimate
from .loading import RunData
from .score import run_ratings
from .table import StatsSettings, Table

SESSION = "session"  # the --by value


class SessionRow(BaseModel):
    """One system's figures on one session number."""

    system: str
    session: int
    conversations: int  # n: the session's conversations (each judge sample its own)
    profiles: int
    mean_weight: Estimate | None  # None: the scale has no weights
    p99_weight: Estimate | None
    incident: dict[str, Estimate]  # every level after the best (at it or worse) and "flag_<id>"
    score: ScoreEstimate | None = None  # the target's declared score (None: none declared)
    coverage: Coverage | None = None  # partial_judging: the session's judged units and refused rounds


def wants_sessions(target: TargetInfo, by: Sequence[str]) -> bool:
    """Whether ``--by`` asks for the session breakdown (``session`` on a multi-session target)."""
    return SESSION in by and target.sessions > 1


def labels_only(target: TargetInfo, by: Sequence[str]) -> list[str]:
    """The ``--by`` values that name profile labels (``session`` of a multi-session target left out)."""
    return [b for b in by if not (b == SESSION and target.sessions > 1)]


def _row(system: str, session: int, report: ScaleReport, score: ScoreEstimate | None,
         coverage: Coverage | None = None) -> SessionRow:
    incident = {lv: s.incident for lv, s in list(report.levels.items())[1:]}
    incident |= {f"flag_{fl}": s.incident for fl, s in report.flags.items()}
    return SessionRow(system=system, session=session, conversations=report.conversations, profiles=report.profiles,
                      mean_weight=report.mean_weight, p99_weight=report.p99_weight, incident=incident, score=score,
                      coverage=coverage)


def session_rows(target: TargetInfo, by: Sequence[str], table: Table, runs: dict[str, RunData],
                 settings: StatsSettings) -> list[SessionRow]:
    """Per system (in ``table``'s rank order; ``runs`` by label) and session number, its figures;
    none unless ``by`` asks for them (:func:`wants_sessions`)."""
    if not wants_sessions(target, by):
        return []
    spec = scale_spec(target)
    formula = formula_of(target, spec) if target.score is not None else None
    out = []
    for label, run in ((s.label, runs[s.label]) for s in table.systems):
        reports = session_reports(spec, run_ratings(run), run.criteria, resamples=settings.resamples,
                                  seed=settings.seed, rng_key=label, level=settings.level)
        out += [_row(label, k, r, r.score(formula) if formula is not None else None, run.session_coverage.get(k))
                for k, r in reports.items()]
    return out
