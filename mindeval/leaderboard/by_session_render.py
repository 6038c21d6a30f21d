"""The leaderboard report's "By session" section (``--by session``; :mod:`.by_session`)."""

from __future__ import annotations

from ..stats.reply_scales import Estimate
from .by_session import SessionRow
from .columns import md_escape


def _est(e: Estimate | None, percent: bool = False) -> str:
    if e is None or e.value is None or e.ci95 is None:
        return "n/a"
    f = (lambda x: f"{100 * x:.0f}%") if percent else (lambda x: f"{x:.2f}")
    return f"{f(e.value)} [{f(e.ci95[0])}, {f(e.ci95[1])}]"


def session_markdown(rows: list[SessionRow], score_label: str | None) -> list[str]:
    """The report's "By session" section (flags' incident shares: leaderboard.json)."""
    if not rows:
        return []
    levels = [k for k in rows[0].incident if not k.startswith("flag_")]
    weights = rows[0].mean_weight is not None
    head = ["System", "Session", "n", *(["Mean weight", "p99 weight"] if weights else []),
            *(f"{lv} or worse" for lv in levels), *([md_escape(score_label)] if score_label else [])]
    lines = ["", "## By session", "",
             "Each system per session number: n conversations"
             + (", the mean and p99 of their mean reply weights" if weights else "")
             + ", the share of conversations with a unit at each level or worse"
             + (" and the declared score" if score_label else "")
             + "; [95% bootstrap interval over that session's profiles]. Flag shares: leaderboard.json.", "",
             "| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for r in rows:
        cells = [md_escape(r.system), str(r.session), str(r.conversations)]
        cells += [_est(r.mean_weight), _est(r.p99_weight)] if weights else []
        cells += [_est(r.incident[lv], percent=True) for lv in levels]
        cells += [_est(r.score)] if score_label else []
        lines.append("| " + " | ".join(cells) + " |")
    return lines
