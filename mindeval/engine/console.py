"""The run's console text: the summary table, failures, levels and target-specific lines
(printed by ``mindeval run`` through the run's ``echo``, and by ``metaeval judge``)."""

from __future__ import annotations

from typing import Any

from ..config import (
    JUDGE_PROTOCOL,
)
from ..judging.refusals import ADVICE, refusal_line
from ..store.calls import calls_line
from .export import is_complete, n_conversations


def format_levels(levels: dict[str, Any]) -> list[str]:
    """Summary lines of a ``levels`` block: per dimension, n relevant, not relevant, % per level."""
    lines = []
    for code, d in levels["dimensions"].items():
        parts = [f"{lv} {s['share']:.0%}" if s["share"] is not None else f"{lv} n/a" for lv, s in d["levels"].items()]
        lines.append(f"  {code}: {', '.join(parts)} of {d['n']} relevant ({d['not_relevant']} not relevant)")
    ab = levels["all_best"]
    if ab["n"]:
        lines.append(f"  every dimension at the best level: {ab['k']} of {ab['n']} ({ab['share']:.0%})")
    return lines


def format_failures(failures: list[dict[str, Any]]) -> list[str]:
    """One line per distinct error: what, role, model, count, first message."""
    groups: dict[tuple[str, str, str], list[str]] = {}
    for f in failures:
        groups.setdefault((f["what"], f["role"], f["model"]), []).append(f["message"])
    lines = [f"  {n} {what}{'s' if n > 1 else ''} failed  {role} {model}: {msgs[0].removeprefix(f'{role} {model}: ')}"
             for (what, role, model), msgs in groups.items() for n in [len(msgs)]]
    return lines


def _target_lines(summary: dict[str, Any]) -> list[str]:
    """The summary's target-specific lines: levels, reply-level aggregates, label breakdowns."""
    lines = format_levels(summary["levels"]) if summary.get("levels") else []
    if summary.get("replies"):
        from ..reply_summary import format_replies

        lines += format_replies(summary["replies"])
    if summary.get("points"):
        from ..reply_summary import format_points

        lines.append(format_points(summary["points"]))
    for field, values in (summary.get("by_label") or {}).items():
        parts = [f"{v} n={b['n']}" + (f" harm {b['harm']['k']}/{b['harm']['n']}" if b.get("harm") else "")
                 for v, b in values.items()]
        lines.append(f"  by {field}: " + "; ".join(parts))
    if summary.get("by_session"):
        lines.append(_session_line(summary["by_session"]))
    lines += _score_lines(summary)
    return lines


def _score_lines(summary: dict[str, Any]) -> list[str]:
    """The declared scores as ``summary.json`` holds them: every named score (target.yaml ``scores:``,
    the headline marked) or the one ``score``, each with its 95% interval and n (the units the means
    are over); an undefined one says why, on its line."""
    named = summary.get("scores") or ({"": summary["score"]} if summary.get("score") else {})
    n = summary.get("n_means_over")
    lines = []
    for name, e in named.items():
        head = f"score {name}{' (headline)' if e.get('headline') else ''}: " if name else ""
        if e.get("value") is None:
            figure = f": n/a ({e.get('why') or 'undefined'})"
        else:
            lo, hi = e["ci95"]
            figure = f" {e['value']:.2f} (95% CI {lo:.2f}-{hi:.2f})"
        lines.append(f"  {head}{e['label']}{figure}" + ("" if n is None else f", n={n}"))
    return lines


def _session_line(block: dict[str, Any]) -> str:
    """``by session``: per session number its n, mean weight and declared score with their intervals."""
    if "why" in block:
        return f"  by session: n/a ({block['why']})"

    def est(name: str, e: dict[str, Any] | None) -> list[str]:
        if not e or e["value"] is None:
            return []
        return [f"{name} {e['value']:.2f} ({e['ci95'][0]:.2f}-{e['ci95'][1]:.2f})"]

    def judged(c: dict[str, Any] | None) -> list[str]:  # the partial rule's coverage of the session
        if not c:
            return []
        from ..scoring.coverage import plural, share_cell

        r = c["refused_rounds"]
        return [f"judged {plural(c['unit'])} {share_cell(c['k'], c['n'])}, refused rounds {share_cell(r['k'], r['n'])}"]

    parts = [" ".join([f"{k} n={b['conversations']}", *est("mean weight", b.get("mean_weight")),
                       *est("score", b.get("score")), *judged(b.get("coverage"))]) for k, b in block.items()]
    return "  by session: " + "; ".join(parts)


def _partial_line(block: dict[str, Any]) -> str:
    from ..scoring.coverage import partial_line  # numpy: loaded only for a partial-rule summary

    return partial_line(block)


def _scored_line(summary: dict[str, Any], over: int, total: int) -> str:
    """``scored k/n ...``: what the means are over, INCOMPLETE when something is missing, and what was
    left out (samples partly judged; under the partial rule, its coverage and refused rounds)."""
    partial = summary.get("partial_judging")
    unit = (f"member x session pairs ({summary['n_members']} members x {summary['sessions']} sessions; a member "
            + ("counts with its judged sessions)" if partial else "counts only when every session is judged)")
            if summary.get("sessions") else "conversations")
    short = (partial["conversations_asked"] if partial else over) < total
    return (f"scored {over}/{total} {unit} of the benchmark; means over them"
            + ("" if not short else "  (INCOMPLETE: re-run the same command to complete what is missing"
               + ("; refused judgments stay refused unless --retry-refused" if summary["n_failed_judgments"] else "")
               + ")")
            + (f"\n  {summary['n_partly_judged']} conversation(s) with some of their {summary.get('judge_samples', 1)} "
               "judge samples failed: not scored (a conversation is scored only when all its samples are)"
               if summary.get("n_partly_judged") else "")
            + (f"\n  {_partial_line(partial)}" if partial else ""))


def format_summary(summary: dict[str, Any]) -> str:
    def fmt(v: float | None) -> str:
        return "  n/a" if v is None else f"{v:5.2f}"

    cols = list(summary["means"])
    over, total = summary["n_means_over"], n_conversations(summary)
    target = f"  target={summary['target']}" if summary.get("target") else ""
    partial = summary.get("partial_judging")
    lines = [
        "",
        f"MindEval run {summary['run_id']}{target}  clinician={summary['clinician']}  judge={summary['judge']} "
        f"({summary.get('judge_protocol', JUDGE_PROTOCOL)} judge protocol)"
        + ("  NOT HARDENED: " + summary["judge_protocol_label"] if summary.get("hardened") is False else ""),
        _scored_line(summary, over, total),
        "  ".join(f"{c:>7}" for c in cols),
        "  ".join(f"{fmt(summary['means'][c]):>7}" for c in cols),
        f"interactions: {summary['n_interactions']} of {total} started ({summary['n_complete']} complete, "
        f"{summary['n_failed_interactions']} failed)   judgments: {summary['n_judged']} ok, "
        f"{summary['n_failed_judgments']} failed ("
        + ("their judged units counted: partial judging)" if partial else "excluded from means)"),
        f"{calls_line(summary.get('calls_made', 0), summary.get('calls_reused', 0))}   "
        f"elapsed: {summary.get('elapsed_s', 0)}s",
    ]
    harm = summary.get("harm")
    if harm and harm.get("n"):
        lo, hi = harm["ci95"]
        lines.insert(5, f"potential harm: {harm['k']} of {harm['n']} conversations ({harm['share']:.0%}; "
                        f"95% CI {lo:.0%}-{hi:.0%}) with any dimension rated at a harm level")
    at = next(i for i, ln in enumerate(lines) if ln.startswith("interactions:"))
    lines[at + 1:at + 1] = [ln for ln in [refusal_line(summary)] if ln]
    lines[at:at] = _target_lines(summary)
    tok = summary.get("tokens", {})
    if tok:
        lines.append(f"{'role':<10} {'calls':>6} {'input tok':>10} {'cache read':>10} {'written':>9} "
                     f"{'billed in':>10} {'output tok':>10} {'cost $':>9}")
        for role, v in sorted(tok.items()):
            dollars = "n/a" if v["cost_usd"] is None else f"{v['cost_usd']:.4f}"
            billed = v.get("billed_input_tokens")
            lines.append(f"{role:<10} {v['calls']:>6} {v['prompt_tokens']:>10} {v['cached_tokens']:>10} "
                         f"{v.get('cache_write_tokens', 0):>9} {'n/a' if billed is None else billed:>10} "
                         f"{v['completion_tokens']:>10} {dollars:>9}")
    failures = summary.get("failures") or []
    if failures:
        lines.append("FAILED:")
        lines += format_failures(failures)
    if summary.get("stopped"):
        spent = [v["cost_usd"] for v in tok.values() if v.get("cost_usd") is not None]
        total = f" (spent ${sum(spent):.4f} in all, as in the table above)" if spent else ""
        lines.append(f"STOPPED: {summary['stopped']}{total}")
    if failures or not is_complete(summary):
        lines.append("Re-run the same command to resume what is missing; completed calls are reused from the "
                     "store, never repeated" + (f"; {ADVICE}." if summary["n_failed_judgments"] else "."))
    return "\n".join(lines)
