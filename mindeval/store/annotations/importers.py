"""Bring interactions, profiles and ratings into a study.

Accepted inputs (detected from the path, or forced with ``kind``):

* ``run`` — a ``mindeval run`` output directory (``interactions.jsonl``, and
  ``judgments.jsonl`` whose scores are kept for the admin only);
* ``interactions`` — a JSONL file of interactions (``id``, ``model``,
  ``member_attributes``, ``messages``), e.g. ``data/demo_transcripts.jsonl``;
* ``authors`` — the authors' ``human_annotations.jsonl``, including its ratings;
* ``profiles`` — a ``profiles.jsonl`` file, for role-play studies.

Re-importing the same rows is a no-op; a row whose ratings differ from the stored
ones is refused with its file, line and field.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from sqlalchemy import func, select

from mindeval.authors import (
    JUSTIFICATION,
    PASSTHROUGH,
    SAFETY,
    is_authors_row,
    load_mapping,
    read_authors,
    row_attributes,
    row_messages,
)
from mindeval.errors import MindEvalError
from mindeval.guidelines import Guidelines
from mindeval.records import (
    InteractionRecord,
    JudgmentRecord,
    load_profiles,
    read_jsonl,
    validate_row,
)

from ..db import Database
from .models import ImportReport
from .people import imported_annotator
from .studies import get_study
from .tables import (
    AssignmentRow,
    ItemRow,
    RatingRevisionRow,
    RatingRow,
    RatingValueRow,
    StudyItemRow,
    StudyProfileRow,
    StudyRow,
)

KINDS = ("run", "interactions", "authors", "profiles")


def detect_kind(path: Path) -> str:
    if path.is_dir():
        if (path / "interactions.jsonl").is_file():
            return "run"
        raise MindEvalError("directory has no interactions.jsonl (is it a `mindeval run` output?)", path=path)
    for _n, obj in read_jsonl(path):
        if is_authors_row(obj):
            return "authors"
        if "messages" in obj:
            return "interactions"
        if "member_narrative" in obj or "member_attributes" in obj:
            return "profiles"
        break
    raise MindEvalError("cannot tell what this file holds (interactions, profiles or the authors' ratings)", path=path)


def import_path(db: Database, g: Guidelines, study_ref: int | str, path: str | Path, kind: str | None = None) -> ImportReport:
    p = Path(path)
    if not p.exists():
        raise MindEvalError("file not found", path=p)
    kind = kind or detect_kind(p)
    if kind not in KINDS:
        raise MindEvalError(f"unknown import kind '{kind}' (one of {', '.join(KINDS)})", field="kind")
    with db.read() as s:
        study = get_study(s, study_ref)
        study_id, study_kind = study.id, study.kind
    want = "roleplay" if kind == "profiles" else "rating"
    if study_kind != want:
        raise MindEvalError(
            f"{kind} go into a {want} study, but '{study.name}' is a {study_kind} study", path=p, field="study"
        )
    if kind == "profiles":
        return _import_profiles(db, study_id, p)
    if kind == "run":
        judgments = _judgments(p / "judgments.jsonl") if (p / "judgments.jsonl").is_file() else {}
        return _import_interactions(db, study_id, p / "interactions.jsonl", "run", judgments)
    if kind == "interactions":
        return _import_interactions(db, study_id, p, "demo" if p.name.startswith("demo_") else "file", {})
    return _import_authors(db, g, study_id, p)


# ------------------------------------------------------------------ helpers


def _next_position(s, table, study_id: int) -> int:
    cur = s.scalar(select(func.max(table.position)).where(table.study_id == study_id))
    return 0 if cur is None else cur + 1


def _add_item(s, study_id: int, external_id: str, **fields: Any) -> tuple[ItemRow, bool]:
    """Find the item by external id or create it; link it to the study either way."""
    item = s.scalar(select(ItemRow).where(ItemRow.external_id == external_id))
    created = item is None
    if created:
        item = ItemRow(external_id=external_id, **fields)
        s.add(item)
        s.flush()
    linked = s.scalar(select(StudyItemRow.id).where(StudyItemRow.study_id == study_id, StudyItemRow.item_id == item.id))
    if linked is None:
        s.add(StudyItemRow(study_id=study_id, item_id=item.id, position=_next_position(s, StudyItemRow, study_id)))
        s.flush()
    return item, created


def _judgments(path: Path) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for j in JudgmentRecord.read(path):
        out[j.interaction_id].append(
            j.model_dump(mode="json", include={"judge_model", "sample", "scores", "average", "parse_status"}))
    return out


# ------------------------------------------------------------------ interactions


def _import_interactions(db: Database, study_id: int, path: Path, source: str,
                         judgments: dict[str, list[dict[str, Any]]]) -> ImportReport:
    report = ImportReport(kind="run" if source == "run" else "interactions")
    with db.write() as s:
        for line, obj in read_jsonl(path):
            if "id" not in obj:
                raise MindEvalError("missing required field", path=path, line=line, field="id")
            if source == "run":  # a run directory's rows follow the run-directory schema
                validate_row(InteractionRecord, obj, path=path, line=line)
            status = obj.get("status", "complete")
            if status != "complete":
                report.skipped += 1
                report.warnings.append(f"{path.name}:{line}: skipped interaction {obj['id']} with status '{status}'")
                continue
            msgs = row_messages(obj, path, line)
            attrs = row_attributes(obj, path, line)
            run_id = obj.get("run_id")
            ext = f"{source}:{run_id}:{obj['id']}" if run_id else f"{source}:{obj['id']}"
            meta: dict[str, Any] = {"source_line": line}
            for key in ("run_id", "profile_id", "patient_model", "severe", "id"):
                if key in obj:
                    meta[key] = obj[key]
            if str(obj["id"]) in judgments:
                meta["judgments"] = judgments[str(obj["id"])]
            _item, created = _add_item(
                s, study_id, ext, source=source, source_ref=str(path), member_attributes=attrs, messages=msgs,
                clinician_model=obj.get("model"), patient_kind="model", meta=meta,
            )
            if created:
                report.items_added += 1
            else:
                report.items_reused += 1
    return report


# ------------------------------------------------------------------ profiles


def _import_profiles(db: Database, study_id: int, path: Path) -> ImportReport:
    report = ImportReport(kind="profiles")
    profiles = load_profiles(path)
    with db.write() as s:
        pos = _next_position(s, StudyProfileRow, study_id)
        for p in profiles:
            exists = s.scalar(select(StudyProfileRow.id).where(StudyProfileRow.study_id == study_id,
                                                                StudyProfileRow.profile_id == p.id))
            if exists is not None:
                report.skipped += 1
                continue
            s.add(StudyProfileRow(study_id=study_id, profile_id=p.id, profile_json=p.to_json(), position=pos))
            pos += 1
            report.profiles_added += 1
    return report


# ------------------------------------------------------------------ the authors' ratings


class _Slots:
    """Per-annotator accumulators of one authors' row, remembering first-seen order."""

    def __init__(self, per_user: dict[str, dict[str, Any]], order: list[str]) -> None:
        self.per_user, self.order = per_user, order

    def __call__(self, user: str) -> dict[str, Any]:
        if user not in self.per_user:
            self.per_user[user] = {"values": {}, "extra": {}, "status": {}, "justification": None, "safety": None}
            self.order.append(user)
        return self.per_user[user]


def _import_authors(db: Database, g: Guidelines, study_id: int, path: Path) -> ImportReport:
    mapping = load_mapping(guidelines=g, every_subaxis=True)
    report = ImportReport(kind="authors")
    rows = read_authors(path, mapping)
    with db.write() as s:
        study = s.get(StudyRow, study_id)
        for row in rows:
            per_user: dict[str, dict[str, Any]] = {}
            order: list[str] = []
            slot = _Slots(per_user, order)
            for user, key, value, status in row.responses:
                rec = slot(user)
                if key in (JUSTIFICATION, SAFETY):
                    rec["justification" if key == JUSTIFICATION else "safety"] = "" if value is None else str(value)
                elif mapping.fields[key] is None:
                    rec["extra"][key] = value
                else:
                    rec["values"][mapping.fields[key]] = value
                rec["status"][key] = status
            meta = {k: row.raw[k] for k in PASSTHROUGH if k in row.raw}
            meta["key_order"] = list(row.raw.keys())
            meta["annotator_order"] = order
            item, created = _add_item(
                s, study_id, f"authors:{row.raw['id']}", source="authors", source_ref=str(path),
                member_attributes=row.member_attributes, messages=row.messages, clinician_model=row.model,
                patient_kind="model", meta={"authors": meta, "id": row.raw["id"]},
            )
            report.items_added += int(created)
            report.items_reused += int(not created)
            for user in order:
                _store_imported_rating(s, study, item, user, per_user[user], path, row.line, report, g)
    return report


def _store_imported_rating(s, study: StudyRow, item: ItemRow, user: str, rec: dict[str, Any], path: Path,
                           line: int, report: ImportReport, g: Guidelines) -> None:
    person, new = imported_annotator(s, user)
    report.annotators_added += int(new)
    statuses = set(rec["status"].values())
    submitted = statuses <= {"submitted", None}
    extra = {"criteria": rec["extra"], "status": rec["status"], "justification_given": rec["justification"] is not None}
    a = s.scalar(select(AssignmentRow).where(AssignmentRow.study_id == study.id, AssignmentRow.item_id == item.id,
                                             AssignmentRow.annotator_id == person.id))
    if a is not None:
        rating = s.scalar(select(RatingRow).where(RatingRow.assignment_id == a.id))
        have = {k: v for k, v in s.execute(select(RatingValueRow.subaxis, RatingValueRow.value)
                                           .where(RatingValueRow.rating_id == rating.id)).all()} if rating else {}
        if rating is not None and have == rec["values"] and rating.justification == (rec["justification"] or "") \
                and rating.extra.get("criteria") == rec["extra"]:
            report.ratings_unchanged += 1
            return
        raise MindEvalError(f"annotator {user} already has a different rating of this item in the study",
                            path=path, line=line, field="criterion_1.responses.users")
    pos = s.scalar(select(func.max(AssignmentRow.position)).where(AssignmentRow.study_id == study.id,
                                                                  AssignmentRow.annotator_id == person.id))
    a = AssignmentRow(study_id=study.id, item_id=item.id, annotator_id=person.id, position=0 if pos is None else pos + 1)
    s.add(a)
    s.flush()
    rating = RatingRow(assignment_id=a.id, state="submitted" if submitted else "draft", revision=1 if submitted else 0,
                       version=0, justification=rec["justification"] or "", safety_note=rec["safety"],
                       extra=json.loads(json.dumps(extra)))
    s.add(rating)
    s.flush()
    for sub, v in rec["values"].items():
        s.add(RatingValueRow(rating_id=rating.id, subaxis=sub, value=v))
    if submitted:
        s.add(RatingRevisionRow(rating_id=rating.id, revision=1, action="import", values_json=rec["values"],
                                justification=rating.justification, safety_note=rating.safety_note))
    bad_na = [sub for sub, v in rec["values"].items() if v == 0 and not g.subaxis(sub).allow_na]
    if bad_na:
        report.warnings.append(f"{path.name}:{line}: {user} left {', '.join(bad_na)} unrated (0)")
    report.ratings_added += 1
