"""Exports of a study: ratings (CSV, JSONL, the authors' schema) and role-play sessions.

``flags`` lists the items annotators skipped or flagged, with their reasons. Ratings
carry the active time their annotator spent on the item (``active_seconds``). Ratings of gold
items are in no export of ratings (the ``raters`` export, :mod:`.raters`, scores them).

Ratings are exported as last submitted (a rating being revised keeps its previous
submission until the revision is submitted). Columns follow the study's target: one
per sub-axis of its form holding the stored value, and for a categorical scale the
level's label beside it (``<sub-axis>_level``). In CSV and JSONL ``NA`` marks a
sub-axis rated "not applicable"; the authors' schema (MindEval only) uses 0 as they do.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from sqlalchemy import select

from mindeval.errors import MindEvalError
from mindeval.judging.authors import JUSTIFICATION, RESP, SAFETY, STATUS, USERS, load_mapping
from mindeval.records import ATTRIBUTE_FIELDS
from mindeval.store.db import Database
from mindeval.store.runs import load_turns
from mindeval.store.tables import InteractionRow
from mindeval.targets import Target, as_target
from mindeval.targets.guidelines import Guidelines

from .ratings import flagged, scale_view
from .studies import get_study
from .tables import (
    ADJUDICATED,
    AnnotatorRow,
    AssignmentRow,
    ItemRow,
    RatingRevisionRow,
    RatingRow,
    RoleplaySessionRow,
    StudyItemRow,
    StudyProfileRow,
    StudyRow,
)

FORMATS = ("csv", "jsonl", "authors", "interactions", "user-turns", "flags")


def submitted_ratings(db: Database, study_id: int) -> list[dict[str, Any]]:
    """One record per rating with at least one submission: its latest submitted revision
    (``adjudicated``: the rating of the adjudicated rater, see :mod:`.review`). Ratings of gold
    items (:mod:`.gold`) are left out: they check raters, they are not data."""
    with db.read() as s:
        rows = s.execute(
            select(RatingRow, AssignmentRow, AnnotatorRow.name, ItemRow, AnnotatorRow.origin)
            .join(AssignmentRow, AssignmentRow.id == RatingRow.assignment_id)
            .join(AnnotatorRow, AnnotatorRow.id == AssignmentRow.annotator_id)
            .join(ItemRow, ItemRow.id == AssignmentRow.item_id)
            .where(AssignmentRow.study_id == study_id, RatingRow.revision > 0, AssignmentRow.kind == "real")
            .order_by(AssignmentRow.id)
        ).all()
        revs = {
            (r.rating_id, r.revision): r
            for r in s.scalars(select(RatingRevisionRow).where(
                RatingRevisionRow.rating_id.in_([row[0].id for row in rows] or [-1])))
        }
    out = []
    for rating, a, name, item, origin in rows:
        rev = revs.get((rating.id, rating.revision))
        if rev is None:
            raise MindEvalError(f"rating {rating.id} has no stored revision {rating.revision}", field="revision")
        out.append({
            "rating_id": rating.id, "assignment_id": a.id, "annotator": name, "item": item,
            "values": dict(rev.values_json), "justification": rev.justification,
            "safety_note": rev.safety_note, "revision": rating.revision, "state": rating.state,
            "submitted_at": rev.created_at, "extra": rating.extra or {}, "n_revisions": rating.revision,
            "active_seconds": round(float(rating.active_seconds or 0), 1),
            "adjudicated": origin == ADJUDICATED,  # the admin's decision after a disagreement review
            "answers": rev.answers_json, "replies": rev.replies_json,  # at the judge's unit (revision 0008)
        })
    return out


class _Cells:
    """How a study's stored values are written: the value (``NA`` for not applicable) and,
    on a categorical scale, the level's label."""

    def __init__(self, g: Guidelines) -> None:
        self.scale = scale_view(g)
        self.labels = g.scale_kind == "categorical"

    def value(self, v: int | None) -> Any:
        return "NA" if v == self.scale.na_value else v

    def label(self, v: int | None) -> str:
        return "" if v is None or v == self.scale.na_value else self.scale.label(v)


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value: Any) -> Any:
    """A CSV cell a spreadsheet will not run: text starting like a formula gets a leading ``'``."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


def ratings_csv(db: Database, g: Guidelines, study_id: int) -> str:
    """One row per submitted rating; formula-like text is neutralised (see :func:`safe_cell`)."""
    subs = [x.id for x in g.human_subaxes]
    cells = _Cells(g)
    heads = [h for x in subs for h in ((x, f"{x}_level") if cells.labels else (x,))]
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["item", "annotator", "revision", "submitted_at", *heads, "justification", "safety_note",
                "clinician_model", "source", "adjudicated", "active_seconds"])
    for r in submitted_ratings(db, study_id):
        scores: list[Any] = []
        for x in subs:
            v = r["values"].get(x)
            scores.append("" if v is None else cells.value(v))
            if cells.labels:
                scores.append(cells.label(v))
        w.writerow([safe_cell(v) for v in (
            r["item"].external_id, r["annotator"], r["revision"],
            r["submitted_at"].isoformat() if r["submitted_at"] else "", *scores,
            r["justification"], r["safety_note"] or "", r["item"].clinician_model or "", r["item"].source,
            "yes" if r["adjudicated"] else "", r["active_seconds"])])
    return buf.getvalue()


def ratings_jsonl(db: Database, g: Guidelines, study_id: int, target: Target | str | None = None) -> str:
    """One JSON object per submitted rating; a target without ``legacy_files`` (all but
    ``mindeval``) adds ``target`` and, on a categorical scale, ``levels`` (sub-axis → level label).
    A rating at the judge's unit adds ``answers`` (question id → answer id, the questions the walk
    reached) or ``replies`` (turn, level id, every flag), in the judge's shapes (``judgments.jsonl``)."""
    t = as_target(target)
    cells = _Cells(g)
    lines = []
    for r in submitted_ratings(db, study_id):
        row: dict[str, Any] = {} if t.manifest.legacy_files else {"target": t.name}
        row.update({
            "item": r["item"].external_id, "annotator": r["annotator"], "revision": r["revision"],
            "submitted_at": r["submitted_at"].isoformat() if r["submitted_at"] else None,
            "values": {k: cells.value(v) for k, v in r["values"].items()},
        })
        if cells.labels:
            row["levels"] = {k: cells.label(v) for k, v in r["values"].items() if cells.label(v)}
        lines.append(json.dumps(row | {
            "axes": {s.id: s.axis for s in g.human_subaxes},
            "justification": r["justification"], "safety_note": r["safety_note"],
            "clinician_model": r["item"].clinician_model, "source": r["item"].source,
            "active_seconds": r["active_seconds"],
        } | ({"adjudicated": True} if r["adjudicated"] else {})
          | {k: r[k] for k in ("answers", "replies") if r[k] is not None}, ensure_ascii=False))
    return "".join(line + "\n" for line in lines)


def authors_jsonl(db: Database, g: Guidelines, study_id: int) -> str:
    """Rows in the authors' ``human_annotations.jsonl`` layout, one per rated item."""
    mapping = load_mapping(guidelines=g, every_subaxis=True)
    by_item: dict[int, list[dict[str, Any]]] = {}
    for r in submitted_ratings(db, study_id):
        if not r["adjudicated"]:  # the authors' layout has no place for an adjudicated rating
            by_item.setdefault(r["item"].id, []).append(r)
    with db.read() as s:
        item_ids = list(s.scalars(select(StudyItemRow.item_id).where(StudyItemRow.study_id == study_id)
                                  .order_by(StudyItemRow.position)))
    lines = []
    for item_id in item_ids:
        ratings = by_item.get(item_id)
        if not ratings:
            continue
        item = ratings[0]["item"]
        meta = (item.meta or {}).get("authors") or {}
        order = meta.get("annotator_order") or []
        ratings.sort(key=lambda r: (order.index(r["annotator"]) if r["annotator"] in order else len(order),
                                    r["assignment_id"]))
        row: dict[str, Any] = {"id": (item.meta or {}).get("id", item.external_id), "status": "completed"}
        row.update({k: v for k, v in meta.items() if k not in ("key_order", "annotator_order")})
        for crit, sub in mapping.fields.items():
            entries = []
            for r in ratings:
                v = r["values"].get(sub) if sub else (r["extra"].get("criteria") or {}).get(crit)
                if v is None:
                    continue
                st = (r["extra"].get("status") or {}).get(crit) or "submitted"
                entries.append((r["annotator"], v, st))
            _put(row, crit, entries)
        just = [(r["annotator"], r["justification"], (r["extra"].get("status") or {}).get(JUSTIFICATION) or "submitted")
                for r in ratings if _gave_justification(r)]
        _put(row, JUSTIFICATION, just)
        safety = [(r["annotator"], r["safety_note"], (r["extra"].get("status") or {}).get(SAFETY) or "submitted")
                  for r in ratings if r["safety_note"] is not None]
        _put(row, SAFETY, safety)
        row["model"] = item.clinician_model
        row["member_attributes"] = item.member_attributes
        row["messages"] = item.messages
        key_order = meta.get("key_order")
        if key_order:
            row = {k: row[k] for k in key_order if k in row} | {k: v for k, v in row.items() if k not in key_order}
        lines.append(json.dumps(row, ensure_ascii=False))
    return "".join(line + "\n" for line in lines)


def _gave_justification(r: dict[str, Any]) -> bool:
    """Imported ratings remember whether a justification was given; ours require one."""
    if "justification_given" in r["extra"]:
        return bool(r["extra"]["justification_given"])
    return bool(r["justification"])


def _put(row: dict[str, Any], key: str, entries: list[tuple[str, Any, str]]) -> None:
    if not entries:
        row[key + RESP] = row[key + USERS] = row[key + STATUS] = None
        return
    row[key + RESP] = [e[1] for e in entries]
    row[key + USERS] = [e[0] for e in entries]
    row[key + STATUS] = [e[2] for e in entries]


def _finished_sessions(db: Database, study_id: int) -> list[tuple[RoleplaySessionRow, StudyProfileRow, str]]:
    with db.read() as s:
        return [tuple(r) for r in s.execute(
            select(RoleplaySessionRow, StudyProfileRow, AnnotatorRow.name)
            .join(StudyProfileRow, StudyProfileRow.id == RoleplaySessionRow.study_profile_id)
            .join(AnnotatorRow, AnnotatorRow.id == RoleplaySessionRow.annotator_id)
            .where(RoleplaySessionRow.study_id == study_id, RoleplaySessionRow.status == "finished")
            .order_by(RoleplaySessionRow.id)
        ).all()]


def interactions_jsonl(db: Database, study_id: int) -> str:
    """Finished role-play sessions as rows of a run's ``interactions.jsonl``."""
    lines = []
    for sess, sp, _name in _finished_sessions(db, study_id):
        turns = load_turns(db, sess.interaction_id)
        with db.read() as s:
            inter = s.get(InteractionRow, sess.interaction_id)
        attrs = sp.profile_json["member_attributes"]
        severe = any("severe" in str(attrs.get(k, "")).lower() for k in ("depressive_symptoms", "anxious_symptoms"))
        lines.append(json.dumps({
            "id": sess.interaction_id, "run_id": sess.run_id, "profile_id": sp.profile_id,
            "model": inter.clinician_model, "patient_model": "human", "member_attributes": attrs,
            "messages": [{"role": "user" if t.role == "patient" else "assistant", "content": t.content} for t in turns],
            "turns": [t.model_dump(mode="json") for t in turns], "status": "complete", "severe": severe,
        }, ensure_ascii=False))
    return "".join(line + "\n" for line in lines)


def user_turns_rows(db: Database, study_id: int) -> list[dict[str, Any]]:
    """Human patient turns in the authors' ``human_user_turns.jsonl`` layout."""
    rows = []
    for sess, sp, _name in _finished_sessions(db, study_id):
        attrs = sp.profile_json["member_attributes"]
        profile = {k: attrs[k] for k in ATTRIBUTE_FIELDS if k in attrs}
        profile["backstory"] = sp.profile_json.get("member_narrative") or ""
        for t in load_turns(db, sess.interaction_id):
            if t.role == "patient" and t.author == "human":
                rows.append({"patient_profile": profile, "content": t.content})
    return rows


def user_turns_jsonl(db: Database, study_id: int) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in user_turns_rows(db, study_id))


def export_text(db: Database, g: Guidelines, study_ref: int | str, fmt: str, target: Target | str | None = None) -> str:
    """A study's export in ``fmt``; ``g`` and ``target`` (default ``mindeval``) are the study's target's."""
    t = as_target(target)
    with db.read() as s:
        study: StudyRow = get_study(s, study_ref)
        study_id, kind, name = study.id, study.kind, study.name
    if fmt not in FORMATS:
        raise MindEvalError(f"unknown export format '{fmt}' (one of {', '.join(FORMATS)})", field="format")
    if fmt in ("interactions", "user-turns") and kind != "roleplay":
        raise MindEvalError(f"'{fmt}' exports role-play sessions, but '{name}' is a rating study", field="format")
    if fmt in ("csv", "jsonl", "authors", "flags") and kind != "rating":
        raise MindEvalError(f"'{fmt}' exports ratings, but '{name}' is a role-play study", field="format")
    if fmt == "csv":
        return ratings_csv(db, g, study_id)
    if fmt == "jsonl":
        return ratings_jsonl(db, g, study_id, t)
    if fmt == "flags":
        return "".join(json.dumps(f.model_dump(), ensure_ascii=False) + "\n" for f in flagged(db, study_id))
    if fmt == "authors" and not t.manifest.authors_release:
        raise MindEvalError(f"the authors' schema holds MindEval's form, but '{name}' rates target '{t.name}': "
                            "export csv or jsonl", field="format")
    if fmt == "authors":
        return authors_jsonl(db, g, study_id)
    if fmt == "interactions":
        return interactions_jsonl(db, study_id)
    return user_turns_jsonl(db, study_id)


def export_file(db: Database, g: Guidelines, study_ref: int | str, fmt: str, out: str | Path,
                target: Target | str | None = None) -> int:
    """Write an export; returns the number of rows (CSV header excluded)."""
    text = export_text(db, g, study_ref, fmt, target)
    Path(out).write_text(text, encoding="utf-8")
    if fmt == "csv":
        return max(len(list(csv.reader(io.StringIO(text)))) - 1, 0)
    return text.count("\n")
