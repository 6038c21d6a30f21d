"""The fields compared at the judge's unit, as rater × item code matrices.

Item-level targets: one field per question; an item is a conversation, a rater's value the answer
it gave *on its own path* through the dimension's questions (a question its answers skipped, or a
dimension a gate made not relevant, is not rated by it). Reply-level targets: the reply's severity
(ordinal, best to worst) and each issue flag, an item being one reply; and per conversation its
worst level (ordinal) and incident flags: at least one reply at a level or worse, at least one
reply with a flag. Codes are category indexes; ``severity`` ranks the codes for the majority's tie
rule (higher = more severe: a raised flag, a worse level, an answer firing a worse severity).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict

from mindeval.judging.rubric import gated, walk
from mindeval.targets.guidelines import Guidelines

from .units import UnitRating

YES_NO = ["no", "yes"]


class UnitField(BaseModel):
    """One compared field: the raters' codes per item and what the codes mean."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    key: str  # e.g. question:n_cue_present, severity, flag:dismissive, worst, incident:major, any:dismissive
    kind: str  # question | severity | flag | worst | incident
    unit: str  # the item: conversation | reply
    group: str  # the dimension (item-level) or "reply" / "conversation"
    scale: str  # categorical | ordinal
    categories: list[str]
    severity: np.ndarray  # per code: its rank for the tie rule (higher = more severe)
    positive: np.ndarray | None  # per code: in the positive class of precision/recall/F1
    clusters: np.ndarray  # per item: its conversation's index
    humans: dict[str, np.ndarray]  # label -> (items,)
    judges: dict[str, np.ndarray]  # label -> (samples, items)


def _path_answers(g: Guidelines, answers: dict[str, str]) -> dict[str, str]:
    """The answers on the rater's own path through every question dimension."""
    off = gated([(a.code, a.questions) for a in g.judge_axes], answers)
    out: dict[str, str] = {}
    for ax in g.judge_axes:
        if ax.code in off or not ax.questions:
            continue
        path, _ = walk(ax.questions, answers)
        out.update({q: answers[q] for q in path})
    return out


def _fill(human: Sequence[UnitRating], judge: Sequence[UnitRating], n: int,
          values: dict[tuple[str, int], dict[int, float]]) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Rater arrays from ``values[(rater, sample)] = {item index: code}`` (humans: sample 0)."""
    hs: dict[str, np.ndarray] = {}
    for r in human:
        hs.setdefault(r.rater, np.full(n, np.nan))
    js: dict[str, dict[int, np.ndarray]] = {}
    for r in judge:
        js.setdefault(r.rater, {}).setdefault(r.sample, np.full(n, np.nan))
    for (rater, sample), got in values.items():
        arr = js[rater][sample] if rater in js else hs[rater]
        for i, code in got.items():
            arr[i] = code
    return hs, {lab: np.vstack([s[k] for k in sorted(s)]) for lab, s in js.items()}


def question_fields(g: Guidelines, human: Sequence[UnitRating], judge: Sequence[UnitRating],
                    conversations: list[str]) -> list[UnitField]:
    """One field per question; items are conversations (in ``conversations`` order)."""
    conv = {c: i for i, c in enumerate(conversations)}
    value = {lv.id: lv.value for lv in g.levels}
    worst_first = sorted(value, key=lambda lv: value[lv])  # rank: more severe = higher
    rank = {lv: len(worst_first) - i for i, lv in enumerate(worst_first)}
    paths = {(r.rater, r.sample, r.interaction_id): _path_answers(g, r.answers or {})
             for r in [*human, *judge] if r.answers is not None and r.interaction_id in conv}
    out: list[UnitField] = []
    for ax in g.judge_axes:
        for q in ax.questions:
            cats = list(q.answers)
            values: dict[tuple[str, int], dict[int, float]] = {}
            for (rater, sample, iid), ans in paths.items():
                if q.id in ans:
                    values.setdefault((rater, sample), {})[conv[iid]] = float(cats.index(ans[q.id]))
            hs, js = _fill(human, judge, len(conversations), values)
            sev = np.array([float(rank[q.severity[a]]) if a in q.severity else 0.0 for a in cats])
            pos = np.array([a == "yes" for a in cats]) if "yes" in cats else None
            out.append(UnitField(key=f"question:{q.id}", kind="question", unit="conversation", group=ax.code,
                                 scale="categorical", categories=cats, severity=sev, positive=pos,
                                 clusters=np.arange(len(conversations)), humans=hs, judges=js))
    return out


def reply_fields(g: Guidelines, human: Sequence[UnitRating], judge: Sequence[UnitRating],
                 conversations: list[str]) -> list[UnitField]:
    """Severity and flags per reply; worst level and incident flags per conversation."""
    conv = {c: i for i, c in enumerate(conversations)}
    levels = [lv.id for lv in sorted(g.levels, key=lambda lv: -lv.value)]  # best to worst
    rated = [r for r in [*human, *judge] if r.replies is not None and r.interaction_id in conv]
    items = sorted({(conv[r.interaction_id], x.turn) for r in rated for x in r.replies or []})
    index = {k: i for i, k in enumerate(items)}
    clusters = np.array([c for c, _ in items], dtype=int)

    def field(key: str, kind: str, unit: str, scale: str, cats: list[str],
              values: dict[tuple[str, int], dict[int, float]], n: int, cl: np.ndarray) -> UnitField:
        hs, js = _fill(human, judge, n, values)
        pos = np.array([c != cats[0] for c in cats]) if len(cats) == 2 else None
        return UnitField(key=key, kind=kind, unit=unit, group=unit, scale=scale, categories=cats,
                         severity=np.arange(len(cats), dtype=float), positive=pos, clusters=cl, humans=hs, judges=js)

    per_reply: dict[str, dict[tuple[str, int], dict[int, float]]] = {"severity": {}}
    per_conv: dict[str, dict[tuple[str, int], dict[int, float]]] = {"worst": {}}
    for r in rated:
        c, who, reps = conv[r.interaction_id], (r.rater, r.sample), r.replies or []
        for x in reps:
            per_reply["severity"].setdefault(who, {})[index[(c, x.turn)]] = float(levels.index(x.level))
            for f in g.flags:
                per_reply.setdefault(f"flag:{f.id}", {}).setdefault(who, {})[index[(c, x.turn)]] = float(x.flags[f.id])
        if not reps:
            continue
        worst = max(levels.index(x.level) for x in reps)
        per_conv["worst"].setdefault(who, {})[c] = float(worst)
        for k, lv in enumerate(levels[1:], start=1):
            per_conv.setdefault(f"incident:{lv}", {}).setdefault(who, {})[c] = float(worst >= k)
        for f in g.flags:
            per_conv.setdefault(f"any:{f.id}", {}).setdefault(who, {})[c] = float(any(x.flags[f.id] for x in reps))
    n_conv = np.arange(len(conversations))
    out = [field("severity", "severity", "reply", "ordinal", levels, per_reply["severity"], len(items), clusters)]
    out += [field(f"flag:{f.id}", "flag", "reply", "categorical", YES_NO, per_reply.get(f"flag:{f.id}", {}),
                  len(items), clusters) for f in g.flags]
    out.append(field("worst", "worst", "conversation", "ordinal", levels, per_conv["worst"], len(conversations),
                     n_conv))
    out += [field(f"incident:{lv}", "incident", "conversation", "categorical", YES_NO,
                  per_conv.get(f"incident:{lv}", {}), len(conversations), n_conv) for lv in levels[1:]]
    out += [field(f"any:{f.id}", "incident", "conversation", "categorical", YES_NO, per_conv.get(f"any:{f.id}", {}),
                  len(conversations), n_conv) for f in g.flags]
    return out
