"""Counting refused judgments: every judge round is a record, a refusal is an outcome.

A judgment that failed (the judge's reply could not be read after its attempts) is final: a
re-run does not re-judge it, so a model whose replies make the judge refuse cannot keep only
its good draws. ``--retry-refused`` re-judges it as a new round; the rounds and attempts it
took are counted here, for ``summary.json`` and the console (docs/judging.md, "A refused
judgment is final").
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol


class _Judged(Protocol):
    parse_status: str
    rounds: int
    attempts: int


def refusal_counts(judgments: Iterable[_Judged]) -> dict[str, int]:
    """Rounds and refusals of a run's judgments: ``n_judge_rounds`` (every round of every sample),
    ``n_refused_rounds`` (rounds that ended refused, retried or not), ``n_retried_judgments``
    (samples re-judged with --retry-refused) and ``n_judge_attempts`` (every attempt)."""
    rows = list(judgments)
    return {
        "n_judge_rounds": sum(j.rounds for j in rows),
        "n_refused_rounds": sum(j.rounds - 1 + (j.parse_status == "failed") for j in rows),
        "n_retried_judgments": sum(j.rounds > 1 for j in rows),
        "n_judge_attempts": sum(j.attempts for j in rows),
    }


ADVICE = ("a refused judgment is final: a plain re-run does not judge it again; --retry-refused re-judges it "
          "as a new round, and every round and attempt is counted (summary.json, the leaderboard's refusal "
          "rate, the viewer)")


def refusal_line(summary: dict[str, Any]) -> str | None:
    """The console's line on refused rounds (None when the run had none)."""
    refused = summary.get("n_refused_rounds", summary.get("n_failed_judgments", 0))
    if not refused:
        return None
    retried = summary.get("n_retried_judgments", 0)
    return (f"refused: {refused} of {summary.get('n_judge_rounds', refused)} judge rounds "
            f"({summary['n_failed_judgments']} judgments failed now, {retried} refused then re-judged with "
            f"--retry-refused; {summary.get('n_judge_attempts', 0)} judge attempts in all)")
