"""Which form actions were applied: the highest ``seq`` per (person, browser tab), in the database.

A form's change, Submit or step carries its tab's ``(tab, seq)``; a browser re-sends it when it saw
no answer, possibly to another app process after the first one died. The page applies an action
only while :func:`is_new` says no process has recorded it, and records it with :func:`mark` once it
is stored: a process that dies before that leaves the action to the next one (nothing lost), and
once recorded every process refuses it and every earlier one of that tab.

Which rating versions each state wrote is recorded too (:func:`wrote`): a state re-sent to another
process (after a reconnect or a reload) is based on the version its form showed, moved past the
versions its own tab wrote since (:func:`writes_after`), and refused only for another tab's.
"""

from __future__ import annotations

from sqlalchemy import delete, select
from sqlalchemy.dialects import postgresql, sqlite

from mindeval.store.db import Database

from .ratings import owned_assignment
from .tables import FormActionRow, FormWriteRow

KEEP_VERSIONS = 200  # per rating, how far back the record of its writers reaches


def is_new(db: Database, user_id: int, tab: str, seq: int) -> bool:
    """Whether no process has recorded action ``seq`` (or a later one) of ``user_id``'s tab ``tab``."""
    with db.read() as s:
        done = s.scalar(select(FormActionRow.seq).where(FormActionRow.user_id == user_id, FormActionRow.tab == tab))
    return done is None or seq > done


def mark(db: Database, user_id: int, tab: str, seq: int) -> None:
    """Record action ``seq`` of the tab applied (the stored ``seq`` only grows), in one statement."""
    dialect = postgresql if db.engine.dialect.name == "postgresql" else sqlite
    table = FormActionRow.__table__
    stmt = dialect.insert(table).values(user_id=user_id, tab=tab, seq=seq)
    stmt = stmt.on_conflict_do_update(index_elements=[table.c.user_id, table.c.tab], set_={"seq": stmt.excluded.seq},
                                      where=table.c.seq < stmt.excluded.seq)
    with db.write() as s:
        s.execute(stmt)


def wrote(db: Database, user_id: int, assignment_id: int, versions: tuple[int, int], tab: str, seq: int) -> None:
    """Record that state ``seq`` of ``user_id``'s tab ``tab`` wrote versions ``versions`` (first,
    last) of her rating ``assignment_id``."""
    first, last = versions
    with db.write() as s:
        owned_assignment(s, user_id, assignment_id)
        s.execute(delete(FormWriteRow).where(FormWriteRow.assignment_id == assignment_id,
                                             FormWriteRow.last_version < first - KEEP_VERSIONS))
        if s.get(FormWriteRow, (assignment_id, first)) is None:
            s.add(FormWriteRow(assignment_id=assignment_id, first_version=first, last_version=last, tab=tab, seq=seq))


def writes_after(db: Database, user_id: int, assignment_id: int, version: int) -> list[tuple[int, int, str, int]]:
    """``(first, last, tab, seq)`` of the recorded writes of ``user_id``'s rating ``assignment_id``
    after ``version``, in order."""
    with db.read() as s:
        owned_assignment(s, user_id, assignment_id)
        rows = s.execute(select(FormWriteRow.first_version, FormWriteRow.last_version, FormWriteRow.tab, FormWriteRow.seq)
                         .where(FormWriteRow.assignment_id == assignment_id, FormWriteRow.first_version > version)
                         .order_by(FormWriteRow.first_version))
        return [tuple(r) for r in rows]
