"""Which form actions were applied: the highest ``seq`` per (person, browser tab), in the database.

A form's change, Submit or step carries its tab's ``(tab, seq)``; a browser re-sends it when it saw
no answer, possibly to another app process after the first one died. The page applies an action
only while :func:`is_new` says no process has recorded it, and records it with :func:`mark` once it
is stored: a process that dies before that leaves the action to the next one (nothing lost), and
once recorded every process refuses it and every earlier one of that tab.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite

from mindeval.store.db import Database

from .tables import FormActionRow


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
