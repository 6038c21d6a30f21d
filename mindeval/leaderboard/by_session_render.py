"""The leaderboard report's "By session" section (``--by session``; :mod:`.by_session`)."""

from __future__ import annotations

import csv
from pathlib import Path

from ..scoring.coverage import Coverage, share_cell
from ..stats.proportion import wilson_interval
from ..stats.reply_scales import Estimate
from .by_session import SessionRow
from .columns import md_escape


def _est(e: Estimate | None, percent: bool = False) -> str:
    if e is None or e.value is None or e.ci95 is None:
        return "n/a"
    f = (lambda x: f"{100 * x:.0f}%") if percent else (lambda x: f"{x:.2f}")
    return f"{f(e.value)} [{f(e.ci95[0])}, {f(e.ci95[1])}]"


def _judged(c: Coverage | None) -> list[str]:
    """A session's judged units and refused rounds, each with its Wilson 95% interval and n."""
    return ["n/a", "n/a"] if c is None else [share_cell(c.k, c.n), share_cell(c.refused, c.rounds)]


def session_markdown(rows: list[SessionRow], score_label: str | None) -> list[str]:
    """The report's "By session" section (flags' incident shares: leaderboard.json)."""
    if not rows:
        return []
    levels = [k for k in rows[0].incident if not k.startswith("flag_")]
    weights = rows[0].mean_weight is not None
    partial = any(r.coverage is not None for r in rows)
    head = ["System", "Session", "n", *(["Mean weight", "p99 weight"] if weights else []),
            *(f"{lv} or worse" for lv in levels), *([md_escape(score_label)] if score_label else []),
            *(["Judged units [95% CI] (k/n)", "Refused rounds [95% CI] (k/n)"] if partial else [])]
    lines = ["", "## By session", "",
             "Each system per session number: n conversations"
             + (", the mean and p99 of their mean reply weights" if weights else "")
             + ", the share of conversations with a unit at each level or worse"
             + (" and the declared score" if score_label else "")
             + "; [95% bootstrap interval over that session's profiles]"
             + ("; partial judging: the session's judged units and refused judge rounds [Wilson 95% interval]"
                if partial else "") + ". Flag shares: leaderboard.json.", "",
             "| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for r in rows:
        cells = [md_escape(r.system), str(r.session), str(r.conversations)]
        cells += [_est(r.mean_weight), _est(r.p99_weight)] if weights else []
        cells += [_est(r.incident[lv], percent=True) for lv in levels]
        cells += [_est(r.score)] if score_label else []
        cells += _judged(r.coverage) if partial else []
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _counts(c: Coverage | None) -> dict[str, tuple[int, int]]:
    return {} if c is None else {"judged_units": (c.k, c.n), "refused_rounds": (c.refused, c.rounds)}


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
            for name, (k, n) in _counts(r.coverage).items():  # partial judging: a share, its interval and k/n
                lo, hi = wilson_interval(k, n) if n else ("", "")
                w.writerow([r.system, r.session, r.conversations, r.profiles, f"{name} ({k}/{n})",
                            f"{k / n:.6f}" if n else "", *(f"{x:.6f}" if n else "" for x in (lo, hi))])
    return p
