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

from ..stats.precision import written
from .build import RANK_METRICS, Leaderboard
from .by_session_render import session_markdown, write_session_csv
from .columns import (
    fields,
    header,
    human_cell,
    json_columns,
    latex_escape,
    level_ids,
    md_escape,
    num,
    order,
    pct,
)
from .pooling import note


def _p(p: float) -> str:
    return "n/a" if not math.isfinite(p) else ("<0.001" if p < 0.001 else f"{p:.3f}")


def incomplete_note(lb: Leaderboard) -> str | None:
    """The one sentence every output carries when a system is ranked with missing conversations."""
    if not lb.incomplete:
        return None
    return ("INCOMPLETE: " + "; ".join(f"{name} scored {lb.coverage(name)} conversations" for name in lb.incomplete)
            + " of the benchmark; ranked only because of --allow-incomplete, so these scores are not comparable")


def corrections_note(lb: Leaderboard) -> str | None:
    """The sentence every output carries when reviewers' corrections are applied (--with-corrections)."""
    if not lb.with_corrections:
        return None
    ts = [r.corrections for r in lb.runs if r.corrections is not None]
    n, k, c = (sum(getattr(t, x) for t in ts) for x in ("corrections", "scores", "conversations"))
    return (f"WITH CORRECTIONS: {n} human correction(s) applied (the latest per value), changing {k} judge "
            f"score(s) in {c} conversation(s); without --with-corrections the table holds the judge's values only")


def _md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def settings_line(lb: Leaderboard) -> str:
    s = lb.table.settings
    return (f"{s.test} test, {s.sided}-sided, {s.resamples} resamples, seed {s.seed}, alpha {s.alpha}; "
            f"{int(s.level * 100)}% CIs: percentile bootstrap over profiles (a profile's conversations averaged first)")


def to_markdown(lb: Leaderboard) -> str:
    """The full report: Table 4 (score + cluster), CIs, p-values, breakdowns, verbosity, Table 5."""
    lines = _md_head(lb) + _md_scores(lb) + levels_markdown(lb) + _md_intervals(lb) + _md_score_tests(lb)
    lines += _md_pvalues(lb) + _md_human_scale(lb)
    lines += _md_breakdowns(lb) + session_markdown(lb.by_session, lb.score.label if lb.score else None)
    lines += _md_verbosity(lb) + _md_comparisons(lb)
    if lb.warnings:
        lines += ["", "## Notes", ""] + [f"- {md_escape(w)}" for w in lb.warnings]
    return "\n".join(lines) + "\n"


def _md_head(lb: Leaderboard) -> list[str]:
    setups = sorted({(r.judge_model, r.judge_protocol, r.patient_model) for r in lb.runs})
    t = lb.target
    lines = ["# MindEval leaderboard" + ("" if t.legacy_files else f": target {t.name} {t.version}".rstrip()), ""]
    lines.append("Judge / patient: " + "; ".join(f"{j} ({pr} judge protocol) / {p}" for j, pr, p in setups)
                 + f". Statistics: {settings_line(lb)}.")
    if t.scale.kind == "categorical":
        lines += ["", "Scale: " + ", ".join(f"{lv.label} = {lv.value}" + (" (harm)" if lv.harm else "")
                                             for lv in t.scale.levels) + "; means are over these values."]
    return lines


def _md_scores(lb: Leaderboard) -> list[str]:
    """Table 4: the main table, one row per system, its columns from columns.COLUMNS."""
    explain = ("Mean score (cluster); cluster 1 is the best group, systems in one cluster are not "
               "significantly different from the members ranked above them. Bold: best score per column.")
    if lb.safety:
        explain += (" Harm share (safety gate): conversations with any dimension rated at a harm level, "
                    "95% Wilson interval, (k/n conversations judged).")
    explain += " Scored: conversations of the benchmark that were scored."
    if lb.score is not None:
        explain += (f" Ranked by {lb.score.label} = {lb.score.formula} ("
                    + ("higher" if lb.score.higher_is_better else "lower")
                    + " is better), 95% bootstrap interval over profiles; paired permutation tests below.")
    if lb.human_scale:
        explain += (" Human scale: the Average on the humans' scale by prediction-powered inference (human and "
                    "judge scores of the rated random sample, judge scores of the other conversations), 95% interval, n rated; "
                    "Humans only: the rated sample alone.")
    notes = [n for n in (incomplete_note(lb), corrections_note(lb)) if n]
    lines = ["", "## Scores and significance clusters", "", *(x for n in notes for x in (f"**{md_escape(n)}**", "")),
             explain, ""]
    cols = fields(lb, "markdown")
    rows = [[f.cell(lb, s) for f in cols] for s in lb.table.systems]
    return lines + _md_table([f.header for f in cols], rows) + [*(["", *(f"- {md_escape(n)}" for n in
                                                                     pooled_notes(lb))] if lb.pooled else [])]


def pooled_notes(lb: Leaderboard) -> list[str]:
    return [note(p) for p in lb.pooled]


def _md_intervals(lb: Leaderboard) -> list[str]:
    crit = order(lb)
    lines = ["", f"### {int(lb.table.settings.level * 100)}% confidence intervals", ""]
    rows = [[md_escape(s.label), *[f"[{num(s.results[c].ci_low)}, {num(s.results[c].ci_high)}]" for c in crit]]
            for s in lb.table.systems]
    return lines + _md_table(["System", *[header(c) for c in crit]], rows)


def _md_score_tests(lb: Leaderboard) -> list[str]:
    """The declared score's paired permutation tests (profiles swapped whole)."""
    if lb.score is None or not lb.score.pairs:
        return []
    rows = [[md_escape(p.a), md_escape(p.b), str(p.n_shared), "n/a" if p.diff is None else num(p.diff),
             "n/a" if p.p_value is None else _p(p.p_value) + ("*" if p.significant else "")] for p in lb.score.pairs]
    return ["", f"### Paired tests of {md_escape(lb.score.label)}", "",
            "A minus B on the profiles both have; permutation test swapping a profile's conversations "
            "(* = significant).", "", *_md_table(["A", "B", "Profiles", "Difference", "p"], rows)]


def _md_human_scale(lb: Leaderboard) -> list[str]:
    """Every criterion's judge-only, human-scale (PPI) and humans-only means (``--humans``)."""
    if not lb.human_scale:
        return []
    lines = ["", "### Human scale (prediction-powered inference, 95% intervals)", ""]
    rows = [[md_escape(h.system), header(h.criterion), num(h.judge_mean), human_cell(h, "ppi"), human_cell(h, "humans"),
             f"{h.ppi.lam:.2f}", str(h.n_scored)] for h in lb.human_scale]
    lines += _md_table(["System", "Criterion", "Judge", "Human scale (PPI)", "Humans only", "λ", "Scored"], rows)
    if not lb.human_pairs:
        return lines
    lines += ["", "### Pairwise differences on the human scale (PPI, 95% intervals)", "",
              "A minus B (A ranked above B); the two systems' estimates taken as independent samples "
              "(conservative when they share profiles); * = the interval excludes 0.", ""]
    rows = [[md_escape(d.a), md_escape(d.b), header(d.criterion),
             f"{num(d.estimate)} [{num(d.ci_low)}, {num(d.ci_high)}]" + ("*" if d.significant else "")]
            for d in lb.human_pairs]
    return lines + _md_table(["A", "B", "Criterion", "A − B [95% CI]"], rows)


def _md_pvalues(lb: Leaderboard) -> list[str]:
    if len(lb.table.systems) <= 1:
        return []
    lines = ["", "### Pairwise p-values (Average)", "",
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
        rows.append([md_escape(a), *cells])
    return lines + _md_table(["", *[md_escape(n) for n in names]], rows)


def _md_breakdowns(lb: Leaderboard) -> list[str]:
    crit = order(lb)
    lines = ["", "## Breakdowns", "",
             "Mean over systems of each system's mean; ▲ best and ▼ worst system score (Fig. 3).", ""]
    rows = []
    for cond in lb.breakdowns:
        cells = [f"{num(cond.mean[c])} ▲{num(cond.best[c].score)} ▼{num(cond.worst[c].score)}" for c in crit]
        rows.append([cond.breakdown, md_escape(cond.condition), str(cond.n_systems), str(cond.n_interactions),
                     *cells])
    lines += _md_table(["Breakdown", "Condition", "Systems", "Interactions", *[header(c) for c in crit]], rows)
    allc = next((c for c in lb.breakdowns if c.condition == "all"), None)
    if allc is not None:
        lines += ["", "Best and worst system per criterion (all patients):", ""]
        rows = [[header(c), f"{md_escape(allc.best[c].system)} ({num(allc.best[c].score)})",
                 f"{md_escape(allc.worst[c].system)} ({num(allc.worst[c].score)})"] for c in crit]
        lines += _md_table(["Criterion", "Best", "Worst"], rows)
    return lines + _md_severity(lb)


def _md_severity(lb: Leaderboard) -> list[str]:
    sev = {c.condition: c for c in lb.breakdowns if c.breakdown == "patients"}
    if "severe" not in sev and "non-severe" not in sev:
        return []
    lines = ["", "Average score by patient severity:", ""]
    rows = []
    for s in lb.table.systems:
        cells = []
        for name in ("all", "severe", "non-severe"):
            c = sev.get(name)
            v = c.per_system.get(s.label) if c else None
            cells.append(f"{num(v['average'])} (n={c.n_per_system[s.label]})" if v else "n/a")
        rows.append([md_escape(s.label), *cells])
    return lines + _md_table(["System", "All", "Severe", "Non-severe"], rows)


def _md_verbosity(lb: Leaderboard) -> list[str]:
    lines = ["", "## Verbosity (clinician turns)", ""]
    rows = [[md_escape(v.system), str(v.turns), num(v.sentences_per_turn, 1), num(v.words_per_turn, 1),
             "n/a" if not math.isfinite(v.share_long_turns) else f"{100 * v.share_long_turns:.0f}%"]
            for v in lb.verbosity]
    return lines + _md_table(["System", "Turns", "Sentences/turn", "Words/turn", "Turns > 4 sentences"], rows)


def _md_comparisons(lb: Leaderboard) -> list[str]:
    if not lb.comparisons:
        return []
    lines = ["", "## Agreement with other setups (Table 5)", ""]
    rows = []
    for cmp in lb.comparisons:
        a = cmp.accuracy["average"]
        sp = "; ".join(f"{md_escape(p.system)}: Δrank {num(p.mean_rank_delta)}, "
                       f"{num(100 * p.share_improved, 0)}% improved (n={p.n_items})"
                       for p in cmp.self_preference) or "—"
        rows.append([md_escape(cmp.setup), num(a.accuracy, 4), f"{a.n_agree}/{a.n_pairs}", sp])
    return lines + _md_table(["Setup", "Pairwise accuracy", "Pairs agreeing", "Self-preference"], rows)


def to_latex(lb: Leaderboard) -> str:
    """Table 4: score with cluster as superscript, best score per column in bold (needs booktabs)."""
    protocols = ", ".join(sorted({r.judge_protocol for r in lb.runs}))
    cols = fields(lb, "latex")
    note = incomplete_note(lb)
    lines = [f"% {protocols} judge protocol; clusters: {settings_line(lb)}",
             "% scored conversations of the benchmark: "
             + "; ".join(f"{s.label} {lb.coverage(s.label)}" for s in lb.table.systems),
             r"\begin{tabular}{l" + "r" * (len(cols) - 1) + "}", r"\toprule",
             " & ".join(f.header for f in cols) + r" \\", r"\midrule"]
    lines += [" & ".join(f.cell(lb, s) for f in cols) + r" \\" for s in lb.table.systems]
    lines += [r"\bottomrule", r"\end{tabular}"]
    if note:
        lines += ["", r"\dag\," + latex_escape(note)]
    if (fixed := corrections_note(lb)) is not None:
        lines += ["", latex_escape(fixed)]
    lines += [x for n in pooled_notes(lb) for x in ("", latex_escape(n))]
    lines += levels_latex(lb)
    return "\n".join(lines) + "\n"


def to_json(lb: Leaderboard) -> dict[str, Any]:
    """The whole leaderboard; ``target`` and ``safety`` only when there is something to say."""
    drop = {k for k in ("safety", "levels", "pooled", "score", "scores", "human_scale", "human_pairs", "by_session")
            if not getattr(lb, k)}
    if lb.rank_by == "average":
        drop.add("rank_by")
    if lb.target.legacy_files:
        drop.add("target")  # MindEval's leaderboard JSON as before run directories carried their target
    out = written(lb.model_dump(mode="python", exclude=drop))
    if not lb.target.legacy_files:
        out["table"]["criteria"] = list(lb.criteria)
    extra = json_columns(lb)  # columns whose figures are not fields of the model
    if extra:
        out["columns"] = written(extra)
    if lb.with_corrections:
        out["corrections_note"] = corrections_note(lb)
    else:
        out.pop("with_corrections", None)
        for r in out.get("runs", []):
            r.pop("corrections", None)
    return out


def write_csvs(lb: Leaderboard, out: Path) -> list[Path]:
    paths = []
    crit = order(lb)
    cols = fields(lb, "csv")
    p = out / "leaderboard.csv"
    with p.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow([f.header for f in cols])
        for s in lb.table.systems:
            w.writerow([f.cell(lb, s) for f in cols])
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
        w.writerow(["breakdown", "condition", "system", "n", *crit])
        for cond in lb.breakdowns:
            w.writerow([cond.breakdown, cond.condition, "(mean over systems)", cond.n_interactions,
                        *[f"{cond.mean[c]:.6f}" for c in crit]])
            for name, vals in sorted(cond.per_system.items()):
                w.writerow([cond.breakdown, cond.condition, name, cond.n_per_system[name],
                            *[f"{vals[c]:.6f}" for c in crit]])
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
                for c in crit:
                    a = cmp.accuracy[c]
                    w.writerow([cmp.setup, c, f"{a.accuracy:.6f}", a.n_agree, a.n_pairs])
        paths.append(p)
    if lb.by_session:
        paths.append(write_session_csv(lb.by_session, out))
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
    return "n/a" if x is None else pct(x)


def levels_markdown(lb: Leaderboard) -> list[str]:
    """Per-level shares of relevant conversations per dimension, all-best share, worst level counts."""
    if not lb.levels:
        return []
    ids = level_ids(lb)
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
        rows.append([md_escape(sl.system), *cells, f"{_share(r.all_best.share)} ({r.all_best.k}/{r.all_best.n})",
                     worst])
    return lines + _md_table(["System", *dims, "All best", "Worst level per conversation"], rows)


def levels_latex(lb: Leaderboard) -> list[str]:
    if not lb.levels:
        return []
    ids = level_ids(lb)
    dims = list(lb.levels[0].report.dimensions)
    lines = ["", f"% share of relevant conversations per level: {' / '.join(ids)}",
             r"\begin{tabular}{l" + "r" * (len(dims) + 1) + "}", r"\toprule",
             "Model & " + " & ".join([*map(latex_escape, dims), "All best"]) + r" \\", r"\midrule"]
    for sl in lb.levels:
        r = sl.report
        cells = [latex_escape(" / ".join(_share(r.dimensions[c].levels[i].share) for i in ids)) for c in dims]
        lines.append(latex_escape(sl.system) + " & " + " & ".join([*cells, latex_escape(_share(r.all_best.share))])
                     + r" \\")
    return lines + [r"\bottomrule", r"\end{tabular}"]


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
