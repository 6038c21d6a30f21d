"""The forest plot of ``metaeval compare``: each judge's Kendall τ with the average human (Avg. P)
per dimension, with its interval and n, against the range of human-human τ on that dimension (the
verdicts' comparison, drawn). Ordinal dimensions with at least two humans; categorical ones have
no average human and are left to their heatmaps."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from .matrices import AVG_LABEL, Matrix

METRIC = "tau"
CELL_PT = 8


def _rows(m: Matrix) -> tuple[list[tuple[str, float, float, float, int]], list[float]]:
    """(judge, τ, interval low, high, n) per judge, and the human-human τ values of ``m``."""
    humans = [lab for lab in m.labels if m.kinds[lab] == "human"]
    judges = [lab for lab in m.labels if m.kinds[lab] == "judge"]
    hh = [v for i, a in enumerate(humans) for b in humans[i + 1:] if np.isfinite(v := m.cell(a, b).point(METRIC))]
    rows = []
    for j in judges:
        c = m.cell(j, AVG_LABEL)
        lo, hi = (c.ci.get(METRIC) or [float("nan"), float("nan")])[:2]
        rows.append((j, c.point(METRIC), lo, hi, int(np.median(c.n_items)) if c.n_items else 0))
    return rows, hh


def drawable(matrices: dict[str, Matrix]) -> dict[str, Matrix]:
    """The matrices the forest plot has a row for (ordinal, with Avg. P and two humans or more)."""
    return {ax: m for ax, m in matrices.items() if not m.categorical and AVG_LABEL in m.labels
            and sum(k == "human" for k in m.kinds.values()) >= 2 and any(k == "judge" for k in m.kinds.values())}


def forest_plot(matrices: dict[str, Matrix], out: Path, pyplot: Any) -> list[Path]:
    """``forest_tau.{png,svg}`` in ``out`` (nothing when no matrix is drawable)."""
    shown = drawable(matrices)
    if not shown:
        return []
    plt = pyplot
    groups = [(ax, *_rows(m)) for ax, m in shown.items()]
    n_rows = sum(len(rows) for _, rows, _ in groups)
    fig, ax = plt.subplots(figsize=(8.5, 1.4 + 0.42 * n_rows + 0.25 * len(groups)))
    y, ticks, labels = 0.0, [], []
    for axis, rows, hh in groups:
        top = y
        for judge, tau, lo, hi, n in rows:
            has_ci = np.isfinite(lo) and np.isfinite(hi)
            ax.errorbar(tau, y, xerr=[[tau - lo], [hi - tau]] if has_ci else None, fmt="o", capsize=4,
                        color="tab:blue")
            interval = f"[{lo:.2f}, {hi:.2f}]" if has_ci else "(no interval)"
            ax.annotate(f"τ {tau:.2f} {interval} n={n}", (1.0, y), xycoords=("axes fraction", "data"),
                        xytext=(6, 0), textcoords="offset points", va="center", fontsize=CELL_PT)
            ticks.append(y)
            labels.append(f"{axis}: {judge}")
            y += 1
        if hh:  # the human-human range behind the group's rows, each pair a grey tick
            ax.fill_betweenx([top - 0.4, y - 0.6], min(hh), max(hh), color="0.85", zorder=0,
                             label="human-human range" if axis == groups[0][0] else None)
            for v in hh:
                ax.plot([v, v], [top - 0.4, y - 0.6], color="0.55", linewidth=1, zorder=1)
        y += 0.5
    ax.set_yticks(ticks, labels, fontsize=CELL_PT)
    ax.invert_yaxis()
    ax.set_xlim(-1, 1)
    ax.axvline(0, color="black", linewidth=0.6)
    ax.set_xlabel(f"Kendall τ with {AVG_LABEL} (95% interval)", fontsize=CELL_PT)
    ax.set_title("Judge-human agreement against human-human agreement\n"
                 "grey band: range of τ between two humans (each pair a line); n = interactions",
                 fontsize=CELL_PT)
    ax.legend(loc="lower left", fontsize=CELL_PT)
    ax.tick_params(labelsize=CELL_PT)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    paths = [out / "forest_tau.png", out / "forest_tau.svg"]
    for p in paths:
        fig.savefig(p, dpi=120)
    plt.close(fig)
    return paths
