"""Which form actions were applied: the highest ``seq`` per (person, browser tab), in the database.

A form's Submit (or step) carries its tab's ``(tab, seq)``; a browser re-sends it when it saw no
answer, possibly to another app process after the first one died. :func:`first_time` claims the
action in one statement (insert, or raise ``seq`` only if it grows), so of any number of processes
exactly one applies a given ``(tab, seq)``, and none applies an earlier one afterwards.
"""

from __future__ import annotations

from sqlalchemy.dialects import postgresql, sqlite

from mindeval.store.db import Database

from .tables import FormActionRow


def first_time(db: Database, user_id: int, tab: str, seq: int) -> bool:
    """``True`` once for action ``seq`` of ``user_id``'s tab ``tab``; ``False`` for it and every
    earlier one afterwards, whichever process asks."""
    dialect = postgresql if db.engine.dialect.name == "postgresql" else sqlite
    table = FormActionRow.__table__
    stmt = dialect.insert(table).values(user_id=user_id, tab=tab, seq=seq)
    stmt = stmt.on_conflict_do_update(
        index_elements=[table.c.user_id, table.c.tab], set_={"seq": stmt.excluded.seq},
        where=table.c.seq < stmt.excluded.seq,
    ).returning(table.c.seq)
    with db.write() as s:
        return s.execute(stmt).first() is not None
