"""Gold items (known answers) and the qualification a new rater passes before real items.

An admin marks items of a rating study as gold with the expected value of each sub-axis and a
tolerance (``|given - expected| <= tolerance`` on an ordinal scale; a categorical scale and
"not applicable" are exact). An item's answer is right when every expected sub-axis is, and the
rater's *first* submission counts (revising later changes nothing here). Assignment
(:mod:`.studies`) mixes gold items into each rater's queue unmarked (``AssignmentRow.kind``, which
only admin pages read); when a study requires qualification, a rater sees only her qualification
items (:func:`held`; her real items and the study's later gold items stay hidden, so none of them
can be recognised as gold later) until she has answered her ``qualify_n`` qualification items with
at least a share ``qualify_pass`` right, and nothing more if she fails.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from sqlalchemy import select

from mindeval.errors import MindEvalError
from mindeval.store.db import Database
from mindeval.targets.guidelines import Guidelines

from .models import GoldItemView, GoldSettings, QualificationView, StudyItemEntry
from .tables import (
    AnnotatorRow,
    AssignmentRow,
    GoldItemRow,
    ItemRow,
    RatingRevisionRow,
    RatingRow,
    StudyItemRow,
    StudyRow,
)

GOLD_KINDS = ("gold", "qualify")


def is_correct(expected: dict[str, int], values: dict[str, int], tolerance: int, na: int) -> bool:
    """Whether a rating matches a gold item: every expected sub-axis within ``tolerance`` (N/A exact)."""
    for sub, want in expected.items():
        got = values.get(sub)
        if got is None:
            return False
        if na in (got, want):
            if got != want:
                return False
        elif abs(got - want) > tolerance:
            return False
    return True


def settings(db: Database, study: StudyRow) -> GoldSettings:
    with db.read() as s:
        n = len(list(s.scalars(select(GoldItemRow.id).where(GoldItemRow.study_id == study.id))))
    return GoldSettings(gold_rate=study.gold_rate or 0.0, qualify_n=study.qualify_n or 0,
                        qualify_pass=study.qualify_pass if study.qualify_pass is not None else 1.0, n_gold=n)


def set_settings(s, study: StudyRow, *, gold_rate: float | None = None, qualify_n: int | None = None,
                 qualify_pass: float | None = None) -> None:
    """Change a rating study's gold settings (checked; fields left ``None`` stay as they are)."""
    if study.kind != "rating":
        raise MindEvalError("gold items belong to rating studies", field="study")
    if gold_rate is not None:
        if not 0 <= gold_rate < 1:
            raise MindEvalError(f"the gold rate is a share from 0 up to (not including) 1, not {gold_rate}",
                                field="gold_rate")
        study.gold_rate = float(gold_rate)
    if qualify_n is not None:
        if qualify_n < 0:
            raise MindEvalError("the number of qualification items cannot be negative", field="qualify_n")
        study.qualify_n = int(qualify_n)
    if qualify_pass is not None:
        if not 0 < qualify_pass <= 1:
            raise MindEvalError(f"the pass threshold is a share above 0 and at most 1, not {qualify_pass}",
                                field="qualify_pass")
        study.qualify_pass = float(qualify_pass)


def _stored(g: Guidelines, sub: str, value: Any, na: int, where: str) -> int:
    """A gold value as stored: a score, a categorical level's label or value, or "NA"."""
    try:
        g.subaxis(sub)
    except Exception:
        raise MindEvalError(f"{where}: unknown sub-axis '{sub}' (the study's form has "
                            f"{', '.join(x.id for x in g.human_subaxes)})", field="expected") from None
    if isinstance(value, str):
        text = value.strip()
        if text.upper() in ("NA", "N/A"):
            return na
        by_label = {lv.label.casefold(): lv.value for lv in g.levels}
        if text.casefold() in by_label:
            return by_label[text.casefold()]
        if text.lstrip("-").isdigit():
            value = int(text)
    if isinstance(value, bool) or not isinstance(value, int) or value not in g.score_values():
        raise MindEvalError(f"{where}: '{sub}' expects one of {sorted(g.score_values())} (or a level's label, "
                            f"or NA), not {value!r}", field="expected")
    return value


def mark(s, g: Guidelines, na: int, study: StudyRow, entry: dict[str, Any], where: str, replace: bool) -> bool:
    """Mark one item of ``study`` gold from ``entry`` (``item``, ``expected``, ``tolerance``, ``note``);
    returns whether a row was added or changed. ``where`` names the entry in messages."""
    ext = str(entry.get("item") or "").strip()
    item_id = s.scalar(select(ItemRow.id).join(StudyItemRow, StudyItemRow.item_id == ItemRow.id)
                       .where(StudyItemRow.study_id == study.id, ItemRow.external_id == ext))
    if item_id is None:
        raise MindEvalError(f"{where}: no item '{ext}' in study '{study.name}' (import it first)", field="item")
    expected = entry.get("expected")
    if not isinstance(expected, dict) or not expected:
        raise MindEvalError(f"{where}: 'expected' must map sub-axes to values", field="expected")
    values = {sub: _stored(g, sub, v, na, where) for sub, v in expected.items()}
    tol = entry.get("tolerance", 0)
    if isinstance(tol, bool) or not isinstance(tol, int) or tol < 0:
        raise MindEvalError(f"{where}: tolerance must be a whole number ≥ 0, not {tol!r}", field="tolerance")
    if tol and g.scale_kind == "categorical":
        raise MindEvalError(f"{where}: a categorical scale is matched exactly: tolerance must be 0", field="tolerance")
    if s.scalar(select(AssignmentRow.id).where(AssignmentRow.study_id == study.id, AssignmentRow.item_id == item_id,
                                               AssignmentRow.kind == "real").limit(1)) is not None:
        raise MindEvalError(f"{where}: item '{ext}' is already assigned as a real item; mark gold items before "
                            "assigning", field="item")
    row = s.scalar(select(GoldItemRow).where(GoldItemRow.study_id == study.id, GoldItemRow.item_id == item_id))
    new = {"expected": values, "tolerance": tol, "note": str(entry.get("note") or "")}
    if row is None:
        s.add(GoldItemRow(study_id=study.id, item_id=item_id, **new))
        return True
    if (row.expected, row.tolerance, row.note) == (new["expected"], tol, new["note"]):
        return False
    if not replace:
        raise MindEvalError(f"{where}: item '{ext}' is already gold with other expected values; "
                            "add --replace to change them", field="item")
    row.expected, row.tolerance, row.note = values, tol, new["note"]
    return True


def read_file(path: str | Path) -> list[tuple[str, dict[str, Any]]]:
    """The entries of a gold file (JSON Lines: one object per line), each with where it is."""
    p = Path(path)
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise MindEvalError(f"cannot read {p}: {exc.strerror or exc}", path=str(p)) from None
    out = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as exc:
            raise MindEvalError(f"{p}, line {n}: not JSON ({exc.msg})", path=str(p)) from None
        if not isinstance(entry, dict):
            raise MindEvalError(f"{p}, line {n}: expected an object with item, expected, tolerance", path=str(p))
        out.append((f"{p}, line {n}", entry))
    if not out:
        raise MindEvalError(f"{p}: no gold items in the file", path=str(p))
    return out


def gold_items(db: Database, study_id: int) -> list[GoldItemView]:
    with db.read() as s:
        rows = s.execute(select(GoldItemRow, ItemRow.external_id).join(ItemRow, ItemRow.id == GoldItemRow.item_id)
                         .where(GoldItemRow.study_id == study_id).order_by(GoldItemRow.id)).all()
    return [GoldItemView(item=ext, expected=dict(r.expected), tolerance=r.tolerance, note=r.note or "")
            for r, ext in rows]


def study_items(db: Database, study_id: int) -> list[StudyItemEntry]:
    """Every item of a study in its order, with the id a gold file names it by (before anyone rates)."""
    with db.read() as s:
        rows = s.execute(select(ItemRow.id, ItemRow.external_id, ItemRow.source, ItemRow.clinician_model)
                         .join(StudyItemRow, StudyItemRow.item_id == ItemRow.id)
                         .where(StudyItemRow.study_id == study_id)
                         .order_by(StudyItemRow.position, StudyItemRow.id)).all()
        gold = gold_ids(s, study_id)
    return [StudyItemEntry(item=ext, source=src, clinician_model=model, gold=iid in gold)
            for iid, ext, src, model in rows]


def gold_ids(s, study_id: int) -> set[int]:
    return set(s.scalars(select(GoldItemRow.item_id).where(GoldItemRow.study_id == study_id)))


def first_answers(s, study_id: int, annotator_id: int | None = None) -> list[dict[str, Any]]:
    """Every submitted gold answer of a study (first submission), scored against its gold item."""
    q = (select(AssignmentRow, RatingRevisionRow.values_json, RatingRevisionRow.created_at, GoldItemRow)
         .join(RatingRow, RatingRow.assignment_id == AssignmentRow.id)
         .join(RatingRevisionRow, (RatingRevisionRow.rating_id == RatingRow.id) & (RatingRevisionRow.revision == 1))
         .join(GoldItemRow, (GoldItemRow.item_id == AssignmentRow.item_id) & (GoldItemRow.study_id == study_id))
         .where(AssignmentRow.study_id == study_id, AssignmentRow.kind.in_(GOLD_KINDS)))
    if annotator_id is not None:
        q = q.where(AssignmentRow.annotator_id == annotator_id)
    return [{"annotator_id": a.annotator_id, "kind": a.kind, "position": a.position, "assignment_id": a.id,
             "values": dict(vals), "at": at, "expected": dict(gold.expected), "tolerance": gold.tolerance}
            for a, vals, at, gold in s.execute(q.order_by(AssignmentRow.position)).all()]


def qualification(s, study: StudyRow, annotator_id: int, na: int) -> QualificationView:
    """Where ``annotator_id`` stands with ``study``'s qualification (see the module docstring)."""
    required = study.qualify_n or 0
    if study.kind != "rating" or required <= 0:
        return QualificationView(status="none")
    needed = math.ceil(round(required * (study.qualify_pass or 1.0), 9))
    mine = [r for r in first_answers(s, study.id, annotator_id) if r["kind"] == "qualify"]
    correct = sum(is_correct(r["expected"], r["values"], r["tolerance"], na) for r in mine)
    view = QualificationView(status="pending", required=required, answered=len(mine), correct=correct, needed=needed)
    if len(mine) >= required:
        view.status = "passed" if correct >= needed else "failed"
    return view


def held(s, study: StudyRow, annotator_id: int, na: int) -> bool:
    """Whether ``annotator_id`` sees only her qualification items of ``study`` (qualification pending or failed)."""
    return qualification(s, study, annotator_id, na).status in ("pending", "failed")


def scores(db: Database, study_id: int, na: int) -> tuple[int, dict[str, tuple[int, int]]]:
    """The study's number of gold items, and per rater (by name) ``(right, answered)`` gold items."""
    with db.read() as s:
        n_items = len(gold_ids(s, study_id))
        names = dict(s.execute(select(AnnotatorRow.id, AnnotatorRow.name)).all())
        answers = first_answers(s, study_id)
    out: dict[str, tuple[int, int]] = {}
    for r in answers:
        k, n = out.get(names[r["annotator_id"]], (0, 0))
        out[names[r["annotator_id"]]] = (k + is_correct(r["expected"], r["values"], r["tolerance"], na), n + 1)
    return n_items, out


def mark_entries(db: Database, g: Guidelines, na: int, study_id: int, entries: list[tuple[str, dict[str, Any]]],
                 replace: bool = False) -> int:
    """Mark every entry gold in one transaction (all or none); returns how many were added or changed."""
    with db.write() as s:
        study = s.get(StudyRow, study_id)
        if study.kind != "rating":
            raise MindEvalError("gold items belong to rating studies", field="study")
        return sum(mark(s, g, na, study, entry, where, replace) for where, entry in entries)


def update_settings(db: Database, study_id: int, **changes: Any) -> GoldSettings:
    """Change a study's gold rate and qualification (:func:`set_settings`); returns the settings."""
    with db.write() as s:
        set_settings(s, s.get(StudyRow, study_id), **changes)
    with db.read() as s:
        study = s.get(StudyRow, study_id)
    return settings(db, study)


def my_qualification(db: Database, study_id: int, annotator_id: int, na: int) -> QualificationView:
    with db.read() as s:
        return qualification(s, s.get(StudyRow, study_id), annotator_id, na)
