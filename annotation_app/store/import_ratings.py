"""Import ratings in the app's own layout (``export --format jsonl``), at the judge's unit too.

Each row names an item of the study (``item``: its id as exported) and an ``annotator`` (an
imported, inactive person unless ``--map-annotator`` names someone), with ``values`` per
sub-axis (``"NA"`` = not applicable), a ``justification`` and, for a target rated at the
judge's unit, ``answers`` (question id -> answer id: the questions the walk reaches) or
``replies`` (every clinician reply: ``turn``, ``level``, ``flags``) in the judge's shapes.
Levels that follow from answers or replies are derived (:mod:`.units`); a ``values`` entry
that disagrees with them is a problem. Every problem is reported as ``file:line:field`` and
then nothing is imported; an identical rating already there is kept.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError
from sqlalchemy import func, select

from mindeval.errors import MindEvalError
from mindeval.records import ReplyRating, read_jsonl
from mindeval.store.db import Database
from mindeval.targets.guidelines import Guidelines

from . import units
from .models import ImportReport, ReplyDraft
from .people import imported_annotator
from .ratings import na_value, problems
from .tables import (
    AssignmentRow,
    ItemRow,
    RatingAnswerRow,
    RatingReplyRow,
    RatingRevisionRow,
    RatingRow,
    RatingValueRow,
    StudyItemRow,
)


def is_ratings_row(obj: dict[str, Any]) -> bool:
    """A row of the app's ratings export."""
    return "item" in obj and "annotator" in obj and "values" in obj


class _Rating(dict):
    """One validated row: item id, annotator, values, justification, safety note, answers, replies."""


def _values(g: Guidelines, raw: Any, where: dict[str, Any]) -> dict[str, int]:
    if not isinstance(raw, dict):
        raise MindEvalError("expected an object of sub-axis -> value", field="values", **where)
    na = na_value(g)
    out: dict[str, int] = {}
    for sub, v in raw.items():
        if sub not in [s.id for s in g.human_subaxes]:
            raise MindEvalError(f"'{sub}' is not a sub-axis of this study's form", field=f"values.{sub}", **where)
        value = na if v == "NA" else v
        if not isinstance(value, int) or isinstance(value, bool) or (
                value not in g.score_values() and value != na):
            raise MindEvalError(f"{v!r} is not a value of the scale (or \"NA\")", field=f"values.{sub}", **where)
        out[sub] = value
    return out


def _answers(g: Guidelines, raw: Any, where: dict[str, Any]) -> dict[str, str]:
    if not isinstance(raw, dict):
        raise MindEvalError("expected an object of question id -> answer id", field="answers", **where)
    for qid, a in raw.items():
        try:
            _, q = units.question(g, str(qid))
        except MindEvalError as exc:
            raise MindEvalError(exc.message, field=f"answers.{qid}", **where) from None
        if a not in q.answers:
            raise MindEvalError(f"{a!r} is not an answer of {qid} ({', '.join(q.answers)})",
                                field=f"answers.{qid}", **where)
    missing = units.problems(g, raw, {}, [])
    if missing:
        raise MindEvalError(missing[0], field="answers", **where)
    return {str(k): str(v) for k, v in raw.items()}


def _replies(g: Guidelines, raw: Any, turns: list[int], where: dict[str, Any]) -> dict[int, ReplyDraft]:
    if not isinstance(raw, list):
        raise MindEvalError("expected a list of replies (turn, level, flags)", field="replies", **where)
    out: dict[int, ReplyDraft] = {}
    for i, r in enumerate(raw):
        try:
            rr = ReplyRating.model_validate(r)
            units.check_reply(g, turns, rr.turn, rr.level, None)
            for f in rr.flags:
                units.check_reply(g, turns, rr.turn, None, f)
        except ValidationError as exc:
            err = exc.errors()[0]
            raise MindEvalError(err["msg"], field=f"replies.{i}." + ".".join(map(str, err["loc"])), **where) from None
        except MindEvalError as exc:
            raise MindEvalError(exc.message, field=f"replies.{i}.{exc.field}", **where) from None
        if rr.turn in out:
            raise MindEvalError(f"turn {rr.turn} is rated twice", field=f"replies.{i}.turn", **where)
        out[rr.turn] = ReplyDraft(turn=rr.turn, level=rr.level, flags=rr.flags)
    missing = units.problems(g, {}, out, turns)
    if missing:
        raise MindEvalError(missing[0], field="replies", **where)
    return out


def _row(s, g: Guidelines, study_id: int, obj: dict[str, Any], where: dict[str, Any]) -> _Rating:
    """One row checked against the study and its form."""
    for name in ("item", "annotator"):
        if not isinstance(obj.get(name), str) or not obj[name].strip():
            raise MindEvalError("expected a non-empty text", field=name, **where)
    item = s.scalar(select(ItemRow).join(StudyItemRow, StudyItemRow.item_id == ItemRow.id)
                    .where(StudyItemRow.study_id == study_id, ItemRow.external_id == obj["item"]))
    if item is None:
        raise MindEvalError(f"'{obj['item']}' is not an item of this study (import its transcripts first)",
                            field="item", **where)
    kind = units.unit(g)
    for name, wanted in (("answers", "question"), ("replies", "reply")):
        if obj.get(name) is not None and kind != wanted:
            raise MindEvalError(f"this study's target is not rated by {'questions' if wanted == 'question' else 'reply'}",
                                field=name, **where)
        if obj.get(name) is None and kind == wanted:
            raise MindEvalError(f"a rating of this study's target needs its {name}", field=name, **where)
    values = _values(g, obj["values"], where)
    answers = _answers(g, obj["answers"], where) if kind == "question" else {}
    turns = units.reply_turns(list(item.messages or []))
    replies = _replies(g, obj["replies"], turns, where) if kind == "reply" else {}
    for sub, value in units.derived_values(g, na_value(g), answers, replies, turns).items():
        if sub in values and values[sub] != value:
            raise MindEvalError(f"{values[sub]} does not follow from the {'answers' if answers else 'replies'} "
                                f"(they give {value})", field=f"values.{sub}", **where)
        if value is not None:
            values[sub] = value
    just = obj.get("justification")
    missing = problems(g, values, just if isinstance(just, str) else "")
    if missing:
        raise MindEvalError(missing[0], field="values", **where)
    return _Rating(item=item, annotator=obj["annotator"], values=values, answers=answers, replies=replies,
                   turns=turns, justification=str(obj.get("justification") or ""),
                   safety_note=obj.get("safety_note") if isinstance(obj.get("safety_note"), str) else None)


def _store(s, g: Guidelines, study_id: int, r: _Rating, person_id: int) -> bool:
    """Store one rating as a submitted, imported revision; ``False`` when an identical one is there."""
    answers_json, replies_json = units.frozen(g, r["answers"], r["replies"], r["turns"])
    a = s.scalar(select(AssignmentRow).where(AssignmentRow.study_id == study_id, AssignmentRow.item_id == r["item"].id,
                                             AssignmentRow.annotator_id == person_id))
    if a is not None:
        rating = s.scalar(select(RatingRow).where(RatingRow.assignment_id == a.id))
        rev = s.scalar(select(RatingRevisionRow).where(RatingRevisionRow.rating_id == rating.id,
                                                       RatingRevisionRow.revision == rating.revision)) if rating else None
        if rev is not None and dict(rev.values_json) == r["values"] and rev.justification == r["justification"] \
                and rev.answers_json == answers_json and rev.replies_json == replies_json:
            return False
        raise MindEvalError("this annotator already has a different rating of this item in the study", field="annotator")
    pos = s.scalar(select(func.max(AssignmentRow.position)).where(AssignmentRow.study_id == study_id,
                                                                  AssignmentRow.annotator_id == person_id))
    a = AssignmentRow(study_id=study_id, item_id=r["item"].id, annotator_id=person_id, position=0 if pos is None else pos + 1)
    s.add(a)
    s.flush()
    rating = RatingRow(assignment_id=a.id, state="submitted", revision=1, version=0,
                       justification=r["justification"], safety_note=r["safety_note"], extra={})
    s.add(rating)
    s.flush()
    for sub, v in r["values"].items():
        s.add(RatingValueRow(rating_id=rating.id, subaxis=sub, value=v))
    for qid, ans in r["answers"].items():
        s.add(RatingAnswerRow(rating_id=rating.id, question=qid, answer=ans))
    for t, rep in r["replies"].items():
        s.add(RatingReplyRow(rating_id=rating.id, turn=t, level=rep.level, flags=dict(rep.flags)))
    s.add(RatingRevisionRow(rating_id=rating.id, revision=1, action="import", values_json=r["values"],
                            justification=r["justification"], safety_note=r["safety_note"],
                            answers_json=answers_json, replies_json=replies_json))
    return True


def import_ratings(db: Database, g: Guidelines, study_id: int, path: Path, mapped: dict[str, str]) -> ImportReport:
    """Import a ratings JSONL file into a rating study (see the module docstring)."""
    report = ImportReport(kind="ratings")
    found: list[MindEvalError] = []
    rows = list(read_jsonl(path, found))
    if not rows and not found:
        raise MindEvalError("the file is empty: there is nothing to import", path=path)
    people: dict[str, int] = {}
    with db.write() as s:
        for line, obj in rows:
            where = {"path": path, "line": line}
            try:
                r = _row(s, g, study_id, obj, where)
                if r["annotator"] not in people:
                    person, new = imported_annotator(s, r["annotator"], mapped)
                    people[r["annotator"]] = person.id
                    report.annotators_added += int(new)
                if _store(s, g, study_id, r, people[r["annotator"]]):
                    report.ratings_added += 1
                else:
                    report.ratings_unchanged += 1
            except MindEvalError as exc:
                found.append(exc if exc.line else MindEvalError(exc.message, field=exc.field, **where))
        if found:
            if len(found) == 1:
                raise found[0]
            head = f"{path}: {len(found)} problems, nothing was imported"
            raise MindEvalError(head + "".join(f"\n  {p}" for p in found))
    return report
