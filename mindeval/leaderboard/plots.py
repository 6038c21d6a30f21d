"""Figures of a computed leaderboard (``mindeval leaderboard --plots``), PNG and SVG.

Every number drawn comes from the :class:`~mindeval.leaderboard.build.Leaderboard` as built:
the table's means, 95% intervals and clusters, and the breakdowns' per-system means (the
paper's Figure 3: by patient severity and by interaction length; and any other breakdown
the runs differ in). Nothing is computed again here. SVG text stays text (searchable).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from .breakdowns import Condition
from .build import Leaderboard

AVERAGE = "average"
FORMATS = ("png", "svg")
TITLES = {"patients": "patient severity", "turns": "interaction length (turns)"}


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "mindeval", "font.size": 9})
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, out: Path, stem: str) -> list[Path]:
    paths = []
    for fmt in FORMATS:
        path = out / f"{stem}.{fmt}"
        fig.savefig(path, dpi=130, metadata={"Date": None} if fmt == "svg" else None, bbox_inches="tight")
        paths.append(path)
    fig.clf()
    return paths


def _systems(lb: Leaderboard) -> list[str]:
    return [s.label for s in lb.table.systems]  # best first


def _criteria(lb: Leaderboard) -> list[str]:
    return [c for c in lb.table.criteria if c != AVERAGE]


def leaderboard_chart(lb: Leaderboard, out: Path) -> list[Path]:
    """Average score per system with its 95% interval, coloured and labelled by cluster."""
    plt = _pyplot()
    systems = lb.table.systems
    fig, ax = plt.subplots(figsize=(7, 0.9 + 0.45 * len(systems)))
    cmap = plt.get_cmap("tab10")
    for y, s in enumerate(systems):
        r = s.results[AVERAGE]
        ax.errorbar(r.mean, y, xerr=[[r.mean - r.ci_low], [r.ci_high - r.mean]], fmt="o", capsize=4,
                    color=cmap((r.cluster - 1) % 10))
        ax.annotate(f"{r.mean:.2f}  cluster {r.cluster}", (r.ci_high, y), xytext=(6, 0),
                    textcoords="offset points", va="center")
    ax.set_yticks(range(len(systems)), [s.label for s in systems])
    ax.invert_yaxis()
    ax.set_xlabel("average score (95% interval)")
    st = lb.table.settings
    ax.set_title(f"Leaderboard: clusters by {st.test} test ({st.sided}-sided, alpha {st.alpha})")
    ax.grid(axis="x", alpha=0.3)
    lo = min(s.results[AVERAGE].ci_low for s in systems)
    hi = max(s.results[AVERAGE].ci_high for s in systems)
    span = max(hi - lo, 0.5)
    ax.set_xlim(lo - 0.1 * span, hi + 0.45 * span)  # room for the labels right of each interval
    paths = _save(fig, out, "leaderboard")
    plt.close(fig)
    return paths


def dimension_bars(lb: Leaderboard, out: Path) -> list[Path]:
    """Mean per dimension and system with 95% intervals."""
    plt = _pyplot()
    criteria, systems = _criteria(lb), lb.table.systems
    width = 0.8 / max(len(systems), 1)
    fig, ax = plt.subplots(figsize=(1.6 + 1.3 * len(criteria), 4))
    for k, s in enumerate(systems):
        xs = [i + (k - (len(systems) - 1) / 2) * width for i in range(len(criteria))]
        res = [s.results[c] for c in criteria]
        ax.bar(xs, [r.mean for r in res], width, label=s.label,
               yerr=[[r.mean - r.ci_low for r in res], [r.ci_high - r.mean for r in res]], capsize=2)
    ax.set_xticks(range(len(criteria)), criteria)
    ax.set_ylabel("mean score (95% interval)")
    ax.set_title("Score per dimension")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.grid(axis="y", alpha=0.3)
    paths = _save(fig, out, "dimensions")
    plt.close(fig)
    return paths


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


_SETTING = re.compile(r"\s*\[[^\]]*\]$")  # a label's run setting, e.g. "model [40 turns]"


def _by_system(conditions: list[Condition]) -> dict[str, dict[str, float]]:
    """Condition → system → average; across runs a system is its label without the run setting
    (``model [40 turns]`` and ``model [20 turns]`` are one clinician), unless that merges two."""
    out: dict[str, dict[str, float]] = {}
    for cond in conditions:
        bases = {label: _SETTING.sub("", label) for label in cond.per_system}
        merged = len(set(bases.values())) < len(bases)
        out[cond.condition] = {(label if merged else bases[label]): v[AVERAGE] for label, v in cond.per_system.items()}
    return out


def breakdown_chart(lb: Leaderboard, breakdown: str, conditions: list[Condition], out: Path) -> list[Path]:
    """Average score per system under each condition of one breakdown (Figure 3's panels)."""
    plt = _pyplot()
    values = _by_system(conditions)
    systems = list(dict.fromkeys(s for label in _systems(lb) for s in (label, _SETTING.sub("", label))
                                 if any(s in v for v in values.values())))
    width = 0.8 / max(len(conditions), 1)
    fig, ax = plt.subplots(figsize=(2.2 + (0.5 + 0.4 * len(conditions)) * len(systems), 4))
    for k, cond in enumerate(conditions):
        xs = [i + (k - (len(conditions) - 1) / 2) * width for i in range(len(systems))]
        ys = [values[cond.condition].get(s, float("nan")) for s in systems]
        ax.bar(xs, ys, width, label=f"{cond.condition} (n={cond.n_interactions})")
    ax.set_xticks(range(len(systems)), systems, rotation=20, ha="right")
    ax.set_ylabel("average score")
    title = TITLES.get(breakdown, breakdown)
    ax.set_title(f"Average score by {title}")
    ax.legend(title=title, fontsize=7)
    ax.grid(axis="y", alpha=0.3)
    stem = "by_severity" if breakdown == "patients" else f"by_{_slug(breakdown)}"
    paths = _save(fig, out, stem)
    plt.close(fig)
    return paths


def write_plots(lb: Leaderboard, out: str | Path) -> list[Path]:
    """Every figure of ``lb`` into ``out`` as PNG and SVG; returns the paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = leaderboard_chart(lb, out) + dimension_bars(lb, out)
    groups: dict[str, list[Condition]] = {}
    for cond in lb.breakdowns:
        if cond.breakdown == "patients" and cond.condition == "all":
            continue
        groups.setdefault(cond.breakdown, []).append(cond)
    for breakdown, conditions in groups.items():
        paths += breakdown_chart(lb, breakdown, conditions, out)
    return paths
