"""Ratings at the judge's unit: answers per question (item-level targets) and ratings per reply
(reply-level targets), from humans and from judges, in the judge's own shapes.

Humans: a unit ratings file (JSONL, one row per annotator and interaction:
``{"interaction_id", "annotator", "answers": {question id: answer id}, "replies": [{"turn", "level",
"flags"}]}``, optionally ``profile_id`` and ``system``) or an annotation study's submitted ratings
(:class:`mindeval.study_data.SubmittedRating` ``answers``/``replies``). Judges: ``answers`` and
``replies`` of a run directory's ``judgments.jsonl``. Every value is checked against the target's
guidelines; a bad row is one error naming file, line and field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from mindeval.errors import MindEvalError
from mindeval.judging.rubric import gated, walk
from mindeval.records import ReplyRating, read_jsonl
from mindeval.study_data import StudyRatings
from mindeval.targets.guidelines import Guidelines

from .sources import _judge_rows


class UnitRating(BaseModel):
    """One rater's unit ratings of one interaction (a judge: one sample)."""

    interaction_id: str
    rater: str
    answers: dict[str, str] | None = None
    replies: list[ReplyRating] | None = None
    profile_id: str | None = None
    system: str | None = None
    sample: int = 0


class UnitSource(BaseModel):
    """The unit ratings of one source (a file, a study or a judge run)."""

    source: str
    kind: str  # "human" | "judge"
    ratings: list[UnitRating]


def is_unit_file(path: str | Path) -> bool:
    """A ``.jsonl`` file whose first row has ``answers`` or ``replies`` (and no ``subaxis_id``)."""
    p = Path(path)
    if p.suffix.lower() != ".jsonl" or not p.is_file():
        return False
    for _, obj in read_jsonl(p):
        return isinstance(obj, dict) and "subaxis_id" not in obj and ("answers" in obj or "replies" in obj)
    return False


def check_answers(g: Guidelines, answers: Any) -> str | None:
    """Why ``answers`` do not fit the target's questions (``field: message``), or ``None``."""
    if not isinstance(answers, dict):
        return "answers: expected an object {question id: answer id}"
    allowed = {q.id: q.answers for ax in g.judge_axes for q in ax.questions}
    for qid, a in answers.items():
        if qid not in allowed:
            return f"answers.{qid}: not a question of target's guidelines"
        if a not in allowed[qid]:
            return f"answers.{qid}: {a!r} is not one of {', '.join(allowed[qid])}"
    off = gated([(ax.code, ax.questions) for ax in g.judge_axes], answers)
    for ax in g.judge_axes:
        path, ending = walk(ax.questions, answers) if ax.questions and ax.code not in off else ([], "")
        if ending == "missing":
            after = f"after {path[-1]}" if path else "from its first question"
            return f"answers: dimension {ax.code} has an unanswered question on its path ({after})"
    return None


def check_replies(g: Guidelines, replies: Any) -> str | None:
    """Why ``replies`` do not fit the target's levels and flags (``field: message``), or ``None``."""
    if not isinstance(replies, list):
        return "replies: expected a list of {turn, level, flags}"
    levels = [lv.id for lv in g.levels]
    flags = {f.id for f in g.flags}
    seen: set[int] = set()
    for i, r in enumerate(replies):
        try:
            rr = ReplyRating.model_validate(r)
        except ValidationError as exc:
            err = exc.errors()[0]
            return f"replies[{i}].{'.'.join(str(x) for x in err['loc'])}: {err['msg']}"
        if rr.level not in levels:
            return f"replies[{i}].level: {rr.level!r} is not one of {', '.join(levels)}"
        if set(rr.flags) != flags:
            odd = sorted(set(rr.flags) ^ flags)
            return f"replies[{i}].flags: every declared flag must be given once as true/false ({', '.join(odd)})"
        if rr.turn in seen:
            return f"replies[{i}].turn: turn {rr.turn} rated twice"
        seen.add(rr.turn)
    return None


def _text(obj: dict[str, Any], key: str, required: bool) -> str | None:
    v = obj.get(key)
    if v is None and not required:
        return None
    if not isinstance(v, str) or not v.strip():
        raise ValueError(f"{key}: missing or not text")
    return v


def _row(obj: Any, g: Guidelines) -> UnitRating:
    if not isinstance(obj, dict):
        raise ValueError("row: expected an object")
    iid, rater = _text(obj, "interaction_id", True), _text(obj, "annotator", True)
    if obj.get("answers") is None and obj.get("replies") is None:
        raise ValueError("answers: a row needs answers or replies")
    for key, check in (("answers", check_answers), ("replies", check_replies)):
        if obj.get(key) is not None and (why := check(g, obj[key])):
            raise ValueError(why)
    return UnitRating(interaction_id=str(iid), rater=str(rater), answers=obj.get("answers"),
                      replies=obj.get("replies"), profile_id=_text(obj, "profile_id", False),
                      system=_text(obj, "system", False))


def load_unit_file(path: str | Path, g: Guidelines, *, prefix: str = "") -> UnitSource:
    """Human unit ratings from a JSONL file, checked against guidelines ``g``."""
    p = Path(path)
    out: list[UnitRating] = []
    seen: dict[tuple[str, str], int] = {}
    for line, obj in read_jsonl(p):
        try:
            r = _row(obj, g)
        except ValueError as exc:
            field, _, msg = str(exc).partition(": ")
            raise MindEvalError(msg, path=p, line=line, field=field) from None
        key = (r.interaction_id, r.rater)
        if key in seen:
            raise MindEvalError(f"annotator {r.rater} rates interaction {r.interaction_id} again (first on line "
                                f"{seen[key]})", path=p, line=line, field="annotator")
        seen[key] = line
        out.append(r.model_copy(update={"rater": prefix + r.rater}))
    if not out:
        raise MindEvalError("no unit ratings in file", path=p)
    return UnitSource(source=str(p), kind="human", ratings=out)


def units_from_study(study: StudyRatings, g: Guidelines) -> UnitSource | None:
    """A study's submitted unit ratings (adjudicated ones left out), or ``None`` when it has none."""
    out: list[UnitRating] = []
    for rec in study.ratings:
        if rec.adjudicated or (rec.answers is None and rec.replies is None):
            continue
        for key, check in (("answers", check_answers), ("replies", check_replies)):
            value = getattr(rec, key)
            if value is not None and (why := check(g, [r.model_dump() for r in value] if key == "replies" else value)):
                raise MindEvalError(f"annotator {rec.annotator}, interaction {rec.interaction_id}: {why}",
                                    path=study.source, field="--study")
        out.append(UnitRating(interaction_id=rec.interaction_id, rater=rec.annotator, answers=rec.answers,
                              replies=rec.replies, profile_id=rec.profile_id, system=rec.clinician_model))
    return UnitSource(source=f"{study.source} study {study.study}", kind="human", ratings=out) if out else None


def judge_units(path: str | Path, label: str, judge_model: str | None = None) -> UnitSource | None:
    """The unit ratings of a judge run's ok judgments (every sample; of ``judge_model`` when given), or
    ``None`` when it has none. ``label`` names the judge as in the conversation-level comparison."""
    judgments, _config, _target, _ = _judge_rows(Path(path))
    out = [UnitRating(interaction_id=j.interaction_id, rater=label, answers=j.answers, replies=j.replies,
                      profile_id=j.profile_id, system=j.model, sample=j.sample)
           for j in judgments if j.parse_status == "ok" and judge_model in (None, j.judge_model)
           and (j.answers is not None or j.replies is not None)]
    return UnitSource(source=str(path), kind="judge", ratings=out) if out else None
