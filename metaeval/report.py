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

from .matrices import Matrix, MetricOptions, Verdict, long_table
from .rollup import AVERAGE

AXIS_TITLES: dict[str, str] = {
    "CAC": "Clinical Accuracy & Competence",
    "EPC": "Ethical & Professional Conduct",
    "AR": "Assessment & Response",
    "TRA": "Therapeutic Relationship & Alliance",
    "ASCQ": "AI-Specific Communication Quality",
    AVERAGE: "Average score",
}
LAYOUTS: dict[str, tuple[str, str]] = {
    "tau_mipsa": ("tau", "mipsa"), "alpha": ("alpha_ordinal", "alpha_interval"), "kappa": ("kappa", "alpha_nominal"),
}


def main_layout(m: Matrix) -> str:
    """The layout a matrix is shown in first: τ/MIPSA, or κ/α for a categorical dimension."""
    return "kappa" if m.categorical else "tau_mipsa"


def title_of(m: Matrix) -> str:
    return m.title or AXIS_TITLES.get(m.axis, m.axis)


def fmt_values(vals: list[float]) -> str:
    """``0.4223`` or ``[0.397, 0.4223, 0.4467]`` (NaN as ``nan``)."""
    def one(v: float) -> str:
        return "nan" if v is None or math.isnan(v) else f"{v:.4f}"
    if len(vals) == 1:
        return one(vals[0])
    return "[" + ", ".join(one(v) for v in vals) + "]"


def layout_caption(layout: str, opts: MetricOptions) -> str:
    if layout == "tau_mipsa":
        return (f"Kendall τ-{opts.tau_variant} below the diagonal, MIPSA (ties={opts.mipsa_ties}) above; "
                "[q1, median, q3] over judge runs")
    if layout == "kappa":
        return "Cohen's κ below the diagonal, Krippendorff α (nominal) above; [q1, median, q3] over judge runs"
    return "Krippendorff α: ordinal below the diagonal, interval above; [q1, median, q3] over judge runs"


def grid(m: Matrix, layout: str) -> list[list[str]]:
    """The matrix as text cells (row-major, empty diagonal)."""
    lower, upper = LAYOUTS[layout]
    rows: list[list[str]] = []
    for i, a in enumerate(m.labels):
        row = []
        for j, b in enumerate(m.labels):
            if i == j:
                row.append("")
                continue
            cell = m.cell(a, b)
            metric = lower if i > j else upper
            row.append(fmt_values(cell.summary(metric)) if metric in cell.values else "")
        rows.append(row)
    return rows


def markdown_matrix(m: Matrix, layout: str) -> str:
    title = title_of(m)
    head = f"### {title} — {layout_caption(layout, m.options)}\n\n"
    head += f"{m.n_interactions} interactions.\n\n"
    lines = ["| Annotator | " + " | ".join(m.labels) + " |", "|---" * (len(m.labels) + 1) + "|"]
    for label, row in zip(m.labels, grid(m, layout), strict=True):
        lines.append(f"| {label} | " + " | ".join(row) + " |")
    return head + "\n".join(lines) + "\n"


def _group_table(matrices: dict[str, Matrix], intro: str, head: tuple[str, ...], keys: tuple[str, ...]) -> list[str]:
    """The all-humans agreement per axis (``Matrix.group_alpha``) as a Markdown table, or nothing."""
    group = {ax: m for ax, m in matrices.items() if m.group_alpha}
    if not group:
        return []
    out = [intro, "| " + " | ".join(head) + " |\n" + "|---" * len(head) + "|"]
    for m in group.values():
        cells = [fmt_values([m.group_alpha[k]]) if k in m.group_alpha else "—" for k in keys]
        out.append(f"| {title_of(m)} | " + " | ".join(cells) + " |")
    return [*out, ""]


def markdown_report(matrices: dict[str, Matrix], verdict_list: list[Verdict], extra: dict[str, Any]) -> str:
    """The whole report as Markdown."""
    any_m = next(iter(matrices.values()))
    parts = ["# metaeval compare", ""]
    parts.append(f"Kendall τ variant: τ-{any_m.options.tau_variant}. MIPSA tie rule: {any_m.options.mipsa_ties}.")
    for note in extra.get("notes", []):
        parts.append(f"- {note}")
    parts.append("")
    if verdict_list:
        per_dimension = any(m.categorical for m in matrices.values())
        parts.append("## Verdicts (per dimension and average score)\n" if per_dimension
                     else "## Verdicts (average score)\n")
        parts += [f"- {v.line(any_m.options)}" for v in verdict_list]
        parts.append("")
    categorical = {ax: m for ax, m in matrices.items() if m.categorical}
    ordinal = {ax: m for ax, m in matrices.items() if not m.categorical}
    if categorical:
        parts.append("## Categorical dimensions: Cohen's κ and Krippendorff α (nominal)\n")
        parts += [markdown_matrix(m, "kappa") for m in categorical.values()]
        parts += _group_table(categorical, "All humans together (Fleiss' κ on the interactions every human rated; "
                              "Krippendorff α):\n", ("Dimension", "Fleiss κ", "α nominal"), ("fleiss_kappa", "nominal"))
    parts.append("## Kendall τ and MIPSA\n")
    parts += [markdown_matrix(m, "tau_mipsa") for m in ordinal.values()]
    if any_m.options.alpha:
        parts.append("## Krippendorff α\n")
        parts += [markdown_matrix(m, "alpha") for m in ordinal.values()]
        parts += _group_table(ordinal, "All humans together (Krippendorff α):\n", ("Axis", "ordinal", "interval"),
                              ("ordinal", "interval"))
    board = extra.get("leaderboards")
    if board:
        raters = list(board)
        systems = sorted({s for b in board.values() for s in b})
        parts.append("## Leaderboards (mean average score per system)\n")
        parts.append("| System | " + " | ".join(raters) + " |")
        parts.append("|---" * (len(raters) + 1) + "|")
        for s in systems:
            parts.append(f"| {s} | " + " | ".join(fmt_values([board[r].get(s, float('nan'))]) for r in raters) + " |")
        parts.append("")
    table5 = extra.get("table5") or []
    if table5:
        parts.append("## Judge swaps (paper Table 5)\n")
        parts.append("| Judge | Reference | Pairwise accuracy | Self system | Avg. rank Δ | % rank improvements | Profiles |")
        parts.append("|---|---|---|---|---|---|---|")
        for row in table5:
            parts.append(
                f"| {row['judge']} | {row['reference']} | {fmt_values([row['pairwise_accuracy']])} | "
                f"{row.get('self_system') or '—'} | {fmt_values([row['avg_rank_delta']]) if row.get('self_system') else '—'} | "
                f"{fmt_values([row['pct_rank_improvements']]) if row.get('self_system') else '—'} | "
                f"{row.get('n_profiles', '—')} |"
            )
        parts.append("")
    return "\n".join(parts)


def _clean(obj: Any) -> Any:
    """JSON-safe copy: NaN and infinities become null."""
    if isinstance(obj, float):
        return None if math.isnan(obj) or math.isinf(obj) else obj
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if isinstance(obj, np.generic):
        return _clean(obj.item())
    return obj


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
    return _clean(out)


def heatmap(m: Matrix, layout: str, path: Path) -> None:
    """A PNG of one matrix; colour = agreement (τ, or 2·MIPSA−1 on the τ scale; α as is)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lower, upper = LAYOUTS[layout]
    n = len(m.labels)
    colour = np.full((n, n), np.nan)
    text = grid(m, layout)
    for i, a in enumerate(m.labels):
        for j, b in enumerate(m.labels):
            if i == j:
                continue
            metric = lower if i > j else upper
            cell = m.cell(a, b)
            if metric not in cell.values:
                continue
            v = cell.point(metric)
            colour[i, j] = 2 * v - 1 if metric == "mipsa" else v
    size = 1.4 + 1.25 * n
    fig, ax = plt.subplots(figsize=(size, size * 0.8))
    ax.imshow(np.ma.masked_invalid(colour), cmap="Blues", vmin=0.0, vmax=1.0)
    for i in range(n):
        for j in range(n):
            label = text[i][j].replace(", ", ",\n") if text[i][j].startswith("[") else text[i][j]
            if label:
                dark = not np.isnan(colour[i, j]) and colour[i, j] > 0.6
                ax.text(j, i, label, ha="center", va="center", fontsize=7, color="white" if dark else "black")
    ax.set_xticks(range(n), m.labels, rotation=30, ha="right", fontsize=8)
    ax.set_yticks(range(n), m.labels, fontsize=8)
    ax.set_title(f"{title_of(m)}\n{layout_caption(layout, m.options)}", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_outputs(out: Path, matrices: dict[str, Matrix], verdict_list: list[Verdict],
                  extra: dict[str, Any], *, plots: bool = True) -> dict[str, Path]:
    """Write agreement.md, agreement.csv, agreement.json and the heatmaps into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    paths = {"markdown": out / "agreement.md", "csv": out / "agreement.csv", "json": out / "agreement.json"}
    paths["markdown"].write_text(markdown_report(matrices, verdict_list, extra), encoding="utf-8")
    long_table(matrices).to_csv(paths["csv"], index=False)
    paths["json"].write_text(json.dumps(json_report(matrices, verdict_list, extra), indent=1, ensure_ascii=False),
                             encoding="utf-8")
    if plots:
        alpha = next(iter(matrices.values())).options.alpha
        for ax, m in matrices.items():
            for layout in ["kappa"] if m.categorical else ["tau_mipsa"] + (["alpha"] if alpha else []):
                p = out / f"heatmap_{ax}_{layout}.png"
                heatmap(m, layout, p)
                paths[f"heatmap_{ax}_{layout}"] = p
    return paths
