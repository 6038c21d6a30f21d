"""Rating one transcript: autosaved drafts, validated submission, revisions with history.

Every write starts by updating the rating row itself (``version = version + 1``
guarded by its state and, when the caller names the version its page shows, by that
version). That takes the row lock on PostgreSQL and the write lock on SQLite, so a
value save and a submit from two tabs are serialised: a value can never slip into a
submitted rating, a rating is submitted once per revision (the unique
``(rating_id, revision)`` constraint backs this up), and a write based on an older
version than the stored one is refused (:class:`Stale`) instead of silently reverting
what another tab or device stored meanwhile.
"""

from __future__ import annotations

from functools import lru_cache, partial

from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError

from mindeval.errors import MindEvalError
from mindeval.store.db import Database
from mindeval.targets import load_target
from mindeval.targets.guidelines import Guidelines

from . import gold, units
from .common import (
    AccessDenied,
    Conflict,
    NotFound,
    RatingIncomplete,
    Stale,
    intake_pairs,
    set_or_clear,
)
from .models import (
    FlagView,
    ItemState,
    ItemView,
    LevelView,
    Message,
    QueueEntry,
    RevisionView,
    ScaleView,
    SubAxisView,
)
from .tables import (
    NA_VALUE,
    AssignmentRow,
    ItemRow,
    RatingRevisionRow,
    RatingRow,
    RatingValueRow,
    StudyRow,
    utcnow,
)

MAX_TEXT = 20_000
MAX_REASON = 2_000
MAX_ACTIVE_STEP = 120.0  # seconds: a longer gap between two actions on an item counts as this much


def na_value(g: Guidelines) -> int:
    """How "not applicable" is stored under these guidelines: 0, the authors' convention, unless
    0 is a value of the scale (a categorical level), then one below its lowest value."""
    values = g.score_values()
    return NA_VALUE if NA_VALUE not in values else min(values) - 1


@lru_cache(maxsize=64)
def target_na(ref: str) -> int:
    """:func:`na_value` of the target a study stores (a study's target never changes)."""
    return na_value(load_target(ref).guidelines)


def hidden(s, study_id: int, annotator_id: int) -> list:
    """Conditions that show an annotator only her qualification items of a study while her
    qualification is pending or failed (:mod:`.gold`): her real items *and* the study's later gold
    items stay hidden, so that no item she saw then can later be told apart as gold. Empty when
    nothing is hidden."""
    study = s.get(StudyRow, study_id)
    if study is None or not study.qualify_n or not gold.held(s, study, annotator_id, target_na(study.target)):
        return []
    return [AssignmentRow.kind == "qualify"]


def scale_view(g: Guidelines) -> ScaleView:
    return ScaleView(kind=g.scale_kind, na_value=na_value(g),
                     levels=[LevelView(value=lv.value, label=lv.label, harm=lv.harm) for lv in g.levels])


def subaxis_views(g: Guidelines) -> list[SubAxisView]:
    names = {a.code: a.name for a in g.judge_axes}
    shown = {lv.id: lv.label for lv in g.levels}  # ordinal: "3" -> "3"
    return [
        SubAxisView(id=s.id, axis=s.axis, axis_name=names[s.axis], name=s.name,
                    anchors={shown.get(str(k), str(k)): text for k, text in s.anchors.items()}, allow_na=s.allow_na)
        for s in g.human_subaxes
    ]


def _state(rating: RatingRow | None) -> ItemState:
    if rating is None:
        return "todo"
    return "submitted" if rating.state == "submitted" else "draft"


def owned_assignment(s, annotator_id: int, assignment_id: int) -> AssignmentRow:
    """The assignment if it belongs to this annotator; otherwise refuse (same message)."""
    row = s.get(AssignmentRow, int(assignment_id))
    if row is None or row.annotator_id != annotator_id:
        raise AccessDenied("this item is not assigned to you", field="assignment")
    if row.kind != "qualify" and hidden(s, row.study_id, annotator_id):
        raise AccessDenied("this item opens once you have passed the study's first transcripts", field="assignment")
    return row


def assignment_target(db: Database, annotator_id: int, assignment_id: int) -> str:
    """The target of an annotator's own assignment's study (others are refused)."""
    with db.read() as s:
        a = owned_assignment(s, annotator_id, assignment_id)
        return s.scalar(select(StudyRow.target).where(StudyRow.id == a.study_id))


def queue(db: Database, annotator_id: int, study_id: int) -> list[QueueEntry]:
    """The annotator's items of one study in their seeded order."""
    with db.read() as s:
        rows = s.execute(
            select(AssignmentRow, RatingRow, ItemRow.member_attributes)
            .join(ItemRow, ItemRow.id == AssignmentRow.item_id)
            .outerjoin(RatingRow, RatingRow.assignment_id == AssignmentRow.id)
            .where(AssignmentRow.annotator_id == annotator_id, AssignmentRow.study_id == study_id,
                   *hidden(s, study_id, annotator_id))
            .order_by(AssignmentRow.position)
        ).all()
    out = []
    for n, (a, r, attrs) in enumerate(rows, start=1):
        name = str((attrs or {}).get("name", "member"))
        out.append(QueueEntry(assignment_id=a.id, position=n, state=_state(r), label=f"Transcript {n} · {name}",
                              flag=r.flag if r is not None else None))
    return out


def resume_target(db: Database, annotator_id: int, study_id: int) -> int | None:
    """Where to pick up: the draft touched last, else the first item not yet submitted
    (skipped items last)."""
    with db.read() as s:
        draft = s.scalar(
            select(AssignmentRow.id)
            .join(RatingRow, RatingRow.assignment_id == AssignmentRow.id)
            .where(AssignmentRow.annotator_id == annotator_id, AssignmentRow.study_id == study_id,
                   RatingRow.state == "draft", (RatingRow.flag.is_(None)) | (RatingRow.flag != "skip"),
                   *hidden(s, study_id, annotator_id))
            .order_by(RatingRow.updated_at.desc(), RatingRow.id.desc())
            .limit(1)
        )
    if draft is not None:
        return draft
    open_ = [e for e in queue(db, annotator_id, study_id) if e.state != "submitted"]
    for entry in sorted(open_, key=lambda e: e.flag == "skip"):
        return entry.assignment_id
    return None


def _values(s, rating_id: int) -> dict[str, int]:
    rows = s.execute(select(RatingValueRow.subaxis, RatingValueRow.value).where(RatingValueRow.rating_id == rating_id)).all()
    return {k: v for k, v in rows}


def _history(s, rating_id: int) -> list[RevisionView]:
    rows = s.scalars(
        select(RatingRevisionRow).where(RatingRevisionRow.rating_id == rating_id).order_by(RatingRevisionRow.revision)
    ).all()
    return [
        RevisionView(revision=r.revision, action=r.action, values=dict(r.values_json),
                     justification=r.justification, safety_note=r.safety_note, created_at=r.created_at)
        for r in rows
    ]


def item_view(db: Database, g: Guidelines, annotator_id: int, assignment_id: int) -> ItemView:
    """The blinded view of one assignment for its own annotator."""
    with db.read() as s:
        a = owned_assignment(s, annotator_id, assignment_id)
        item = s.get(ItemRow, a.item_id)
        study = s.get(StudyRow, a.study_id)
        rating = s.scalar(select(RatingRow).where(RatingRow.assignment_id == a.id))
        shown = hidden(s, a.study_id, annotator_id)
        mine = select(AssignmentRow.id).where(AssignmentRow.annotator_id == annotator_id,
                                              AssignmentRow.study_id == a.study_id, *shown)
        total = s.scalar(select(func.count()).select_from(mine.subquery())) or 0
        before = s.scalar(select(func.count()).select_from(
            mine.where(AssignmentRow.position < a.position).subquery())) or 0
        done = s.scalar(
            select(func.count()).select_from(RatingRow)
            .join(AssignmentRow, AssignmentRow.id == RatingRow.assignment_id)
            .where(AssignmentRow.annotator_id == annotator_id, AssignmentRow.study_id == a.study_id,
                   RatingRow.revision > 0, RatingRow.state == "submitted", *shown)
        ) or 0
        values = _values(s, rating.id) if rating else {}
        history = _history(s, rating.id) if rating else []
        answers, replies = units.load(s, rating.id) if rating else ({}, {})
    attrs = item.member_attributes or {}
    return ItemView(
        assignment_id=a.id, study_id=study.id, study_name=study.name, position=before + 1, total=total,
        done=done, member_name=str(attrs.get("name", "member")), intake=intake_pairs(attrs),
        messages=[Message(role="patient" if m.get("role") == "user" else "clinician", content=str(m.get("content", "")))
                  for m in item.messages],
        subaxes=subaxis_views(g), scale=scale_view(g), values=values,
        justification=rating.justification if rating else "",
        safety_note=(rating.safety_note or "") if rating else "",
        state=_state(rating), revision=rating.revision if rating else 0, history=history,
        version=rating.version if rating else 0, flag=rating.flag if rating else None,
        flag_reason=(rating.flag_reason or "") if rating else "",
        active_seconds=float(rating.active_seconds or 0) if rating else 0.0,
        unit=units.unit(g), answers=answers, replies=replies,
    )


def ensure_rating(db: Database, annotator_id: int, assignment_id: int) -> int:
    """The rating row of an assignment, created on first use (race-safe)."""
    with db.read() as s:
        owned_assignment(s, annotator_id, assignment_id)
        rid = s.scalar(select(RatingRow.id).where(RatingRow.assignment_id == assignment_id))
    if rid is not None:
        return rid
    try:
        with db.write() as s:
            row = RatingRow(assignment_id=assignment_id, state="draft", revision=0, version=0,
                            justification="", extra={})
            s.add(row)
            s.flush()
            return row.id
    except IntegrityError:  # the other tab created it first
        with db.read() as s:
            return s.scalar(select(RatingRow.id).where(RatingRow.assignment_id == assignment_id))


def _refusal(s, rating_id: int, version: int | None) -> Conflict:
    """Why a guarded update of a rating matched no row: submitted, or a newer version stored."""
    state, stored = s.execute(select(RatingRow.state, RatingRow.version).where(RatingRow.id == rating_id)).one()
    if version is not None and stored != version:
        return Stale(stored)
    return Conflict("this rating is already submitted; choose 'Revise' to change it", field="state")


def _lock_draft(s, rating_id: int, version: int | None = None) -> int:
    """Take the rating for a write (a draft, at ``version`` when given); returns the new version."""
    guard = [RatingRow.id == rating_id, RatingRow.state == "draft"]
    if version is not None:
        guard.append(RatingRow.version == version)
    res = s.execute(update(RatingRow).where(*guard).values(version=RatingRow.version + 1, updated_at=utcnow()))
    if res.rowcount != 1:
        raise _refusal(s, rating_id, version)
    return s.scalar(select(RatingRow.version).where(RatingRow.id == rating_id))


def check_value(g: Guidelines, subaxis: str, value: int | None) -> None:
    """Refuse a value the sub-axis does not take: not a value of the scale, or N/A where not allowed."""
    sub = g.subaxis(subaxis)
    if value is None:
        return
    na = na_value(g)
    allowed = g.score_values()
    if not isinstance(value, int) or isinstance(value, bool) or (value not in allowed and value != na):
        if g.scale_kind == "ordinal":
            want = f"a whole number from {min(allowed)} to {max(allowed)}"
        else:
            want = "one of " + ", ".join(f"{lv.value} ({lv.label})" for lv in g.levels)
        raise MindEvalError(f"a rating is {want}, or {na} for not applicable; not {value!r}", field=subaxis)
    if value == na and not sub.allow_na:
        raise MindEvalError(f"'{sub.name}' cannot be marked not applicable", field=subaxis)


def save_value(db: Database, g: Guidelines, annotator_id: int, assignment_id: int, subaxis: str, value: int | None,
               *, version: int | None = None) -> int:
    """Autosave one sub-axis of a draft (``None`` clears it; :func:`na_value` = not applicable).

    ``version``: the rating version the page shows; a newer stored one refuses the write
    (:class:`Stale`). Returns the new version."""
    check_value(g, subaxis, value)
    if units.is_derived(g, subaxis):
        raise MindEvalError(f"'{g.subaxis(subaxis).name}' follows from the answers; it is not rated directly",
                            field=subaxis)
    rid = ensure_rating(db, annotator_id, assignment_id)
    with db.write() as s:
        new_version = _lock_draft(s, rid, version)
        row = s.scalar(select(RatingValueRow).where(RatingValueRow.rating_id == rid, RatingValueRow.subaxis == subaxis))
        set_or_clear(s, row, "value", value, partial(RatingValueRow, rating_id=rid, subaxis=subaxis))
    return new_version


def save_answer(db: Database, g: Guidelines, annotator_id: int, assignment_id: int, question: str,
                answer: str | None, *, version: int | None = None) -> int:
    """Autosave one answer to an item-level target's question (``None`` clears it) and the
    levels that follow from the answers (``version`` as in :func:`save_value`)."""
    units.question(g, question)
    rid = ensure_rating(db, annotator_id, assignment_id)
    with db.write() as s:
        new_version = _lock_draft(s, rid, version)
        units.put_answer(s, g, rid, question, answer)
        units.store_derived(s, g, na_value(g), rid)
    return new_version


def save_reply(db: Database, g: Guidelines, annotator_id: int, assignment_id: int, turn: int, *,
               level: str | None = None, flag: tuple[str, bool] | None = None, version: int | None = None) -> int:
    """Autosave one reply's level and/or one of its flags (``flag``: id, set) (``unit: reply`` targets) and the
    conversation's level, its worst reply's once every reply is rated (``version`` as in
    :func:`save_value`)."""
    if units.unit(g) != "reply":
        raise MindEvalError("this study's target is not rated reply by reply", field="turn")
    rid = ensure_rating(db, annotator_id, assignment_id)
    with db.write() as s:
        new_version = _lock_draft(s, rid, version)
        units.put_reply(s, g, rid, int(turn), level=level, flag=flag[0] if flag else None, on=bool(flag and flag[1]))
        units.store_derived(s, g, na_value(g), rid)
    return new_version


def save_text(db: Database, annotator_id: int, assignment_id: int, *, justification: str | None = None,
              safety_note: str | None = None, version: int | None = None) -> int:
    """Autosave the free-text fields of a draft (``version`` as in :func:`save_value`); returns the new version."""
    for name, text in (("justification", justification), ("safety_note", safety_note)):
        if text is not None and len(text) > MAX_TEXT:
            raise MindEvalError(f"at most {MAX_TEXT} characters", field=name)
    rid = ensure_rating(db, annotator_id, assignment_id)
    with db.write() as s:
        new_version = _lock_draft(s, rid, version)
        row = s.get(RatingRow, rid)
        if justification is not None:
            row.justification = justification
        if safety_note is not None:
            row.safety_note = safety_note or None
    return new_version


def problems(g: Guidelines, values: dict[str, int], justification: str, *, at_unit: bool = False) -> list[str]:
    """What is missing before a rating may be submitted, in plain words (``at_unit``: levels that
    follow from answers are left to :func:`.units.problems`)."""
    out = []
    na = na_value(g)
    for sub in g.human_subaxes:
        v = values.get(sub.id)
        if v is None:
            if not (at_unit and units.is_derived(g, sub.id)):
                out.append(f"rate '{sub.name}'")
        elif v == na and not sub.allow_na:
            out.append(f"'{sub.name}' cannot be not applicable")
    if not justification.strip():
        out.append("write a short justification")
    return out


def submit(db: Database, g: Guidelines, annotator_id: int, assignment_id: int, *, version: int | None = None) -> int:
    """Submit a complete draft (at ``version`` when given, as in :func:`save_value`); returns
    the new revision number."""
    rid = ensure_rating(db, annotator_id, assignment_id)
    with db.write() as s:
        guard = [RatingRow.id == rid, RatingRow.state == "draft"]
        if version is not None:
            guard.append(RatingRow.version == version)
        res = s.execute(
            update(RatingRow).where(*guard)
            .values(state="submitted", revision=RatingRow.revision + 1, version=RatingRow.version + 1,
                    submitted_at=utcnow(), updated_at=utcnow())
        )
        if res.rowcount != 1:
            refusal = _refusal(s, rid, version)
            if isinstance(refusal, Stale):
                raise refusal
            raise Conflict("this rating was already submitted (perhaps in another tab)", field="state")
        rating = s.get(RatingRow, rid, populate_existing=True)
        values = _values(s, rid)
        answers, replies = units.load(s, rid)
        turns = units.item_turns(s, rid) if units.unit(g) == "reply" else []
        missing = units.problems(g, answers, replies, turns) + problems(g, values, rating.justification, at_unit=True)
        if missing:
            raise RatingIncomplete(missing)
        answers_json, replies_json = units.frozen(g, answers, replies, turns)
        s.add(RatingRevisionRow(
            rating_id=rid, revision=rating.revision, action="submit", values_json=values,
            justification=rating.justification, safety_note=rating.safety_note,
            answers_json=answers_json, replies_json=replies_json,
        ))
        return rating.revision


def revise(db: Database, annotator_id: int, assignment_id: int) -> None:
    """Reopen a submitted rating as a draft; earlier submissions stay in the history."""
    with db.write() as s:
        owned_assignment(s, annotator_id, assignment_id)
        rating = s.scalar(select(RatingRow).where(RatingRow.assignment_id == assignment_id))
        if rating is None:
            raise NotFound("nothing to revise yet", field="assignment")
        s.execute(
            update(RatingRow).where(RatingRow.id == rating.id, RatingRow.state == "submitted")
            .values(state="draft", version=RatingRow.version + 1, updated_at=utcnow())
        )


def set_flag(db: Database, annotator_id: int, assignment_id: int, flag: str | None, reason: str = "") -> None:
    """Skip an item (``"skip"``), flag a problem with it (``"flag"``), or clear that (``None``).

    A reason is required for a skip or a flag; the admin sees it and it is exported. It does
    not change the rating's version: scores and texts stay as they are.
    """
    reason = reason.strip()
    if flag not in (None, "skip", "flag"):
        raise MindEvalError(f"a flag is 'skip' or 'flag', not {flag!r}", field="flag")
    if flag is not None and not reason:
        raise MindEvalError("please give a reason", field="reason")
    if len(reason) > MAX_REASON:
        raise MindEvalError(f"at most {MAX_REASON} characters", field="reason")
    rid = ensure_rating(db, annotator_id, assignment_id)
    with db.write() as s:
        s.execute(update(RatingRow).where(RatingRow.id == rid)
                  .values(flag=flag, flag_reason=reason if flag is not None else ""))


def add_active_time(db: Database, annotator_id: int, assignment_id: int, seconds: float) -> None:
    """Add time spent actively on an item (a step longer than :data:`MAX_ACTIVE_STEP` counts as that).

    Nothing is created for an item never touched: time is stored once a rating exists."""
    step = min(max(float(seconds), 0.0), MAX_ACTIVE_STEP)
    if step <= 0:
        return
    with db.write() as s:
        owned_assignment(s, annotator_id, assignment_id)
        s.execute(update(RatingRow).where(RatingRow.assignment_id == int(assignment_id))
                  .values(active_seconds=RatingRow.active_seconds + step))


def flagged(db: Database, study_id: int) -> list[FlagView]:
    """Every skipped or flagged item of a study, with who and why (for the admin and the export)."""
    from .tables import AnnotatorRow

    with db.read() as s:
        rows = s.execute(
            select(RatingRow, AnnotatorRow.name, ItemRow.external_id)
            .join(AssignmentRow, AssignmentRow.id == RatingRow.assignment_id)
            .join(AnnotatorRow, AnnotatorRow.id == AssignmentRow.annotator_id)
            .join(ItemRow, ItemRow.id == AssignmentRow.item_id)
            .where(AssignmentRow.study_id == study_id, RatingRow.flag.is_not(None))
            .order_by(AssignmentRow.id)
        ).all()
    return [FlagView(item=ext, annotator=name, flag=r.flag, reason=r.flag_reason or "", state=_state(r),
                     active_seconds=round(float(r.active_seconds or 0), 1)) for r, name, ext in rows]
