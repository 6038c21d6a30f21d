"""Write comparison results: Markdown, CSV, JSON and one heatmap PNG per matrix.

Layout as in the paper's Table 3: Kendall τ below the diagonal, MIPSA above it, and
``[q1, median, q3]`` over runs for repeated judges. A second matrix per axis holds
Krippendorff's α (ordinal below, interval above). Every heading names the τ variant and
the MIPSA tie rule. A dimension on a categorical scale has one matrix: Cohen's κ below
the diagonal, Krippendorff's α (nominal) above.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mindeval.stats.precision import written, written_cell

from .matrices import Matrix, MetricOptions, Verdict, long_table
from .rollup import AVERAGE
from .statistics import GROUP_STATISTICS, LAYOUTS, STATISTICS, layouts_for
from .unit_report import unit_section, write_unit_csv

CELL_PT = 8  # the smallest text in a figure (cell values, captions), readable in print

AXIS_TITLES: dict[str, str] = {
    "CAC": "Clinical Accuracy & Competence",
    "EPC": "Ethical & Professional Conduct",
    "AR": "Assessment & Response",
    "TRA": "Therapeutic Relationship & Alliance",
    "ASCQ": "AI-Specific Communication Quality",
    AVERAGE: "Average score",
}


def main_layout(m: Matrix) -> str:
    """The layout a matrix is shown in first: τ/MIPSA, or κ/α for a categorical dimension."""
    return layouts_for(m.categorical, m.options)[0].key


def title_of(m: Matrix) -> str:
    return m.title or AXIS_TITLES.get(m.axis, m.axis)


def fmt_values(vals: list[float]) -> str:
    """``0.4223`` or ``[0.397, 0.4223, 0.4467]`` (NaN as ``nan``)."""
    def one(v: float) -> str:
        return "nan" if v is None or math.isnan(v) else f"{v:.4f}"
    if len(vals) == 1:
        return one(vals[0])
    return "[" + ", ".join(one(v) for v in vals) + "]"


def fmt_cell(vals: list[float], ci: list[float] | None = None, n: int | None = None) -> str:
    """:func:`fmt_values`, then the interval (``0.3800 [0.2100, 0.5300]``; ``ci [..]`` after a
    judge's ``[q1, median, q3]``) and ``n=K`` when the cell used fewer interactions than the matrix."""
    text = fmt_values(vals)
    if ci and not all(v is None or math.isnan(v) for v in vals):
        text += (" ci " if len(vals) > 1 else " ") + "[" + ", ".join(fmt_values([v]) for v in ci) + "]"
    if n is not None:
        text += f" n={n}"
    return text


def layout_caption(layout: str, opts: MetricOptions) -> str:
    runs = "[q1, median, q3] over judge runs"
    if opts.resamples:
        runs += (f"; [low, high] = {opts.ci:.0%} bootstrap interval ({opts.resamples} resamples of the interactions, "
                 "of whole profiles for MIPSA; of the median for judges)")
    return f"{LAYOUTS[layout].describe(opts)}; {runs}"


def grid(m: Matrix, layout: str) -> list[list[str]]:
    """The matrix as text cells (row-major, empty diagonal)."""
    lower, upper = LAYOUTS[layout].lower, LAYOUTS[layout].upper
    rows: list[list[str]] = []
    for i, a in enumerate(m.labels):
        row = []
        for j, b in enumerate(m.labels):
            if i == j:
                row.append("")
                continue
            cell = m.cell(a, b)
            metric = lower if i > j else upper
            if metric not in cell.values:
                row.append("")
                continue
            n = int(np.median(cell.n_items)) if cell.n_items else 0
            row.append(fmt_cell(cell.summary(metric), cell.ci.get(metric), n if n != m.n_interactions else None))
        rows.append(row)
    return rows


def markdown_matrix(m: Matrix, layout: str) -> str:
    title = title_of(m)
    head = f"### {title} — {layout_caption(layout, m.options)}\n\n"
    head += (f"{m.n_interactions} interactions; each cell is on the interactions both raters scored "
             "(n=K shown where fewer).\n\n" if m.options.resamples else f"{m.n_interactions} interactions.\n\n")
    lines = ["| Annotator | " + " | ".join(m.labels) + " |", "|---" * (len(m.labels) + 1) + "|"]
    for label, row in zip(m.labels, grid(m, layout), strict=True):
        lines.append(f"| {label} | " + " | ".join(row) + " |")
    return head + "\n".join(lines) + "\n"


def _group_table(matrices: dict[str, Matrix], intro: str, categorical: bool) -> list[str]:
    """The all-humans agreement per axis (``Matrix.group_alpha``) as a Markdown table, or nothing."""
    group = {ax: m for ax, m in matrices.items() if m.group_alpha}
    if not group:
        return []
    scale = "categorical" if categorical else "ordinal"
    stats = [g for g in GROUP_STATISTICS.values() if g.scale == scale]
    head = ("Dimension" if categorical else "Axis", *(g.header for g in stats), "interactions × raters")
    out = [intro, "| " + " | ".join(head) + " |\n" + "|---" * len(head) + "|"]
    for m in group.values():
        cells = [fmt_cell([m.group_alpha[g.key]], m.group_ci.get(g.key)) if g.key in m.group_alpha else "—"
                 for g in stats]
        n = m.group_n
        cells.append(f"{n.get('fleiss_interactions', n.get('interactions', 0))} × {n.get('raters', 0)}")
        out.append(f"| {title_of(m)} | " + " | ".join(cells) + " |")
    return [*out, ""]


def markdown_report(matrices: dict[str, Matrix], verdict_list: list[Verdict], extra: dict[str, Any]) -> str:
    """The whole report as Markdown."""
    opts = next(iter(matrices.values())).options
    parts = ["# metaeval compare", ""]
    parts.append(f"Kendall τ variant: τ-{opts.tau_variant}. MIPSA tie rule: {opts.mipsa_ties}.")
    parts += [f"- {note}" for note in extra.get("notes", [])]
    parts.append("")
    parts += _verdict_sections(matrices, verdict_list, extra, opts)
    parts += _test_sections(matrices, extra)
    parts += unit_section(extra)
    parts += _matrix_sections(matrices, opts)
    parts += _leaderboard_section(extra)
    parts += _table5_section(extra)
    return "\n".join(parts)


def _verdict_sections(matrices: dict[str, Matrix], verdict_list: list[Verdict], extra: dict[str, Any],
                      opts: MetricOptions) -> list[str]:
    from .alternative import JudgeVerdict
    from .confidence import ConfidentVerdict

    parts: list[str] = []
    summary = extra.get("judge_verdicts") or []
    if summary:
        parts.append("## Verdicts (one per judge and dimension: each question, its answer and evidence)\n")
        parts += [f"- {JudgeVerdict(**v).line()}" for v in summary]
        parts.append("")
    if verdict_list:
        per_dimension = any(m.categorical for m in matrices.values())
        parts.append("## Range checks (per dimension and average score)\n" if per_dimension
                     else "## Range checks (average score)\n")
        parts += [f"- {v.line(opts)}" for v in verdict_list]
        parts.append("")
    confident = extra.get("confident") or []
    if confident:
        parts.append("## Non-inferiority with confidence (ordinal dimensions and average score)\n")
        parts += [f"- {ConfidentVerdict(**v).line(opts)}" for v in confident]
        parts.append("")
    parts += alt_test_section(extra)
    return parts


def alt_test_lines(extra: dict[str, Any]) -> list[str]:
    """Every judge's alternative annotator test, per dimension, then the judges ranked by ρ per dimension."""
    from .alternative import JudgeAltTest, ranking_lines

    tests = [JudgeAltTest(**t) for t in extra.get("alt_tests") or []]
    out = [t.line() for t in tests]
    for ax in dict.fromkeys(t.axis for t in tests):
        out += ranking_lines(tests, ax)
    return out


def alt_test_section(extra: dict[str, Any]) -> list[str]:
    rows = extra.get("alt_tests") or []
    if not rows:
        return []
    grid = list(rows[0]["result"]["omega_grid"])
    head = ("Judge", "Dimension", "ε", "result", "ω", "ρ", "p per human (BY-corrected, items)",
            *(f"ω at ε={e}" for e in grid))
    out = ["## Alternative annotator test (Calderon et al. 2025)\n",
           "Each human left out in turn; per item the judge and that human are scored against the other humans "
           "(negative RMSE on ordinal scores, accuracy on categories); one-sided paired t-test of "
           "mean(W_human − W_judge) < ε per human, Benjamini-Yekutieli across humans; ω = share of humans beaten "
           "(pass at ω ≥ 0.5, needs ≥ 3 humans and ≥ 30 items per human), ρ = advantage probability.\n",
           "| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    for t in rows:
        r = t["result"]
        ps = ", ".join(f"{h['human']} {h['p_corrected']:.4f} ({h['n_items']})" for h in r["humans"])
        out.append(f"| {t['judge']} | {t['axis']} | {r['epsilon']:g} | {r['status']} | {r['omega']:.2f} | "
                   f"{fmt_values([r['rho']])} | {ps} | " + " | ".join(f"{r['omega_grid'][e]:.2f}" for e in grid) + " |")
    from .alternative import JudgeAltTest, ranking_lines

    tests = [JudgeAltTest(**t) for t in rows]
    ranks = [line for ax in dict.fromkeys(t.axis for t in tests) for line in ranking_lines(tests, ax)]
    return [*out, "", *[f"- {line}" for line in ranks], *([""] if ranks else [])]


def _test_sections(matrices: dict[str, Matrix], extra: dict[str, Any]) -> list[str]:
    """Judge vs judge, ties and calibration (each only when computed)."""
    parts: list[str] = []
    if extra.get("judge_diffs"):
        parts.append("## Judge vs judge\n")
        for ax in matrices:
            parts += judge_pair_lines(extra, ax)
    if extra.get("ties"):
        parts.append("## Ties\n")
        for ax in matrices:
            parts += tie_lines(extra, ax)
    if extra.get("calibration"):
        parts.append("## Calibration and distribution match\n")
        parts += calibration_lines(extra)
    return parts


def _matrix_sections(matrices: dict[str, Matrix], opts: MetricOptions) -> list[str]:
    """One section per layout of the registry (metaeval.statistics.LAYOUTS) that has matrices to show."""
    parts: list[str] = []
    for lay in LAYOUTS.values():
        shown = {ax: m for ax, m in matrices.items() if m.categorical == (lay.scale == "categorical")}
        if not shown or (lay.optional and not opts.alpha):
            continue
        parts.append(f"## {lay.heading}\n")
        parts += [markdown_matrix(m, lay.key) for m in shown.values()]
        if lay.group_intro:
            parts += _group_table(shown, lay.group_intro + "\n", lay.scale == "categorical")
    return parts


def _leaderboard_section(extra: dict[str, Any]) -> list[str]:
    board = extra.get("leaderboards")
    if not board:
        return []
    raters = list(board)
    systems = sorted({s for b in board.values() for s in b})
    parts = ["## Leaderboards (mean average score per system)\n", "| System | " + " | ".join(raters) + " |",
             "|---" * (len(raters) + 1) + "|"]
    for s in systems:
        parts.append(f"| {s} | " + " | ".join(fmt_values([board[r].get(s, float('nan'))]) for r in raters) + " |")
    return [*parts, ""]


def _table5_section(extra: dict[str, Any]) -> list[str]:
    table5 = extra.get("table5") or []
    if not table5:
        return []
    parts = ["## Judge swaps (paper Table 5)\n",
             "| Judge | Reference | Pairwise accuracy | Self system | Avg. rank Δ | % rank improvements | Profiles |",
             "|---|---|---|---|---|---|---|"]
    for row in table5:
        parts.append(
            f"| {row['judge']} | {row['reference']} | "
            f"{fmt_cell([row['pairwise_accuracy']], row.get('pairwise_accuracy_ci'))} | "
            f"{row.get('self_system') or '—'} | {fmt_values([row['avg_rank_delta']]) if row.get('self_system') else '—'} | "
            f"{fmt_values([row['pct_rank_improvements']]) if row.get('self_system') else '—'} | "
            f"{row.get('n_profiles', '—')} |"
        )
    return [*parts, ""]


def _ci(v: list[float] | tuple[float, float]) -> str:
    return "[" + ", ".join(fmt_values([x]) for x in v) + "]"


def judge_pair_lines(extra: dict[str, Any], axis: str = AVERAGE, reference: str = "Avg. P") -> list[str]:
    """Markdown table of the judge-vs-judge tests on ``axis`` against ``reference``, then the clusters."""
    rows = [d for d in extra.get("judge_diffs", []) if d["axis"] == axis and d["reference"] == reference]
    if not rows:
        return []
    out = [f"Judge vs judge ({axis}, agreement with {reference}; paired bootstrap over the same interactions, "
           "profiles for MIPSA; two-sided p):", "",
           "| Metric | Judge A | Judge B | A | B | Δ = A − B | interval of Δ | p |", "|---|---|---|---|---|---|---|---|"]
    for d in rows:
        out.append(f"| {d['metric']} | {d['judge_a']} | {d['judge_b']} | {fmt_values([d['a']])} | {fmt_values([d['b']])} "
                   f"| {d['diff']:+.4f} | {_ci([d['ci_low'], d['ci_high']])} | {d['p_value']:.4f} |")
    for c in extra.get("judge_clusters", []):
        if c["axis"] == axis and c["reference"] == reference:
            ranked = sorted(c["clusters"], key=lambda j: (c["clusters"][j], -c["values"][j], j))
            out.append(f"clusters by {c['metric']} (1 = best; same number = statistically tied): "
                       + ", ".join(f"{j} {c['clusters'][j]} ({c['values'][j]:.4f})" for j in ranked))
    return [*out, ""]


def tie_lines(extra: dict[str, Any], axis: str = AVERAGE) -> list[str]:
    rows = [t for t in extra.get("ties", []) if t["axis"] == axis]
    if not rows:
        return []
    out = [f"Ties ({axis}, against Avg. P): item-level pairwise accuracy, exact ties vs tie-calibrated "
           "(Deutsch et al. 2023), beside MIPSA under its three tie rules:", "",
           "| Judge | accuracy (ε = 0) | accuracy (calibrated) | ε | pairs | MIPSA sign | MIPSA exclude | MIPSA taub |",
           "|---|---|---|---|---|---|---|---|"]
    for t in rows:
        m = t["mipsa"]
        out.append(f"| {t['judge']} | {fmt_values([t['accuracy_exact_ties']])} | {fmt_values([t['accuracy_calibrated']])} "
                   f"| {fmt_values([t['epsilon']])} | {t['n_pairs']} | {fmt_values([m['sign']])} | "
                   f"{fmt_values([m['exclude']])} | {fmt_values([m['taub']])} |")
    return [*out, ""]


def calibration_lines(extra: dict[str, Any]) -> list[str]:
    rows = extra.get("calibration", [])
    if not rows:
        return []
    out = ["Calibration against Avg. P (bias = judge − Avg. P, mean over interactions; Wasserstein distance of the "
           "judge's scores to the humans'):", "", "| Judge | Axis | bias | interval | Wasserstein | interactions |",
           "|---|---|---|---|---|---|"]
    for c in rows:
        out.append(f"| {c['judge']} | {c['axis']} | {c['bias']:+.4f} | {_ci(c['bias_ci'])} | "
                   f"{fmt_values([c['wasserstein']])} | {c['n_interactions']} |")
    return [*out, ""]


def confidence_lines(result: Any, opts: MetricOptions) -> list[str]:
    """What ``metaeval compare`` prints after the verdicts and range checks: non-inferiority, the alternative
    annotator test, judge vs judge, ties."""
    extra = result.extra
    out = [v.line(opts) for v in result.confident]
    if out:
        out.append("")
    out += alt_test_lines(extra)
    if extra.get("alt_tests"):
        out.append("")
    out += judge_pair_lines(extra)
    out += tie_lines(extra)
    return out


def _csv_frame(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` as the CSV files write it: every float (inside lists too) to the stated precision."""
    return df.apply(lambda col: col.map(written_cell) if col.dtype.kind in "fO" else col)


def json_report(matrices: dict[str, Matrix], verdict_list: list[Verdict], extra: dict[str, Any]) -> dict[str, Any]:
    any_m = next(iter(matrices.values()))
    out: dict[str, Any] = {
        "options": any_m.options.model_dump(),
        "tau_variant": f"tau-{any_m.options.tau_variant}",
        "mipsa_ties": any_m.options.mipsa_ties,
        "matrices": {},
        "verdicts": [v.model_dump() for v in verdict_list],
        **extra,
    }
    for ax, m in matrices.items():
        d = m.model_dump()
        if m.categorical:
            d["scale"] = "categorical"
        d["summary"] = {
            f"{c.row}|{c.col}": {metric: c.summary(metric) for metric in c.values} for c in m.cells
        }
        out["matrices"][ax] = d
    return written(out)


def _scale(metric: str) -> tuple[str, float, float, str]:
    """Colour scale of a metric (its registry entry's heatmap): each metric its own map, range and colour bar."""
    h = STATISTICS[metric].heatmap
    return h.cmap, h.vmin, h.vmax, h.title


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def heatmap(m: Matrix, layout: str, path: Path) -> list[Path]:
    """PNG and SVG of one matrix: lower and upper triangle each in its metric's colour scale, with
    colour bars; the cells show the value, its interval and n where the matrix has them."""
    plt = _pyplot()
    lower, upper = LAYOUTS[layout].lower, LAYOUTS[layout].upper
    n = len(m.labels)
    tri = {lower: np.full((n, n), np.nan), upper: np.full((n, n), np.nan)}
    text = grid(m, layout)
    for i, a in enumerate(m.labels):
        for j, b in enumerate(m.labels):
            metric = lower if i > j else upper
            if i == j or metric not in m.cell(a, b).values:
                continue
            tri[metric][i, j] = m.cell(a, b).point(metric)
    size = 2.4 + 1.9 * n  # cells wide enough for value, interval and n at 8 pt
    fig, ax = plt.subplots(figsize=(size + 1.6, size * 0.8))
    metrics = [lower] if _scale(lower)[0] == _scale(upper)[0] and _scale(lower)[3] == _scale(upper)[3] else [lower, upper]
    shown = {}
    for metric in (lower, upper):
        cmap, vmin, vmax, _ = _scale(metric)
        shown[metric] = ax.imshow(np.ma.masked_invalid(tri[metric]), cmap=cmap, vmin=vmin, vmax=vmax)
    from mpl_toolkits.axes_grid1 import make_axes_locatable

    divider = make_axes_locatable(ax)
    for pos, metric in enumerate(metrics):
        bar = fig.colorbar(shown[metric], cax=divider.append_axes("right", size="3%", pad=0.15 if pos == 0 else 0.75))
        bar.set_label(_scale(metric)[3] + (" (below the diagonal)" if len(metrics) == 2 and metric == lower else
                                           " (above the diagonal)" if len(metrics) == 2 else ""), fontsize=8)
    for i in range(n):
        for j in range(n):
            label = text[i][j]
            if not label:
                continue
            label = label.replace(" ci [", "\n[").replace(" [", "\n[").replace(" n=", "\nn=")
            metric = lower if i > j else upper
            v = tri[metric][i, j]
            cmap, vmin, vmax, _ = _scale(metric)
            strong = np.isfinite(v) and abs((v - vmin) / (vmax - vmin) - (0.5 if vmin < 0 else 0.0)) > (
                0.3 if vmin < 0 else 0.6)
            ax.text(j, i, label, ha="center", va="center", fontsize=CELL_PT, color="white" if strong else "black")
    ax.set_xticks(range(n), m.labels, rotation=30, ha="right", fontsize=8)
    ax.set_yticks(range(n), m.labels, fontsize=8)
    ax.set_title(f"{title_of(m)}\n{layout_caption(layout, m.options)}", fontsize=CELL_PT, wrap=True)
    fig.tight_layout()
    paths = [path.with_suffix(".png"), path.with_suffix(".svg")]
    for p in paths:
        fig.savefig(p, dpi=120)
    plt.close(fig)
    return paths


def calibration_plots(extra: dict[str, Any], out: Path) -> list[Path]:
    """Per judge: bias against Avg. P per axis with its interval, and the confusion matrix of the
    average score (PNG and SVG, colour bar)."""
    rows = extra.get("calibration") or []
    paths: list[Path] = []
    if not rows:
        return paths
    plt = _pyplot()
    for judge in dict.fromkeys(r["judge"] for r in rows):
        mine = [r for r in rows if r["judge"] == judge]
        fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
        axes = [r["axis"] for r in mine]
        bias = np.array([r["bias"] for r in mine])
        ci = np.array([[np.nan if v is None else v for v in r["bias_ci"]] for r in mine], dtype=float)
        err = np.abs(np.vstack([bias - ci[:, 0], ci[:, 1] - bias]))
        left.bar(axes, bias, yerr=np.nan_to_num(err), capsize=4, color="tab:blue")
        left.axhline(0.0, color="black", linewidth=0.8)
        left.set_ylabel("judge − Avg. P (mean, with interval)")
        n = ", ".join(sorted({str(r["n_interactions"]) for r in mine if r.get("n_interactions") is not None}))
        left.set_title(f"{judge}: bias per axis (n = {n or '?'} interactions)\nWasserstein to humans: "
                       + ", ".join(f"{r['axis']} {r['wasserstein']:.2f}" for r in mine), fontsize=CELL_PT)
        avg = next((r for r in mine if r["axis"] == AVERAGE), mine[-1])
        conf = np.array(avg["confusion"], dtype=float)
        im = right.imshow(conf, cmap="Oranges", origin="lower")
        for (i, j), v in np.ndenumerate(conf):
            right.text(j, i, f"{int(v)}", ha="center", va="center", fontsize=CELL_PT)
        right.set_xticks(range(len(avg["levels"])), avg["levels"])
        right.set_yticks(range(len(avg["levels"])), avg["levels"])
        right.set_xlabel("Avg. P (rounded)")
        right.set_ylabel(f"{judge} (rounded, every run)")
        right.set_title(f"confusion, {avg['axis']}", fontsize=8)
        fig.colorbar(im, ax=right, label="judgments")
        fig.tight_layout()
        safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in judge)
        for suffix in (".png", ".svg"):
            p = out / f"calibration_{safe}{suffix}"
            fig.savefig(p, dpi=120)
            paths.append(p)
        plt.close(fig)
    return paths


def write_outputs(out: Path, matrices: dict[str, Matrix], verdict_list: list[Verdict],
                  extra: dict[str, Any], *, plots: bool = True) -> dict[str, Path]:
    """Write agreement.md, agreement.csv, agreement.json and the heatmaps into ``out``.

    Floats are written to :data:`mindeval.stats.precision.DECIMALS` places (the Markdown to 4)."""
    out.mkdir(parents=True, exist_ok=True)
    paths = {"markdown": out / "agreement.md", "csv": out / "agreement.csv", "json": out / "agreement.json"}
    paths["markdown"].write_text(markdown_report(matrices, verdict_list, extra), encoding="utf-8")
    _csv_frame(long_table(matrices)).to_csv(paths["csv"], index=False)
    paths["json"].write_text(json.dumps(json_report(matrices, verdict_list, extra), indent=1, ensure_ascii=False),
                             encoding="utf-8")
    if plots:
        for ax, m in matrices.items():
            for layout in [lay.key for lay in layouts_for(m.categorical, m.options)]:
                p = out / f"heatmap_{ax}_{layout}.png"
                heatmap(m, layout, p)
                paths[f"heatmap_{ax}_{layout}"] = p
        for p in calibration_plots(extra, out):
            paths[f"calibration_{p.name}"] = p
        from .forest import forest_plot

        for p in forest_plot(matrices, out, _pyplot()):
            paths[f"forest_{p.suffix[1:]}"] = p
    paths.update(write_unit_csv(out, extra))
    if extra.get("judge_diffs"):
        paths["judge_pairs"] = out / "judge_pairs.csv"
        _csv_frame(pd.DataFrame(extra["judge_diffs"])).to_csv(paths["judge_pairs"], index=False)
    if extra.get("calibration"):
        paths["calibration"] = out / "calibration.csv"
        _csv_frame(pd.DataFrame([{k: v for k, v in r.items() if k not in ("confusion", "levels")}
                                 for r in extra["calibration"]])).to_csv(paths["calibration"], index=False)
    return paths
