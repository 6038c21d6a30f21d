"""One run as a self-contained static HTML page for sharing.

Every piece of model or user text goes through :func:`html.escape`, and the page's
Content-Security-Policy allows no script, frame, form or remote resource, so a reply
that holds markup stays text even if it reached the page unescaped.
"""

from __future__ import annotations

import html
from pathlib import Path

from ..files import atomic_write
from .data import AVERAGE, Conversation, load_conversations
from .sessions import RunSessions, run_sessions

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src 'none'; form-action 'none'; base-uri 'none'"
STYLE = """
body{font-family:system-ui,sans-serif;margin:2rem auto;max-width:70rem;color:#1d2b2c;line-height:1.4}
table{border-collapse:collapse;margin:.5rem 0}td,th{border:1px solid #c9d4d4;padding:.2rem .5rem;text-align:left}
th{background:#eef3f3}.failed{color:#a4161a;font-weight:600}.msg{border-left:4px solid #2f6f73;margin:.4rem 0;
padding:.2rem .6rem}.msg.user{border-color:#b08900}.who{font-size:.8rem;color:#556}pre{white-space:pre-wrap;
margin:.2rem 0;font-family:inherit}pre.reply{font-family:monospace;background:#f5f7f7;padding:.5rem}
section{border-top:2px solid #c9d4d4;margin-top:1.5rem}.rating{font-size:.85rem;color:#2f4f50}
"""
SPEAKER = {"user": "patient", "assistant": "clinician", "system": "system"}


def _e(value: object) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _num(v: float | None, fmt: str = "{:.2f}") -> str:
    return "n/a" if v is None else fmt.format(v)


def _anchor(c: Conversation) -> str:
    return "c-" + "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in c.interaction_id)


def _row(c: Conversation) -> str:
    who = _e(c.profile_name or c.profile_id) + (f" · {_e(c.session_label)}" if c.session else "")
    cells = [f'<a href="#{_anchor(c)}">{who}</a>', _e(c.label),
             ('<span class="failed">failed</span>' if c.failed else "ok")
             + (f' · <a href="#{_anchor(c)}-corrections">corrected ({len(c.corrections)})</a>' if c.corrections else ""),
             *(_num(c.score(a)) for a in (*c.axes, AVERAGE)), str(c.tokens), _num(c.cost_usd, "${:.4f}")]
    return "<tr>" + "".join(f"<td>{x}</td>" for x in cells) + "</tr>"


def _reply_ratings(c: Conversation) -> dict[int, str]:
    """Reply-level judging: per message position, each judge sample's level and raised flags."""
    out: dict[int, list[str]] = {}
    for j in c.judgments:
        for r in j.replies or []:
            flags = ", ".join(f for f, on in r.flags.items() if on) or "none"
            out.setdefault(r.turn, []).append(f'<div class="rating">judge sample {j.sample}: level '
                                              f"<b>{_e(r.level)}</b> · flags: {_e(flags)}</div>")
    return {turn: "".join(lines) for turn, lines in out.items()}


def _session(c: Conversation) -> list[str]:
    """A session's boundary: which session of how many, the memory it started with and the
    patient's situation (multi-session targets; nothing otherwise)."""
    s = c.session
    drawn = [f'<p class="who">schedule drawn for this session: {_e(c.schedule_line)}</p>'] if c.schedule else []
    if s is None:
        return drawn
    return [*drawn, f'<div class="session"><h3>{_e(c.session_label.capitalize())} of conversation '
            f"<small>{_e(s.member)}</small></h3>",
            f'<p class="who">{_e(c.memory_line)}</p><pre class="reply">{_e(s.memory)}</pre>',
            f"<p class=\"who\">patient's situation for this session</p><pre class=\"reply\">{_e(s.situation)}</pre>"
            "</div>"]


def _section(c: Conversation) -> str:
    parts = [f'<section id="{_anchor(c)}"><h2>{_e(c.profile_name or c.profile_id)} '
             + (f"· {_e(c.session_label)} " if c.session else "")
             + f'<small>({_e(c.interaction_id)})</small></h2>',
             f"<p>clinician {_e(c.clinician)} · patient {_e(c.patient_model)} · judge {_e(c.judge_model)} · "
             f"{_e(c.label)} · status {_e(c.status)}</p>"]
    if c.errors:
        parts.append("<ul>" + "".join(f'<li class="failed">{_e(err)}</li>' for err in c.errors) + "</ul>")
    if c.usage:
        parts.append("<table><tr><th>role</th><th>calls</th><th>failed</th><th>input tokens</th>"
                     "<th>output tokens</th><th>cost</th></tr>" + "".join(
                         f"<tr><td>{_e(u.role)}</td><td>{u.calls}</td><td>{u.failed_calls}</td>"
                         f"<td>{u.prompt_tokens}</td><td>{u.completion_tokens}</td>"
                         f"<td>{_num(u.cost_usd, '${:.4f}')}</td></tr>" for u in c.usage) + "</table>")
    parts += _session(c)
    parts.append("<h3>Transcript</h3>")
    ratings = _reply_ratings(c)
    parts += [f'<div class="msg {_e(m.role)}"><div class="who">{_e(SPEAKER.get(m.role, m.role))}</div>'
              f"<pre>{_e(m.content)}</pre>{ratings.get(i, '')}</div>" for i, m in enumerate(c.messages)]
    for j in c.judgments:
        scores = " · ".join(f"{_e(k)} {_e(v)}" for k, v in (j.scores or {}).items()) or "no scores"
        rounds = f"{j.rounds} rounds, " if j.rounds > 1 else ""
        parts.append(f"<h3>Judge sample {j.sample} ({_e(j.parse_status)}, {rounds}{j.attempts} attempt(s))</h3>"
                     + _refused(j.refused)
                     + f"<p>{scores}</p><pre class=\"reply\">{_e(j.raw_text)}</pre>")
    if c.corrections:  # the judge's values stay above, untouched; what reviewers changed, latest last
        parts.append(f'<h3 id="{_anchor(c)}-corrections">Corrections by reviewers ({len(c.corrections)})</h3>'
                     "<p class=\"who\">the judge's values above are kept; `mindeval leaderboard --with-corrections` "
                     "ranks with the latest correction of each value</p><ul>"
                     + "".join(f"<li>{_e(line)}</li>" for line in c.corrections) + "</ul>")
    parts.append("</section>")
    return "\n".join(parts)


def _refused(reasons: list[str] | None) -> str:
    """The earlier rounds of a sample, refused and re-judged with --retry-refused (none: nothing)."""
    if not reasons:
        return ""
    return ('<ul class="refused">' + "".join(f'<li class="failed">round {i + 1} refused: {_e(r)}</li>'
                                             for i, r in enumerate(reasons)) + "</ul>")


def _by_session(figures: RunSessions | None) -> list[str]:
    """A multi-session run's figures per session number (summary.json's ``by_session``; nothing for a
    one-session run)."""
    if figures is None:
        return []
    head = ['<h2 id="by-session">By session</h2>']
    if figures.why:
        return [*head, f"<p>n/a ({_e(figures.why)})</p>"]
    return [*head, "<p>Per session number, as summary.json's <code>by_session</code> holds it: n conversations, "
            "their profiles and each figure with its [95% bootstrap interval over that session's profiles]; "
            "a level's share is of the conversations with a unit at that level or worse.</p>",
            "<table><tr>" + "".join(f"<th>{_e(h)}</th>" for h in figures.header()) + "</tr>",
            *("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row) + "</tr>" for row in figures.cells()), "</table>"]


def render_run(run_dir: str | Path) -> str:
    """The HTML page of one run directory."""
    conversations = load_conversations([run_dir])
    name = Path(run_dir).resolve().name
    axes = conversations[0].axes if conversations else ()
    head = "".join(f"<th>{_e(h)}</th>" for h in ("profile", "label", "status", *axes, AVERAGE, "tokens", "cost"))
    n_failed = sum(c.failed for c in conversations)
    judged = [j for c in conversations for j in c.judgments]
    rounds, refused = sum(j.rounds for j in judged), sum(j.rounds - (j.parse_status == "ok") for j in judged)
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        f"<title>MindEval run {_e(name)}</title><style>{STYLE}</style></head><body>",
        f"<h1>MindEval run {_e(name)}</h1>",
        f"<p>{len(conversations)} conversations, {n_failed} with a failure. Scores: mean over parsed judge "
        "samples." + (f" Judge rounds: {rounds}, {refused} refused (every round counts; a refused sample is "
                      "re-judged only with --retry-refused)." if refused else "") + "</p>",
        f"<table><tr>{head}</tr>", *(_row(c) for c in conversations), "</table>",
        *_by_session(run_sessions(run_dir)),
        *(_section(c) for c in conversations), "</body></html>", ""])


def write_html(run_dir: str | Path, out: str | Path) -> Path:
    """Write :func:`render_run` to ``out`` atomically; returns the path."""
    path = Path(out)
    atomic_write(path, render_run(run_dir).encode("utf-8"))
    return path
