"""The columns of the leaderboard's main table: one spec per column, rendered by every format.

A :class:`Column` says, for Markdown, LaTeX and CSV, which header(s) it adds and what each
system's cell(s) hold (a format it has nothing for is ``None``), when it applies (e.g. only for
a target with harm levels) and, for a column whose figures are not already in the leaderboard
model, its JSON value per system (``leaderboard.json`` key ``columns``). ``render.py`` lays out
:data:`COLUMNS` in order; adding a column is one entry here (see docs/architecture.md).

A column's cell reads the :class:`~mindeval.leaderboard.build.Leaderboard` and the system's
:class:`~mindeval.leaderboard.table.SystemResult`; ``lb.run_data[s.label]`` is the system's loaded
run (:class:`~mindeval.leaderboard.loading.RunData`) for figures computed from the run itself.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .build import Leaderboard, SystemHarm
from .human_scale import HumanScaleScore
from .refusals import SystemRefusals, any_refused, refusal_cell, refusal_rates
from .score import SystemScoreValue
from .table import SystemResult

Cell = Callable[[Leaderboard, SystemResult], Any]


@dataclass(frozen=True)
class Field:
    """One header and its cell in one format."""

    header: str
    cell: Cell


Fields = Callable[[Leaderboard], list[Field]]


def one(header: str, cell: Cell) -> Fields:
    """A column that is a single field in a format."""
    return lambda lb: [Field(header, cell)]


@dataclass(frozen=True)
class Column:
    key: str
    markdown: Fields | None = None  # cells are text (escaped here)
    latex: Fields | None = None  # cells are LaTeX (escaped here)
    csv: Fields | None = None  # cells are written by csv.writer
    json: Cell | None = None  # leaderboard.json "columns": {key: {system: value}}; None: in the model already
    applies: Callable[[Leaderboard], bool] = lambda lb: True


# ------------------------------------------------------------------------- cell text


def order(lb: Leaderboard) -> tuple[str, ...]:
    """Table 4 puts the average first, then the target's dimensions."""
    return ("average", *[c for c in lb.criteria if c != "average"])


def header(c: str) -> str:
    return "Average" if c == "average" else c


def harm_of(lb: Leaderboard) -> dict[str, SystemHarm]:
    return {h.system: h for h in lb.safety}


def pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def harm_cell(h: SystemHarm | None) -> str:
    """``12% [5%, 25%] (3/25)``: share of conversations with a harm rating, Wilson 95% CI, counts."""
    return "n/a" if h is None else f"{pct(h.share)} [{pct(h.ci_low)}, {pct(h.ci_high)}] ({h.k}/{h.n})"


def num(x: float, digits: int = 2) -> str:
    return "n/a" if not math.isfinite(x) else f"{x:.{digits}f}"


def md_escape(text: str) -> str:
    return text.replace("|", "\\|")


def latex_escape(text: str) -> str:
    repl = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
            "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}
    return "".join(repl.get(ch, ch) for ch in text)


def _column_best(lb: Leaderboard) -> dict[str, float]:
    return {c: max(s.results[c].mean for s in lb.table.systems) for c in order(lb)}


def _score(c: str, bold: Callable[[str], str], cell: Callable[[str, int], str]) -> Cell:
    """The cell of criterion ``c``: ``cell(score, cluster)``, the best score of the column ``bold``."""
    def text(lb: Leaderboard, s: SystemResult) -> str:
        r = s.results[c]
        score = num(r.mean)
        if math.isclose(r.mean, _column_best(lb)[c], abs_tol=1e-12):
            score = bold(score)
        return cell(score, r.cluster)
    return text


def _scores(bold: Callable[[str], str], cell: Callable[[str, int], str], head: Callable[[str], str]) -> Fields:
    return lambda lb: [Field(head(header(c)), _score(c, bold, cell)) for c in order(lb)]


def _score_csv(lb: Leaderboard) -> list[Field]:
    def value(c: str, x: str) -> Cell:
        def get(lb: Leaderboard, s: SystemResult) -> Any:
            r = s.results[c]
            return {"mean": f"{r.mean:.6f}", "cluster": r.cluster, "ci_low": f"{r.ci_low:.6f}",
                    "ci_high": f"{r.ci_high:.6f}"}[x]
        return get
    return [Field(f"{c}_{x}", value(c, x)) for c in order(lb) for x in ("mean", "cluster", "ci_low", "ci_high")]


def _harm_csv(lb: Leaderboard) -> list[Field]:
    def value(i: int) -> Cell:
        def get(lb: Leaderboard, s: SystemResult) -> Any:
            h = harm_of(lb).get(s.label)
            return ["", "", "", "", ""][i] if h is None else [
                h.n, h.k, f"{h.share:.6f}", f"{h.ci_low:.6f}", f"{h.ci_high:.6f}"][i]
        return get
    return [Field(name, value(i)) for i, name in enumerate(("harm_n", "harm_k", "harm_share", "harm_ci_low",
                                                            "harm_ci_high"))]


def _coverage_csv(lb: Leaderboard) -> list[Field]:
    return [Field("n_scored", lambda lb, s: lb.coverage(s.label).split("/")[0]),
            Field("n_benchmark", lambda lb, s: lb.coverage(s.label).split("/")[1]),
            Field("incomplete", lambda lb, s: int(s.label in lb.incomplete))]


def level_ids(lb: Leaderboard) -> list[str]:
    return [lv.id for lv in lb.target.scale.levels]


def level_columns(lb: Leaderboard) -> list[str]:
    """leaderboard.csv columns of the level shares (none without categorical levels)."""
    if not lb.levels:
        return []
    dims = list(lb.levels[0].report.dimensions)
    return [*[f"{c}_{x}" for c in dims for x in ("n", "not_relevant", *(f"{i}_share" for i in level_ids(lb)))],
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
                *("" if d.levels[i].share is None else f"{d.levels[i].share:.6f}" for i in level_ids(lb))]
    return [*out, "" if r.all_best.share is None else f"{r.all_best.share:.6f}"]


def _levels_csv(lb: Leaderboard) -> list[Field]:
    return [Field(name, lambda lb, s, i=i: level_cells(lb, s.label)[i]) for i, name in enumerate(level_columns(lb))]


def score_cell(lb: Leaderboard, s: SystemResult) -> str:
    """``61.2 [55.0, 67.1]``: the declared score and its 95% bootstrap interval over profiles."""
    assert lb.score is not None
    return value_cell(lb.score.of(s.label))


def value_cell(v: SystemScoreValue) -> str:
    """A score's value and interval (``n/a (why)`` when undefined)."""
    if v.value is None:
        return f"n/a ({v.why})" if v.why else "n/a"
    ci = "" if v.ci_low is None or v.ci_high is None else f" [{num(v.ci_low)}, {num(v.ci_high)}]"
    return f"{num(v.value)}{ci}"


def _score_value_csv(lb: Leaderboard) -> list[Field]:
    def value(x: str) -> Cell:
        def get(lb: Leaderboard, s: SystemResult) -> Any:
            assert lb.score is not None
            v = getattr(lb.score.of(s.label), x)
            return "" if v is None else f"{v:.6f}"
        return get
    return [Field(f"score_{x}", value(x)) for x in ("value", "ci_low", "ci_high")]


def _named_fields(text: Callable[[str], str]) -> Fields:
    """One column per other named score: ``label [95% CI]``."""
    return lambda lb: [Field(text(f"{n.label} [95% CI]"), lambda lb, s, n=n: text(value_cell(n.of(s.label))))
                       for n in lb.scores]


def _named_csv(lb: Leaderboard) -> list[Field]:
    def value(i: int, x: str) -> Cell:
        def get(lb: Leaderboard, s: SystemResult) -> Any:
            v = getattr(lb.scores[i].of(s.label), x)
            return "" if v is None else f"{v:.6f}"
        return get
    return [Field(f"score_{n.name}_{x}", value(i, x)) for i, n in enumerate(lb.scores)
            for x in ("value", "ci_low", "ci_high")]


def human_of(lb: Leaderboard, system: str, criterion: str = "average") -> HumanScaleScore | None:
    return next((h for h in lb.human_scale if h.system == system and h.criterion == criterion), None)


def human_cell(h: HumanScaleScore | None, which: str) -> str:
    """``3.41 [3.12, 3.70] (n=20)``: a human-scale mean (``ppi`` or ``humans`` only) with its 95% CI."""
    if h is None:
        return "n/a"
    m = getattr(h, which)
    n = f"{h.n_rated}" if h.n_rated_members is None else f"{h.n_rated} sessions of {h.n_rated_members} members"
    return f"{num(m.estimate)} [{num(m.ci_low)}, {num(m.ci_high)}] (n={n})"


def _human_csv(lb: Leaderboard) -> list[Field]:
    def value(which: str, x: str) -> Cell:
        def get(lb: Leaderboard, s: SystemResult) -> Any:
            h = human_of(lb, s.label)
            if h is None:
                return ""
            return h.n_rated if x == "n_rated" else f"{getattr(getattr(h, which), x):.6f}"
        return get
    return [Field("human_n_rated", value("ppi", "n_rated"))] + [
        Field(f"human_{which}_{x}", value(which, x)) for which in ("ppi", "humans")
        for x in ("estimate", "ci_low", "ci_high")]


def corrected_of(lb: Leaderboard, system: str) -> tuple[int, int, int]:
    """``(corrections, scores, conversations)`` corrected in ``system``'s runs (--with-corrections)."""
    ts = [r.corrections for r in lb.runs if r.system == system and r.corrections is not None]
    return (sum(t.corrections for t in ts), sum(t.scores for t in ts), sum(t.conversations for t in ts))


def corrected_cell(lb: Leaderboard, s: SystemResult) -> str:
    """``3 scores in 2 conv. (4 corrections)``: judge scores a reviewer's correction changed."""
    n, k, c = corrected_of(lb, s.label)
    return f"{k} scores in {c} conv. ({n} corrections)"


def _corrected_csv(lb: Leaderboard) -> list[Field]:
    return [Field(name, lambda lb, s, i=i: corrected_of(lb, s.label)[i])
            for i, name in enumerate(("corrections", "corrected_scores", "corrected_conversations"))]


def refusals_of(lb: Leaderboard) -> dict[str, SystemRefusals]:
    """Each system's refusal rate and test (:mod:`mindeval.leaderboard.refusals`)."""
    return {r.system: r for r in refusal_rates(lb.run_data)}


def _refusals_csv(lb: Leaderboard) -> list[Field]:
    def value(x: str) -> Cell:
        def get(lb: Leaderboard, s: SystemResult) -> Any:
            r = refusals_of(lb).get(s.label)
            v = None if r is None else getattr(r, x)
            return "" if v is None else (f"{v:.6f}" if isinstance(v, float) else int(v))
        return get
    return [Field(f"refused_{x}", value(x)) for x in ("k", "n", "rate", "ci_low", "ci_high", "p_value", "flagged")]


def any_partial(lb: Leaderboard) -> bool:
    """Some system was judged under the partial rule (``partial_judging``): coverage and refusals shown."""
    return any(r.coverage is not None for r in lb.run_data.values())


def judged_cell(lb: Leaderboard, s: SystemResult) -> str:
    """``75% [30%, 95%] (3/4)``: the system's judged units of those asked (the partial rule's coverage)."""
    from ..scoring.coverage import share_cell

    c = lb.run_data[s.label].coverage
    return "n/a" if c is None else share_cell(c.k, c.n)


def _judged_csv(lb: Leaderboard) -> list[Field]:
    def value(x: str, i: int | None = None) -> Cell:
        def get(lb: Leaderboard, s: SystemResult) -> Any:
            c = lb.run_data[s.label].coverage
            v = None if c is None else c.block()[x]
            v = v[i] if i is not None and v is not None else v
            return "" if v is None else (f"{v:.6f}" if isinstance(v, float) else v)
        return get
    named = [("unit", "unit", None), ("k", "k", None), ("n", "n", None), ("share", "share", None),
             ("ci_low", "ci95", 0), ("ci_high", "ci95", 1), ("left_out", "left_out", None),
             ("members_left_out", "members_left_out", None)]
    return [Field(f"judged_{name}", value(x, i)) for name, x, i in named]


def failed(lb: Leaderboard, s: SystemResult) -> int:
    """The system's failed conversations (status ``failed``: the conversation itself broke)."""
    return lb.run_data[s.label].n_failed_interactions


def any_failed(lb: Leaderboard) -> bool:
    return any(r.n_failed_interactions for r in lb.run_data.values())


# ------------------------------------------------------------------------- the columns

COLUMNS: list[Column] = [
    Column("rank", markdown=one("#", lambda lb, s: str(s.rank)), csv=one("rank", lambda lb, s: s.rank)),
    Column("system", markdown=one("System", lambda lb, s: md_escape(s.label)),
           latex=one("Model", lambda lb, s: latex_escape(s.label)
                     + (r"\textsuperscript{\dag}" if s.label in lb.incomplete else "")),
           csv=one("system", lambda lb, s: s.label)),
    Column("score", applies=lambda lb: lb.score is not None,
           markdown=lambda lb: [Field(md_escape(f"{lb.score.label} [95% CI]"), score_cell)],  # type: ignore[union-attr]
           latex=lambda lb: [Field(latex_escape(f"{lb.score.label} [95% CI]"),  # type: ignore[union-attr]
                                   lambda lb, s: latex_escape(score_cell(lb, s)))],
           csv=_score_value_csv),
    Column("named_scores", applies=lambda lb: bool(lb.scores), markdown=_named_fields(md_escape),
           latex=_named_fields(latex_escape), csv=_named_csv),
    Column("n", markdown=one("n", lambda lb, s: str(s.n)), csv=one("n", lambda lb, s: s.n)),
    Column("scored", markdown=one("Scored", lambda lb, s: lb.coverage(s.label)
                                  + (" INCOMPLETE" if s.label in lb.incomplete else ""))),
    Column("scores", markdown=_scores(lambda x: f"**{x}**", lambda x, k: f"{x} ({k})", lambda h: h),
           latex=_scores(lambda x: rf"\textbf{{{x}}}", lambda x, k: rf"{x}\textsuperscript{{{k}}}", latex_escape),
           csv=_score_csv),
    Column("harm", applies=lambda lb: bool(lb.safety),
           markdown=one("Harm share [95% CI]", lambda lb, s: harm_cell(harm_of(lb).get(s.label))),
           latex=one(r"Harm share [95\% CI]", lambda lb, s: latex_escape(harm_cell(harm_of(lb).get(s.label)))),
           csv=_harm_csv),
    Column("human_scale", applies=lambda lb: bool(lb.human_scale),
           markdown=lambda lb: [Field("Human scale, PPI [95% CI]", lambda lb, s: human_cell(human_of(lb, s.label), "ppi")),
                                Field("Humans only [95% CI]", lambda lb, s: human_cell(human_of(lb, s.label), "humans"))],
           latex=one(r"Human scale [95\% CI]",
                     lambda lb, s: latex_escape(human_cell(human_of(lb, s.label), "ppi"))),
           csv=_human_csv),
    Column("corrected", applies=lambda lb: lb.with_corrections,
           markdown=one("Corrected", corrected_cell), latex=one("Corrected", lambda lb, s: corrected_cell(lb, s)),
           csv=_corrected_csv,
           json=lambda lb, s: dict(zip(("corrections", "scores", "conversations"), corrected_of(lb, s.label),
                                       strict=True))),
    Column("judged", applies=any_partial,
           markdown=one("Judged units [95% CI] (k/n)", judged_cell),
           latex=one(r"Judged units [95\% CI] (k/n)", lambda lb, s: latex_escape(judged_cell(lb, s))),
           csv=_judged_csv, json=lambda lb, s: c.block() if (c := lb.run_data[s.label].coverage) else None),
    Column("refusals", applies=lambda lb: any_refused(lb.run_data) or any_partial(lb),
           markdown=one("Refused rounds [95% CI] (k/n)", lambda lb, s: refusal_cell(refusals_of(lb).get(s.label))),
           latex=lambda lb: [Field(r"Refused rounds [95\% CI] (k/n)", lambda lb, s: latex_escape(
               refusal_cell(refusals_of(lb).get(s.label))))] if any_partial(lb) else [],
           csv=_refusals_csv, json=lambda lb, s: (r.model_dump(exclude={"system"}) if (r := refusals_of(lb).get(
               s.label)) else None)),
    Column("coverage", csv=_coverage_csv),
    Column("levels", applies=lambda lb: bool(lb.levels), csv=_levels_csv),
    Column("failed", applies=any_failed, markdown=one("Failed", lambda lb, s: str(failed(lb, s))),
           latex=one("Failed", lambda lb, s: str(failed(lb, s))), csv=one("n_failed", failed), json=failed),
]


def fields(lb: Leaderboard, fmt: str) -> list[Field]:
    """The headers and cells of the main table in ``fmt`` (markdown, latex, csv), in column order."""
    return [f for c in COLUMNS if c.applies(lb) and getattr(c, fmt) is not None for f in getattr(c, fmt)(lb)]


def json_columns(lb: Leaderboard) -> dict[str, dict[str, Any]]:
    """The values of the columns not already in the leaderboard model, per system."""
    return {c.key: {s.label: c.json(lb, s) for s in lb.table.systems}
            for c in COLUMNS if c.json is not None and c.applies(lb)}
