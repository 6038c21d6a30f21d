"""Disagreement review: items whose raters differ by at least N points on a sub-axis, and the
admin's adjudicated rating, stored as the rating of its own rater ("adjudicated").

The adjudicated rater is one inactive person per workspace (``origin = "adjudicated"``, no
access code). Its ratings are ordinary submitted ratings with a revision history (action
``adjudicate``, the admin who decided in ``extra``), so exports carry them (marked) and
readers such as ``metaeval`` can use them or leave them out.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from sqlalchemy import func, select

from mindeval.errors import MindEvalError
from mindeval.store.db import Database
from mindeval.targets.guidelines import Guidelines

from .common import RatingIncomplete
from .exporters import submitted_ratings
from .ratings import MAX_TEXT, check_value, na_value, problems
from .studies import get_study
from .tables import (
    ADJUDICATED,
    AnnotatorRow,
    AssignmentRow,
    ItemRow,
    RatingRevisionRow,
    RatingRow,
    RatingValueRow,
    StudyItemRow,
    utcnow,
)


class RaterRating(BaseModel):
    annotator: str
    values: dict[str, int]
    justification: str
    safety_note: str | None


class Disagreement(BaseModel):
    """One item the raters disagree on: the gap per sub-axis (only those >= the threshold)."""

    item_id: int
    label: str  # the item's place in the study, e.g. "Item 7" (no provenance)
    gaps: dict[str, int]
    ratings: list[RaterRating]  # the raters' (never the adjudicated one)
    adjudicated: RaterRating | None
    member_attributes: dict[str, Any]
    messages: list[dict[str, Any]]


def is_adjudicated(origin: str | None) -> bool:
    return origin == ADJUDICATED


def disagreements(db: Database, g: Guidelines, study_ref: int | str, min_gap: int = 2) -> list[Disagreement]:
    """Items where two raters' values of one sub-axis differ by ``min_gap`` or more (N/A left out)."""
    if min_gap < 1:
        raise MindEvalError("the gap must be at least 1 point", field="gap")
    with db.read() as s:
        study = get_study(s, study_ref)
        positions = dict(s.execute(select(StudyItemRow.item_id, StudyItemRow.position)
                                   .where(StudyItemRow.study_id == study.id)).all())
    na = na_value(g)
    by_item: dict[int, list[dict[str, Any]]] = {}
    for r in submitted_ratings(db, study.id):
        by_item.setdefault(r["item"].id, []).append(r)
    order = sorted(positions, key=lambda i: positions[i])
    out = []
    for item_id in order:
        recs = by_item.get(item_id, [])
        raters = [r for r in recs if not r["adjudicated"]]
        gaps = {}
        for sub in g.human_subaxes:
            vals = [r["values"][sub.id] for r in raters if r["values"].get(sub.id) not in (None, na)]
            if len(vals) >= 2 and max(vals) - min(vals) >= min_gap:
                gaps[sub.id] = max(vals) - min(vals)
        if not gaps:
            continue
        judged = next((r for r in recs if r["adjudicated"]), None)
        item = raters[0]["item"]
        out.append(Disagreement(
            item_id=item_id, label=f"Item {order.index(item_id) + 1}", gaps=gaps,
            ratings=[_view(r) for r in raters], adjudicated=_view(judged) if judged else None,
            member_attributes=item.member_attributes or {}, messages=list(item.messages or []),
        ))
    return out


def _view(r: dict[str, Any]) -> RaterRating:
    return RaterRating(annotator=r["annotator"], values=r["values"], justification=r["justification"],
                       safety_note=r["safety_note"])


def _adjudicator(s) -> AnnotatorRow:
    """The workspace's adjudicated rater (created on first use, never able to sign in)."""
    row = s.scalar(select(AnnotatorRow).where(AnnotatorRow.origin == ADJUDICATED))
    if row is not None:
        return row
    from .people import find_person

    name = ADJUDICATED
    n = 1
    while find_person(s, name) is not None:  # a person already has the name: keep them apart
        n += 1
        name = f"{ADJUDICATED} ({n})"
    row = AnnotatorRow(name=name, code_hash=None, is_admin=False, active=False, origin=ADJUDICATED)
    s.add(row)
    s.flush()
    return row


def adjudicate(db: Database, g: Guidelines, study_ref: int | str, item_id: int, values: dict[str, int],
               justification: str, *, safety_note: str | None = None, by: str = "") -> int:
    """Store (or revise) the adjudicated rating of one item of the study; returns its revision.

    The values must form a complete rating of the study's form, as a rater's submission must.
    """
    for sub, v in values.items():
        check_value(g, sub, v)
    missing = problems(g, values, justification)
    if missing:
        raise RatingIncomplete(missing)
    if len(justification) > MAX_TEXT or len(safety_note or "") > MAX_TEXT:
        raise MindEvalError(f"at most {MAX_TEXT} characters", field="justification")
    with db.write() as s:
        study = get_study(s, study_ref)
        if s.scalar(select(StudyItemRow.id).where(StudyItemRow.study_id == study.id,
                                                  StudyItemRow.item_id == item_id)) is None \
                or s.get(ItemRow, item_id) is None:
            raise MindEvalError(f"item {item_id} is not in study '{study.name}'", field="item")
        who = _adjudicator(s)
        a = s.scalar(select(AssignmentRow).where(AssignmentRow.study_id == study.id, AssignmentRow.item_id == item_id,
                                                 AssignmentRow.annotator_id == who.id))
        if a is None:
            pos = s.scalar(select(func.max(AssignmentRow.position)).where(
                AssignmentRow.study_id == study.id, AssignmentRow.annotator_id == who.id))
            a = AssignmentRow(study_id=study.id, item_id=item_id, annotator_id=who.id,
                              position=0 if pos is None else pos + 1)
            s.add(a)
            s.flush()
        rating = s.scalar(select(RatingRow).where(RatingRow.assignment_id == a.id).with_for_update())
        if rating is None:
            rating = RatingRow(assignment_id=a.id, state="draft", revision=0, version=0, extra={})
            s.add(rating)
            s.flush()
        kept = {row.subaxis: row for row in s.scalars(select(RatingValueRow).where(RatingValueRow.rating_id == rating.id))}
        for sub, v in values.items():
            if sub in kept:
                kept.pop(sub).value = v
            else:
                s.add(RatingValueRow(rating_id=rating.id, subaxis=sub, value=v))
        for row in kept.values():
            s.delete(row)
        now = utcnow()
        rating.state, rating.revision, rating.version = "submitted", rating.revision + 1, rating.version + 1
        rating.justification, rating.safety_note = justification, safety_note or None
        rating.submitted_at = rating.updated_at = now
        rating.extra = {**(rating.extra or {}), "adjudicated_by": by}
        s.add(RatingRevisionRow(rating_id=rating.id, revision=rating.revision, action="adjudicate",
                                values_json=dict(values), justification=justification,
                                safety_note=safety_note or None))
        return rating.revision
