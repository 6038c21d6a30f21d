"""Figures of a computed leaderboard (``mindeval leaderboard --plots``), PNG and SVG.

Every number drawn comes from the :class:`~mindeval.leaderboard.build.Leaderboard` as built:
the table's means, 95% intervals and clusters, and the breakdowns' per-system means (the
paper's Figure 3: by patient severity and by interaction length; and any other breakdown
the runs differ in); and a panel per profile label the target declares (its
``label_panels``: scores by value, or for categorical scales the share of conversations at
each worst level by value). Nothing is computed again here. SVG text stays text (searchable).
Every mean is drawn with its 95% interval and its system's n (scored conversations), score axes
span the target's scale, captions name the judge, and no text is below 8 pt.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..stats.proportion import wilson_interval
from .breakdowns import Condition, LabelPanel
from .build import Leaderboard

AVERAGE = "average"
FORMATS = ("png", "svg")
TITLES = {"patients": "patient severity", "turns": "interaction length (turns)"}


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "mindeval", "font.size": 9,
                                "legend.fontsize": 8, "legend.title_fontsize": 8})
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


def _judge(lb: Leaderboard) -> str:
    return ", ".join(dict.fromkeys(r.judge_model for r in lb.runs)) or "unknown"


def _scale(lb: Leaderboard) -> tuple[float, float] | None:
    """The score axis: the target's ordinal scale (``None``: fit the data)."""
    sc = lb.target.scale
    return (float(sc.min), float(sc.max)) if sc.kind == "ordinal" and sc.min is not None and sc.max is not None else None


def _title(ax: Any, lb: Leaderboard, title: str, n: str) -> None:
    """``title`` over a caption naming the judge, what n counts and the intervals."""
    ax.set_title(f"{title}\njudge {_judge(lb)}; n = {n}; 95% bootstrap intervals", fontsize=9)


def leaderboard_chart(lb: Leaderboard, out: Path) -> list[Path]:
    """Average score per system with its 95% interval, coloured and labelled by cluster."""
    plt = _pyplot()
    systems = lb.table.systems
    fig, ax = plt.subplots(figsize=(8, 0.9 + 0.45 * len(systems)))
    cmap = plt.get_cmap("tab10")
    for y, s in enumerate(systems):
        r = s.results[AVERAGE]
        ax.errorbar(r.mean, y, xerr=[[r.mean - r.ci_low], [r.ci_high - r.mean]], fmt="o", capsize=4,
                    color=cmap((r.cluster - 1) % 10))
        # a column right of the axes, so the axis spans the scale only
        ax.annotate(f"{r.mean:.2f} [{r.ci_low:.2f}, {r.ci_high:.2f}]  cluster {r.cluster}  n={s.n}",
                    (1.02, y), xycoords=("axes fraction", "data"), va="center", annotation_clip=False)
    ax.set_yticks(range(len(systems)), [s.label for s in systems])
    ax.invert_yaxis()
    ax.set_xlabel("average score (95% interval)")
    st = lb.table.settings
    _title(ax, lb, f"Leaderboard: clusters by {st.test} test ({st.sided}-sided, alpha {st.alpha})",
           "scored conversations per system")
    ax.grid(axis="x", alpha=0.3)
    scale = _scale(lb)
    if scale:  # the whole scale
        ax.set_xlim(*scale)
        ax.set_xticks(range(int(scale[0]), int(scale[1]) + 1))
    else:
        lo = min(s.results[AVERAGE].ci_low for s in systems)
        hi = max(s.results[AVERAGE].ci_high for s in systems)
        span = max(hi - lo, 0.5)
        ax.set_xlim(lo - 0.1 * span, hi + 0.1 * span)
    paths = _save(fig, out, "leaderboard")
    plt.close(fig)
    return paths


def dimension_bars(lb: Leaderboard, out: Path) -> list[Path]:
    """Mean per dimension and system with 95% intervals."""
    plt = _pyplot()
    criteria, systems = _criteria(lb), lb.table.systems
    width = 0.8 / max(len(systems), 1)
    fig, ax = plt.subplots(figsize=(1.6 + 1.3 * len(criteria), 4))
    scale = _scale(lb)
    base = scale[0] if scale else 0.0
    for k, s in enumerate(systems):
        xs = [i + (k - (len(systems) - 1) / 2) * width for i in range(len(criteria))]
        res = [s.results[c] for c in criteria]
        ax.bar(xs, [r.mean - base for r in res], width, bottom=base, label=f"{s.label} (n={s.n})",
               yerr=[[r.mean - r.ci_low for r in res], [r.ci_high - r.mean for r in res]], capsize=2)
    ax.set_xticks(range(len(criteria)), criteria)
    if scale:
        ax.set_ylim(*scale)
    ax.set_ylabel("mean score (95% interval)")
    _title(ax, lb, "Score per dimension", "scored conversations per system")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.grid(axis="y", alpha=0.3)
    paths = _save(fig, out, "dimensions")
    plt.close(fig)
    return paths


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


_SETTING = re.compile(r"\s*\[[^\]]*\]$")  # a label's run setting, e.g. "model [40 turns]"


def _by_system(conditions: list[Condition]) -> dict[str, dict[str, tuple[float, float, float, int]]]:
    """Condition → system → (average, interval low, high, n); across runs a system is its label
    without the run setting (``model [40 turns]`` and ``model [20 turns]`` are one clinician),
    unless that merges two."""
    out: dict[str, dict[str, tuple[float, float, float, int]]] = {}
    for cond in conditions:
        bases = {label: _SETTING.sub("", label) for label in cond.per_system}
        merged = len(set(bases.values())) < len(bases)
        nan = (float("nan"), float("nan"))
        out[cond.condition] = {(label if merged else bases[label]): (v[AVERAGE], *cond.ci_per_system.get(label, nan),
                                                                     cond.n_per_system[label])
                               for label, v in cond.per_system.items()}
    return out


def breakdown_chart(lb: Leaderboard, breakdown: str, conditions: list[Condition], out: Path) -> list[Path]:
    """Average score per system under each condition of one breakdown (Figure 3's panels)."""
    plt = _pyplot()
    values = _by_system(conditions)
    systems = list(dict.fromkeys(s for label in _systems(lb) for s in (label, _SETTING.sub("", label))
                                 if any(s in v for v in values.values())))
    width = 0.8 / max(len(conditions), 1)
    fig, ax = plt.subplots(figsize=(2.2 + (0.6 + 0.55 * len(conditions)) * len(systems), 4.4))
    scale = _scale(lb)
    base = scale[0] if scale else 0.0
    missing = (float("nan"),) * 3 + (0,)
    for k, cond in enumerate(conditions):
        xs = [i + (k - (len(conditions) - 1) / 2) * width for i in range(len(systems))]
        bars = [values[cond.condition].get(s, missing) for s in systems]
        ys = [b[0] for b in bars]
        err = [[y - b[1] for y, b in zip(ys, bars, strict=True)], [b[2] - y for y, b in zip(ys, bars, strict=True)]]
        ax.bar(xs, [y - base for y in ys], width, bottom=base, yerr=err, capsize=2, label=cond.condition)
        for x, b in zip(xs, bars, strict=True):
            if b[3]:
                top = b[2] if b[2] == b[2] else b[0]  # above the interval (NaN-safe)
                ax.annotate(f"n={b[3]}", (x, top), xytext=(0, 2), textcoords="offset points", ha="center",
                            fontsize=8, rotation=90 if len(conditions) > 2 else 0, va="bottom")
    ax.set_xticks(range(len(systems)), systems, rotation=20, ha="right")
    if scale:
        ax.set_ylim(scale[0], scale[1] + 0.12 * (scale[1] - scale[0]))  # room for the n labels
    ax.set_ylabel("average score (95% interval)")
    title = TITLES.get(breakdown, breakdown)
    _title(ax, lb, f"Average score by {title}", "a system's scored conversations in the condition")
    ax.legend(title=title, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.grid(axis="y", alpha=0.3)
    stem = "by_severity" if breakdown == "patients" else f"by_{_slug(breakdown)}"
    paths = _save(fig, out, stem)
    plt.close(fig)
    return paths


def _level_intervals(ax: Any, xs: list[int], reports: list[Any], rated: list[int], levels: list[Any]) -> None:
    """At each boundary between two levels of a stacked bar, the 95% Wilson interval of the share
    below it (the conversations whose worst level is that level or better)."""
    for i in range(len(levels) - 1):
        pts = [(x, wilson_interval(k, n), k / n) for x, r, n in zip(xs, reports, rated, strict=True)
               if r is not None and n
               for k in [sum(r.worst[lv.id] for lv in levels[:i + 1])]]
        if pts:
            shift = (i - (len(levels) - 2) / 2) * 0.12  # side by side where boundaries' intervals overlap
            ax.errorbar([p[0] + shift for p in pts], [p[2] for p in pts], yerr=[[p[2] - p[1][0] for p in pts],
                                                                        [p[1][1] - p[2] for p in pts]],
                        fmt="none", ecolor="black", elinewidth=0.8, capsize=2)


def level_chart(lb: Leaderboard, panel: LabelPanel, out: Path) -> list[Path]:
    """Categorical scales: per system and value of one label, the share of its conversations
    whose worst level over the relevant dimensions is each level (stacked, best level at the
    bottom), with the number of conversations above each bar."""
    plt = _pyplot()
    levels = sorted(lb.target.scale.levels, key=lambda lv: -lv.value)  # best first
    systems = _systems(lb)
    colours = plt.get_cmap("RdYlGn")
    fig, axes = plt.subplots(1, len(systems), figsize=(1.2 + (0.8 + 0.55 * len(panel.values)) * len(systems), 4),
                             sharey=True, squeeze=False)
    xs = range(len(panel.values))
    for ax, system in zip(axes[0], systems, strict=True):
        reports = [panel.levels.get(v, {}).get(system) for v in panel.values]
        rated = [r.all_best.n if r is not None else 0 for r in reports]
        bottom = [0.0] * len(panel.values)
        for i, lv in enumerate(levels):
            shares = [r.worst[lv.id] / n if r is not None and n else 0.0 for r, n in zip(reports, rated, strict=True)]
            colour = colours(0.9 - 0.85 * (i / max(len(levels) - 1, 1)) ** 0.7)  # green to red, middle orange
            ax.bar(xs, shares, 0.7, bottom=bottom, color=colour, edgecolor="white", linewidth=0.5,
                   label=lv.label + (" (harm)" if lv.harm else ""))
            bottom = [b + s for b, s in zip(bottom, shares, strict=True)]
        _level_intervals(ax, list(xs), reports, rated, levels)
        for x, n in zip(xs, rated, strict=True):
            ax.annotate(f"n={n}", (x, 1.0), xytext=(0, 3), textcoords="offset points", ha="center", fontsize=8)
        ax.set_xticks(list(xs), panel.values, rotation=30, ha="right")
        ax.set_title(system, fontsize=9)
        ax.set_ylim(0, 1.12)
        ax.set_xlabel(panel.label)
    axes[0][0].set_ylabel("share of conversations by worst level")
    axes[0][-1].legend(title="worst level", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.suptitle(f"Worst level by {panel.label}\njudge {_judge(lb)}; n = conversations per bar; at each level "
                 "boundary the 95% Wilson interval of the share below it", fontsize=9, y=1.06)
    paths = _save(fig, out, f"by_{_slug(panel.label)}")
    plt.close(fig)
    return paths


def label_chart(lb: Leaderboard, panel: LabelPanel, out: Path) -> list[Path]:
    """One declared profile label: level shares (categorical scales) or scores by its values."""
    if panel.levels:
        return level_chart(lb, panel, out)
    if panel.conditions:
        return breakdown_chart(lb, panel.label, panel.conditions, out)
    return []


def write_plots(lb: Leaderboard, out: str | Path) -> list[Path]:
    """Every figure of ``lb`` into ``out`` as PNG and SVG; returns the paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = leaderboard_chart(lb, out) + dimension_bars(lb, out)
    groups: dict[str, list[Condition]] = {}
    drawn = {panel.label for panel in lb.label_panels}
    for cond in lb.breakdowns:
        if (cond.breakdown == "patients" and cond.condition == "all") or cond.breakdown in drawn:
            continue
        groups.setdefault(cond.breakdown, []).append(cond)
    for breakdown, conditions in groups.items():
        paths += breakdown_chart(lb, breakdown, conditions, out)
    for panel in lb.label_panels:
        paths += label_chart(lb, panel, out)
    return paths
