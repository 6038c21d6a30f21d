"""Write a leaderboard as Markdown, CSV, LaTeX (Table-4 layout) and JSON.

Columns are the target's dimension codes with the average first (Table 4). For a target
with harm levels the safety gate (share of conversations with any harm rating and its 95%
Wilson interval) follows the means in every format. Every format gives each system's
coverage (scored conversations of the benchmark's, ``48/50``) and names any system ranked
with missing conversations (``--allow-incomplete``).
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

from .build import RANK_METRICS, Leaderboard, SystemHarm


def _order(lb: Leaderboard) -> tuple[str, ...]:
    """Table 4 puts the average first, then the target's dimensions."""
    return ("average", *[c for c in lb.criteria if c != "average"])


def _header(c: str) -> str:
    return "Average" if c == "average" else c


def _harm(lb: Leaderboard) -> dict[str, SystemHarm]:
    return {h.system: h for h in lb.safety}


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _harm_cell(h: SystemHarm | None) -> str:
    """``12% [5%, 25%] (3/25)``: share of conversations with a harm rating, Wilson 95% CI, counts."""
    return "n/a" if h is None else f"{_pct(h.share)} [{_pct(h.ci_low)}, {_pct(h.ci_high)}] ({h.k}/{h.n})"


def _num(x: float, digits: int = 2) -> str:
    return "n/a" if not math.isfinite(x) else f"{x:.{digits}f}"


def _p(p: float) -> str:
    return "n/a" if not math.isfinite(p) else ("<0.001" if p < 0.001 else f"{p:.3f}")


def _column_best(lb: Leaderboard) -> dict[str, float]:
    return {c: max(s.results[c].mean for s in lb.table.systems) for c in _order(lb)}


def _score_cells(lb: Leaderboard, s, bold, cell) -> list[str]:
    """One formatted cell per criterion of system ``s``: ``cell(score, cluster)``, best scores ``bold``."""
    best = _column_best(lb)
    out = []
    for c in _order(lb):
        r = s.results[c]
        score = _num(r.mean)
        if math.isclose(r.mean, best[c], abs_tol=1e-12):
            score = bold(score)
        out.append(cell(score, r.cluster))
    return out


def incomplete_note(lb: Leaderboard) -> str | None:
    """The one sentence every output carries when a system is ranked with missing conversations."""
    if not lb.incomplete:
        return None
    return ("INCOMPLETE: " + "; ".join(f"{name} scored {lb.coverage(name)} conversations" for name in lb.incomplete)
            + " of the benchmark; ranked only because of --allow-incomplete, so these scores are not comparable")


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|")


def _md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def settings_line(lb: Leaderboard) -> str:
    s = lb.table.settings
    return (f"{s.test} test, {s.sided}-sided, {s.resamples} resamples, seed {s.seed}, alpha {s.alpha}; "
            f"{int(s.level * 100)}% CIs: percentile bootstrap over interactions")


def to_markdown(lb: Leaderboard) -> str:
    """The full report: Table 4 (score + cluster), CIs, p-values, breakdowns, verbosity, Table 5."""
    setups = sorted({(r.judge_model, r.judge_protocol, r.patient_model) for r in lb.runs})
    order = _order(lb)
    t = lb.target
    lines = ["# MindEval leaderboard" + ("" if t.legacy_files else f": target {t.name} {t.version}".rstrip()), ""]
    lines.append("Judge / patient: " + "; ".join(f"{j} ({pr} judge protocol) / {p}" for j, pr, p in setups)
                 + f". Statistics: {settings_line(lb)}.")
    if t.scale.kind == "categorical":
        lines += ["", "Scale: " + ", ".join(f"{lv.label} = {lv.value}" + (" (harm)" if lv.harm else "")
                                             for lv in t.scale.levels) + "; means are over these values."]
    explain = ("Mean score (cluster); cluster 1 is the best group, systems in one cluster are not "
               "significantly different from the members ranked above them. Bold: best score per column.")
    harm = _harm(lb)
    gate = ["Harm share [95% CI]"] if lb.safety else []
    if lb.safety:
        explain += (" Harm share (safety gate): conversations with any dimension rated at a harm level, "
                    "95% Wilson interval, (k/n conversations judged).")
    explain += " Scored: conversations of the benchmark that were scored."
    note = incomplete_note(lb)
    lines += ["", "## Scores and significance clusters", "", *([f"**{_md_escape(note)}**", ""] if note else []),
              explain, ""]
    rows = []
    for s in lb.table.systems:
        cells = _score_cells(lb, s, lambda x: f"**{x}**", lambda x, k: f"{x} ({k})")
        scored = lb.coverage(s.label) + (" INCOMPLETE" if s.label in lb.incomplete else "")
        rows.append([str(s.rank), _md_escape(s.label), str(s.n), scored, *cells,
                     *([_harm_cell(harm.get(s.label))] if lb.safety else [])])
    lines += _md_table(["#", "System", "n", "Scored", *[_header(c) for c in order], *gate], rows)
    lines += levels_markdown(lb)

    lines += ["", f"### {int(lb.table.settings.level * 100)}% confidence intervals", ""]
    rows = [[_md_escape(s.label), *[f"[{_num(s.results[c].ci_low)}, {_num(s.results[c].ci_high)}]" for c in order]]
            for s in lb.table.systems]
    lines += _md_table(["System", *[_header(c) for c in order]], rows)

    if len(lb.table.systems) > 1:
        lines += ["", "### Pairwise p-values (Average)", "",
                  "Row system minus column system: mean difference on shared profiles, then p-value "
                  "(* = significant).", ""]
        names = [s.label for s in lb.table.systems]
        rows = []
        for a in names:
            cells = []
            for b in names:
                if a == b:
                    cells.append("—")
                    continue
                p = lb.table.pair("average", a, b)
                diff = p.mean_diff if p.a == a else -p.mean_diff
                cells.append(f"{diff:+.2f} p={_p(p.p_value)}{'*' if p.significant else ''}"
                             if math.isfinite(p.p_value) else "untested")
            rows.append([_md_escape(a), *cells])
        lines += _md_table(["", *[_md_escape(n) for n in names]], rows)

    lines += ["", "## Breakdowns", "",
              "Mean over systems of each system's mean; ▲ best and ▼ worst system score (Fig. 3).", ""]
    rows = []
    for cond in lb.breakdowns:
        cells = [f"{_num(cond.mean[c])} ▲{_num(cond.best[c].score)} ▼{_num(cond.worst[c].score)}" for c in order]
        rows.append([cond.breakdown, _md_escape(cond.condition), str(cond.n_systems), str(cond.n_interactions),
                     *cells])
    lines += _md_table(["Breakdown", "Condition", "Systems", "Interactions", *[_header(c) for c in order]], rows)
    allc = next((c for c in lb.breakdowns if c.condition == "all"), None)
    if allc is not None:
        lines += ["", "Best and worst system per criterion (all patients):", ""]
        rows = [[_header(c), f"{_md_escape(allc.best[c].system)} ({_num(allc.best[c].score)})",
                 f"{_md_escape(allc.worst[c].system)} ({_num(allc.worst[c].score)})"] for c in order]
        lines += _md_table(["Criterion", "Best", "Worst"], rows)
    sev = {c.condition: c for c in lb.breakdowns if c.breakdown == "patients"}
    if "severe" in sev or "non-severe" in sev:
        lines += ["", "Average score by patient severity:", ""]
        rows = []
        for s in lb.table.systems:
            cells = []
            for name in ("all", "severe", "non-severe"):
                c = sev.get(name)
                v = c.per_system.get(s.label) if c else None
                cells.append(f"{_num(v['average'])} (n={c.n_per_system[s.label]})" if v else "n/a")
            rows.append([_md_escape(s.label), *cells])
        lines += _md_table(["System", "All", "Severe", "Non-severe"], rows)

    lines += ["", "## Verbosity (clinician turns)", ""]
    rows = [[_md_escape(v.system), str(v.turns), _num(v.sentences_per_turn, 1), _num(v.words_per_turn, 1),
             "n/a" if not math.isfinite(v.share_long_turns) else f"{100 * v.share_long_turns:.0f}%"]
            for v in lb.verbosity]
    lines += _md_table(["System", "Turns", "Sentences/turn", "Words/turn", "Turns > 4 sentences"], rows)

    if lb.comparisons:
        lines += ["", "## Agreement with other setups (Table 5)", ""]
        rows = []
        for cmp in lb.comparisons:
            a = cmp.accuracy["average"]
            sp = "; ".join(f"{_md_escape(p.system)}: Δrank {_num(p.mean_rank_delta)}, "
                           f"{_num(100 * p.share_improved, 0)}% improved (n={p.n_items})"
                           for p in cmp.self_preference) or "—"
            rows.append([_md_escape(cmp.setup), _num(a.accuracy, 4), f"{a.n_agree}/{a.n_pairs}", sp])
        lines += _md_table(["Setup", "Pairwise accuracy", "Pairs agreeing", "Self-preference"], rows)

    if lb.warnings:
        lines += ["", "## Notes", ""] + [f"- {_md_escape(w)}" for w in lb.warnings]
    return "\n".join(lines) + "\n"


def _latex_escape(text: str) -> str:
    repl = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
            "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}
    return "".join(repl.get(ch, ch) for ch in text)


def to_latex(lb: Leaderboard) -> str:
    """Table 4: score with cluster as superscript, best score per column in bold (needs booktabs)."""
    protocols = ", ".join(sorted({r.judge_protocol for r in lb.runs}))
    order = _order(lb)
    harm = _harm(lb)
    gate = [r"Harm share [95\% CI]"] if lb.safety else []
    note = incomplete_note(lb)
    lines = [f"% {protocols} judge protocol; clusters: {settings_line(lb)}",
             "% scored conversations of the benchmark: "
             + "; ".join(f"{s.label} {lb.coverage(s.label)}" for s in lb.table.systems),
             r"\begin{tabular}{l" + "r" * (len(order) + len(gate)) + "}", r"\toprule",
             "Model & " + " & ".join([*(_latex_escape(_header(c)) for c in order), *gate]) + r" \\", r"\midrule"]
    for s in lb.table.systems:
        cells = _score_cells(lb, s, lambda x: rf"\textbf{{{x}}}", lambda x, k: rf"{x}\textsuperscript{{{k}}}")
        if lb.safety:
            cells.append(_latex_escape(_harm_cell(harm.get(s.label))))
        mark = r"\textsuperscript{\dag}" if s.label in lb.incomplete else ""
        lines.append(_latex_escape(s.label) + mark + " & " + " & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    if note:
        lines += ["", r"\dag\," + _latex_escape(note)]
    lines += levels_latex(lb)
    return "\n".join(lines) + "\n"


def _clean(obj: Any) -> Any:
    """JSON-safe copy: NaN and infinities become null."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_clean(v) for v in obj]
    return obj


def to_json(lb: Leaderboard) -> dict[str, Any]:
    """The whole leaderboard; ``target`` and ``safety`` only when there is something to say."""
    drop = {k for k in ("safety", "levels") if not getattr(lb, k)}
    if lb.rank_by == "average":
        drop.add("rank_by")
    if lb.target.legacy_files:
        drop.add("target")  # MindEval's leaderboard JSON as before run directories carried their target
    out = _clean(lb.model_dump(mode="python", exclude=drop))
    if not lb.target.legacy_files:
        out["table"]["criteria"] = list(lb.criteria)
    return out


def write_csvs(lb: Leaderboard, out: Path) -> list[Path]:
    paths = []
    order = _order(lb)
    harm = _harm(lb)
    gate = ["harm_n", "harm_k", "harm_share", "harm_ci_low", "harm_ci_high"] if lb.safety else []
    p = out / "leaderboard.csv"
    with p.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["rank", "system", "n", *[f"{c}_{x}" for c in order for x in ("mean", "cluster", "ci_low", "ci_high")],
                    *gate, "n_scored", "n_benchmark", "incomplete",
                    *level_columns(lb)])
        for s in lb.table.systems:
            row: list[Any] = [s.rank, s.label, s.n]
            for c in order:
                r = s.results[c]
                row += [f"{r.mean:.6f}", r.cluster, f"{r.ci_low:.6f}", f"{r.ci_high:.6f}"]
            if gate:
                h = harm.get(s.label)
                row += ["", "", "", "", ""] if h is None else [
                    h.n, h.k, f"{h.share:.6f}", f"{h.ci_low:.6f}", f"{h.ci_high:.6f}"]
            row += [*lb.coverage(s.label).split("/"), int(s.label in lb.incomplete)]
            row += level_cells(lb, s.label)
            w.writerow(row)
    paths.append(p)
    if lb.levels:
        paths.append(write_levels_csv(lb, out))
    p = out / "pairwise.csv"
    with p.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["criterion", "system_a", "system_b", "n_shared", "mean_diff", "p_value", "significant", "test",
                    "sided"])
        st = lb.table.settings
        for pr in lb.table.pairs:
            w.writerow([pr.criterion, pr.a, pr.b, pr.n_shared, f"{pr.mean_diff:.6f}", f"{pr.p_value:.6g}",
                        int(pr.significant), st.test, st.sided])
    paths.append(p)
    p = out / "breakdowns.csv"
    with p.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["breakdown", "condition", "system", "n", *order])
        for cond in lb.breakdowns:
            w.writerow([cond.breakdown, cond.condition, "(mean over systems)", cond.n_interactions,
                        *[f"{cond.mean[c]:.6f}" for c in order]])
            for name, vals in sorted(cond.per_system.items()):
                w.writerow([cond.breakdown, cond.condition, name, cond.n_per_system[name],
                            *[f"{vals[c]:.6f}" for c in order]])
    paths.append(p)
    p = out / "verbosity.csv"
    with p.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["system", "turns", "sentences_per_turn", "words_per_turn", "share_turns_over_4_sentences"])
        for v in lb.verbosity:
            w.writerow([v.system, v.turns, f"{v.sentences_per_turn:.6f}", f"{v.words_per_turn:.6f}",
                        f"{v.share_long_turns:.6f}"])
    paths.append(p)
    if lb.comparisons:
        p = out / "comparison.csv"
        with p.open("w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(["setup", "criterion", "pairwise_accuracy", "n_agree", "n_pairs"])
            for cmp in lb.comparisons:
                for c in order:
                    a = cmp.accuracy[c]
                    w.writerow([cmp.setup, c, f"{a.accuracy:.6f}", a.n_agree, a.n_pairs])
        paths.append(p)
    return paths


def write_outputs(lb: Leaderboard, out: str | Path) -> list[Path]:
    """Write leaderboard.{md,tex,json} and the CSV files into ``out``; return their paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    md, tex, js = out / "leaderboard.md", out / "leaderboard.tex", out / "leaderboard.json"
    md.write_text(to_markdown(lb), encoding="utf-8")
    tex.write_text(to_latex(lb), encoding="utf-8")
    js.write_text(json.dumps(to_json(lb), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return [md, tex, js, *write_csvs(lb, out)]


# ------------------------------------------------------------------ categorical levels


def _share(x: float | None) -> str:
    return "n/a" if x is None else _pct(x)


def _level_ids(lb: Leaderboard) -> list[str]:
    return [lv.id for lv in lb.target.scale.levels]


def levels_markdown(lb: Leaderboard) -> list[str]:
    """Per-level shares of relevant conversations per dimension, all-best share, worst level counts."""
    if not lb.levels:
        return []
    ids = _level_ids(lb)
    dims = list(lb.levels[0].report.dimensions)
    lines = ["", "## Levels", "",
             f"Share of relevant conversations at each level ({' / '.join(ids)}), with the number relevant and "
             "the number rated not relevant (left out); 95% Wilson intervals in leaderboard.json and levels.csv. "
             "All best: conversations with every relevant dimension at the best level.", ""]
    if lb.rank_by != "average":
        lines[1:1] = ["", f"Systems are ranked by {RANK_METRICS[lb.rank_by]} (the target's declared metric)."]
        lines.insert(1, "")
    rows = []
    for sl in lb.levels:
        r = sl.report
        cells = [" / ".join(_share(d.levels[i].share) for i in ids) + f" (n={d.n}, not relevant {d.not_relevant})"
                 for d in (r.dimensions[c] for c in dims)]
        worst = ", ".join(f"{i} {r.worst[i]}" for i in ids)
        rows.append([_md_escape(sl.system), *cells, f"{_share(r.all_best.share)} ({r.all_best.k}/{r.all_best.n})",
                     worst])
    return lines + _md_table(["System", *dims, "All best", "Worst level per conversation"], rows)


def levels_latex(lb: Leaderboard) -> list[str]:
    if not lb.levels:
        return []
    ids = _level_ids(lb)
    dims = list(lb.levels[0].report.dimensions)
    lines = ["", f"% share of relevant conversations per level: {' / '.join(ids)}",
             r"\begin{tabular}{l" + "r" * (len(dims) + 1) + "}", r"\toprule",
             "Model & " + " & ".join([*map(_latex_escape, dims), "All best"]) + r" \\", r"\midrule"]
    for sl in lb.levels:
        r = sl.report
        cells = [_latex_escape(" / ".join(_share(r.dimensions[c].levels[i].share) for i in ids)) for c in dims]
        lines.append(_latex_escape(sl.system) + " & " + " & ".join([*cells, _latex_escape(_share(r.all_best.share))])
                     + r" \\")
    return lines + [r"\bottomrule", r"\end{tabular}"]


def level_columns(lb: Leaderboard) -> list[str]:
    """leaderboard.csv columns of the level shares (none without categorical levels)."""
    if not lb.levels:
        return []
    dims = list(lb.levels[0].report.dimensions)
    return [*[f"{c}_{x}" for c in dims for x in ("n", "not_relevant", *(f"{i}_share" for i in _level_ids(lb)))],
            "all_best_share"]


def level_cells(lb: Leaderboard, system: str) -> list[str]:
    got = {sl.system: sl.report for sl in lb.levels}
    if not lb.levels:
        return []
    r = got.get(system)
    if r is None:
        return [""] * len(level_columns(lb))
    out: list[str] = []
    for d in r.dimensions.values():
        out += [str(d.n), str(d.not_relevant),
                *("" if d.levels[i].share is None else f"{d.levels[i].share:.6f}" for i in _level_ids(lb))]
    return [*out, "" if r.all_best.share is None else f"{r.all_best.share:.6f}"]


def write_levels_csv(lb: Leaderboard, out: Path) -> Path:
    """levels.csv: one row per system, dimension and level with k, n, share and 95% Wilson interval."""
    p = out / "levels.csv"
    with p.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["system", "dimension", "level", "k", "n", "not_relevant", "share", "ci_low", "ci_high"])
        for sl in lb.levels:
            for code, d in sl.report.dimensions.items():
                for lv, sh in d.levels.items():
                    w.writerow([sl.system, code, lv, sh.k, sh.n, d.not_relevant,
                                *(["", "", ""] if sh.share is None else
                                  [f"{sh.share:.6f}", f"{sh.ci95[0]:.6f}", f"{sh.ci95[1]:.6f}"])])
            ab = sl.report.all_best
            w.writerow([sl.system, "(all dimensions)", "all_best", ab.k, ab.n, "",
                        *(["", "", ""] if ab.share is None else
                          [f"{ab.share:.6f}", f"{ab.ci95[0]:.6f}", f"{ab.ci95[1]:.6f}"])])
    return p
