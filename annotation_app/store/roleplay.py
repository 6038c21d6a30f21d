"""Role-play session rows: ownership checks, listing, start and finish.

Turns and model calls are not here: they live in the run store (one ``roleplay``
run per session); the app's role-play module orchestrates the clinician calls.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import delete, func, select, update

from mindeval.records import Turn
from mindeval.store.db import Database
from mindeval.store.runs import RunStore

from .common import AccessDenied, Conflict
from .tables import ItemRow, RoleplayQueueRow, RoleplaySessionRow, StudyProfileRow, StudyRow, utcnow


def owned(s, annotator_id: int, session_id: int) -> RoleplaySessionRow:
    """The session if it belongs to this annotator; otherwise refuse (same message)."""
    row = s.get(RoleplaySessionRow, int(session_id))
    if row is None or row.annotator_id != annotator_id:
        raise AccessDenied("this role-play session is not assigned to you", field="session")
    return row


def session_rows(db: Database, annotator_id: int, study_id: int) -> list[tuple[RoleplaySessionRow, StudyProfileRow]]:
    """The annotator's sessions of one study with their profiles, in their seeded order."""
    with db.read() as s:
        return [tuple(r) for r in s.execute(
            select(RoleplaySessionRow, StudyProfileRow)
            .join(StudyProfileRow, StudyProfileRow.id == RoleplaySessionRow.study_profile_id)
            .where(RoleplaySessionRow.annotator_id == annotator_id, RoleplaySessionRow.study_id == study_id)
            .order_by(RoleplaySessionRow.position)
        ).all()]


def load_session(db: Database, annotator_id: int, session_id: int) -> tuple[RoleplaySessionRow, StudyRow, StudyProfileRow]:
    """An annotator's own session with its study and profile."""
    with db.read() as s:
        sess = owned(s, annotator_id, session_id)
        return sess, s.get(StudyRow, sess.study_id), s.get(StudyProfileRow, sess.study_profile_id)


def active_session(db: Database, annotator_id: int, session_id: int) -> tuple[RoleplaySessionRow, StudyRow, StudyProfileRow]:
    """Like :func:`load_session`, refusing a session that is not in progress."""
    sess, study, sp = load_session(db, annotator_id, session_id)
    if sess.status != "active":
        raise Conflict("this session is not in progress", field="status")
    return sess, study, sp


def mark_started(s, session_id: int, run_id: str, interaction_id: str, minutes: int) -> None:
    """Start the clock of a session that has not started yet (no-op otherwise)."""
    now = utcnow()
    s.execute(
        update(RoleplaySessionRow)
        .where(RoleplaySessionRow.id == session_id, RoleplaySessionRow.status == "not_started")
        .values(status="active", run_id=run_id, interaction_id=interaction_id, started_at=now,
                deadline_at=now + timedelta(minutes=minutes))
    )


def finish_session(db: Database, sess: RoleplaySessionRow, **item: Any) -> int:
    """Mark an active session finished and store it as a rateable item; returns the item id."""
    with db.write() as s:
        res = s.execute(
            update(RoleplaySessionRow).where(RoleplaySessionRow.id == sess.id, RoleplaySessionRow.status == "active")
            .values(status="finished", finished_at=utcnow())
        )
        if res.rowcount != 1:
            raise Conflict("this session was already finished", field="status")
        row = ItemRow(external_id=f"roleplay:{sess.interaction_id}", source="roleplay", source_ref=sess.run_id,
                      patient_kind="human", **item)
        s.add(row)
        s.flush()
        s.execute(update(RoleplaySessionRow).where(RoleplaySessionRow.id == sess.id).values(item_id=row.id))
        RunStore.set_status(sess.interaction_id, "complete")(s)
        return row.id


def enqueue(db: Database, session_id: int, text: str) -> None:
    """Keep a patient message until the clinician has answered the previous one."""
    with db.write() as s:
        s.add(RoleplayQueueRow(session_id=session_id, text=text))


def queued(db: Database, session_id: int) -> list[str]:
    """The session's waiting messages, oldest first."""
    with db.read() as s:
        return list(s.scalars(select(RoleplayQueueRow.text).where(RoleplayQueueRow.session_id == session_id)
                              .order_by(RoleplayQueueRow.id)))


def n_queued(db: Database, session_id: int) -> int:
    with db.read() as s:
        return s.scalar(select(func.count()).select_from(RoleplayQueueRow)
                        .where(RoleplayQueueRow.session_id == session_id)) or 0


def dequeue_as_turn(db: Database, session_id: int, interaction_id: str, index: int) -> bool:
    """Make the oldest waiting message turn ``index``; ``False`` when none waits.

    The row is removed in the transaction that adds the turn: if the turn cannot be added
    (another writer took the index) the message stays queued.
    """
    with db.write() as s:
        row = s.scalar(select(RoleplayQueueRow).where(RoleplayQueueRow.session_id == session_id)
                       .order_by(RoleplayQueueRow.id).limit(1))
        if row is None:
            return False
        if s.execute(delete(RoleplayQueueRow).where(RoleplayQueueRow.id == row.id)).rowcount != 1:
            return False  # taken by another writer at the same moment
        RunStore.add_turn(interaction_id, Turn(index=index, role="patient", content=row.text, author="human",
                                               model=None))(s)
    return True
