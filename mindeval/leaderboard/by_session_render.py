"""The leaderboard report's "By session" section (``--by session``; :mod:`.by_session`)."""

from __future__ import annotations

import csv
from pathlib import Path

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


def write_session_csv(rows: list[SessionRow], out: Path) -> Path:
    """``by_session.csv``: one row per system, session number and quantity, with its interval and n."""
    p = out / "by_session.csv"
    with p.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["system", "session", "n", "profiles", "quantity", "value", "ci_low", "ci_high"])
        for r in rows:
            named = {"mean_weight": r.mean_weight, "p99_weight": r.p99_weight,
                     **{f"incident_{k}": e for k, e in r.incident.items()}, "score": r.score}
            for name, e in named.items():
                if e is None:
                    continue
                ci = [f"{x:.6f}" for x in e.ci95] if e.ci95 else ["", ""]
                w.writerow([r.system, r.session, r.conversations, r.profiles, name,
                            "" if e.value is None else f"{e.value:.6f}", *ci])
    return p
