"""`metaeval compare` at the judge's unit: which sources hold unit ratings, and the report over them.

The unit is the target's: item-level targets (questions) are compared per question, reply-level
targets (``unit: reply``) per reply and per conversation's worst level and incident flags. Human
unit ratings come from unit ratings files among ``--humans`` (:func:`metaeval.units.is_unit_file`)
and from a study's submitted ``answers``/``replies``; judges' from their runs' ``judgments.jsonl``.
A unit ratings file also gives its raters' conversation-level values, derived from the answers
exactly as for the judge (item-level: the dimension's path and severities; reply-level: the worst
reply), so the conversation-level figures include those humans too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from mindeval.errors import MindEvalError
from mindeval.sessions import session_of
from mindeval.study_data import StudyRatings
from mindeval.targets.guidelines import Guidelines

from .rollup import judge_axis_frame
from .sources import SCORE_COLUMNS, RaterScores, load_judge_run, unit_key
from .unit_agreement import UnitReport, conversation_draws, unit_report
from .unit_fields import question_fields, reply_fields
from .units import (
    UnitRating,
    UnitSource,
    is_unit_file,
    judge_units,
    load_unit_file,
    units_from_study,
)


def unit_of(g: Guidelines) -> str | None:
    """``reply``, ``question`` or ``None`` (the target judges whole conversations only)."""
    if g.unit == "reply":
        return "reply"
    return "question" if any(ax.questions for ax in g.judge_axes) else None


def target_guidelines(target_ref: str | None, judges: Sequence[RaterScores],
                      studies: Mapping[str, StudyRatings] | None) -> tuple[str, Guidelines] | None:
    """The compared target's name and guidelines: ``--target``, else the judge runs', else a study's."""
    from mindeval.targets import load_target

    ref = target_ref or next((j.target.name for j in judges if j.target), None)
    ref = ref or next((s.target for s in (studies or {}).values()), None)
    if ref is None:
        return None
    try:
        t = load_target(ref)
    except MindEvalError:
        return None  # a run's target that is not installed here: conversation-level figures only
    return t.name, t.guidelines


def human_unit_sources(sources: Sequence[str], g: Guidelines,
                       studies: Mapping[str, StudyRatings] | None) -> list[UnitSource]:
    """Unit ratings files among ``--humans`` and the studies' unit ratings."""
    out: list[UnitSource] = []
    files = [s for s in sources if "://" not in s and is_unit_file(s)]
    for i, src in enumerate(files):
        out.append(load_unit_file(src, g, prefix="" if len(files) == 1 else f"S{i + 1}."))
    for s in (studies or {}).values():
        got = units_from_study(s, g)
        if got is not None:
            out.append(got)
    return out


def judge_unit_sources(judge_args: Sequence[tuple[str | None, str]]) -> list[UnitSource]:
    """Every judge run's unit ratings (``(label, path)`` pairs), labelled as in the conversation-level
    comparison."""
    out: list[UnitSource] = []
    for label, path in judge_args:
        for r in load_judge_run(path, label):
            got = judge_units(path, r.label, r.meta.get("judge_model"))
            if got is not None:
                out.append(got)
    return out


def conversation_raters(src: UnitSource, g: Guidelines, judges: Sequence[RaterScores]) -> list[RaterScores]:
    """The conversation-level scores that a unit ratings file's answers give, one rater per annotator.
    Profile and system come from the row, else from the judge runs' interaction of the same id."""
    from mindeval.judging.items import dimension_values

    known = {(iid, pid, sys) for j in judges
             for iid, pid, sys in zip(j.frame["interaction_id"], j.frame["profile_id"], j.frame["system"], strict=True)}
    where = {iid: (pid, sys) for iid, pid, sys in known}
    axes = tuple(ax.code for ax in g.judge_axes)
    rows: dict[str, list[dict[str, object]]] = {}
    for r in src.ratings:
        pid, system = (unit_key(r.profile_id, r.interaction_id) if r.profile_id else None), r.system
        if pid is None or system is None:
            if r.interaction_id not in where:
                raise MindEvalError(f"interaction {r.interaction_id} has no profile_id/system and no judge run "
                                    "holds it", path=src.source, field="interaction_id")
            pid, system = where[r.interaction_id]
        if r.replies is not None and g.unit == "reply":
            scores: dict[str, float | None] = {axes[0]: min(g.value_of(x.level) for x in r.replies)
                                               if r.replies else None}
        else:
            scores = dict(dimension_values(g, r.answers or {}))
        rows.setdefault(r.rater, []).append({"profile_id": pid, "system": system, "interaction_id": r.interaction_id,
                                             "run": 0, **{a: np.nan if scores.get(a) is None else float(scores[a])
                                                          for a in axes}})
    out: list[RaterScores] = []
    for label, got in rows.items():
        wide = judge_axis_frame(pd.DataFrame(got), axes)
        long = wide.melt(id_vars=["profile_id", "system", "interaction_id", "run"], value_vars=[*axes, "average"],
                         var_name="axis", value_name="score").loc[:, list(SCORE_COLUMNS)]
        out.append(RaterScores(label=label, kind="human", source=src.source, frame=long))
    return out


def build_unit_report(target: str, g: Guidelines, humans: Sequence[UnitSource], judges: Sequence[UnitSource],
                      exclude: set[str], **stats: Any) -> UnitReport | None:
    """The unit-level report, or ``None`` when the target has no unit or no human rated one (``stats``:
    :func:`metaeval.unit_agreement.unit_report`'s options)."""
    unit = unit_of(g)
    if unit is None or not humans:
        return None
    h = [r for s in humans for r in s.ratings if r.interaction_id not in exclude]
    j = [r for s in judges for r in s.ratings if r.interaction_id not in exclude]
    conversations = sorted({r.interaction_id for r in h})
    if not conversations:
        return None
    make = question_fields if unit == "question" else reply_fields
    fields = make(g, h, j, conversations)
    draws = conversation_draws(fields, stats.pop("resamples"), stats.pop("seed"),
                               conversation_chains(conversations, [*h, *j]))
    return unit_report(target, unit, fields, per_cluster=draws, **stats)


def conversation_chains(conversations: Sequence[str], ratings: Sequence[UnitRating]) -> np.ndarray | None:
    """Per rated conversation (a session, in a multi-session run), the code of the conversation it is a
    session of (its member's with one system), which the bootstrap draws whole; ``None`` when every
    conversation is its own (one session per member). A session k > 1 is known by its interaction id
    ``<conversation>-s<k>`` and its profile id (from any rating, judge runs included)."""
    pid = {r.interaction_id: r.profile_id for r in ratings if r.profile_id}
    sessions = [session_of(iid, pid[iid]) if iid in pid else 1 for iid in conversations]
    whole = [iid.removesuffix(f"-s{k}") for iid, k in zip(conversations, sessions, strict=True)]
    if len(set(whole)) == len(whole):
        return None
    seen: dict[str, int] = {}
    return np.asarray([seen.setdefault(w, len(seen)) for w in whole], dtype=np.int64)
