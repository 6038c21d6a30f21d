"""Alembic migrations of the annotation platform, run programmatically (no alembic.ini).

:func:`upgrade` brings a database to ``head`` (or a given revision); the app and
the CLI call it on start, so a study database made by an older version is
upgraded in place. The version is kept in its own table
(``annotation_alembic_version``) so it never collides with other schemas.

Several app processes started together on one database (``mindeval app serve``) upgrade it
once: each takes the database's migration lock first (a PostgreSQL advisory lock, SQLite's
write lock; :func:`mindeval.store.migrations.one_at_a_time`), and the ones that follow find
it at ``head``. Each upgrade that changes the revision adds a row to ``ann_migration_log``.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, insert, inspect

from mindeval.store.migrations import one_at_a_time

from ..tables import VERSION_TABLE, MigrationLogRow, utcnow

HERE = Path(__file__).resolve().parent


def include_object(obj, name, type_, reflected, compare_to) -> bool:
    """Only the annotation platform's tables (``ann_*``) belong to these migrations."""
    table = name if type_ == "table" else getattr(getattr(obj, "table", None), "name", "")
    return str(table).startswith("ann_")


def alembic_config(connection=None) -> Config:
    """An in-memory Alembic config pointing at this folder (and an open connection)."""
    cfg = Config()
    cfg.set_main_option("script_location", str(HERE))
    cfg.set_main_option("path_separator", "os")
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


def _revision(conn: Connection) -> str | None:
    return MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE}).get_current_revision()


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Apply migrations up to ``revision`` inside one transaction, one process at a time."""
    with engine.begin() as conn:
        one_at_a_time(conn)
        before = _revision(conn)
        command.upgrade(alembic_config(conn), revision)
        after = _revision(conn)
        if after != before and after is not None and inspect(conn).has_table(MigrationLogRow.__tablename__):
            conn.execute(insert(MigrationLogRow).values(
                from_revision=before, to_revision=after, at=utcnow(),
                by=f"pid {os.getpid()} on {socket.gethostname()}"[:120]))


def downgrade(engine: Engine, revision: str) -> None:
    with engine.begin() as conn:
        command.downgrade(alembic_config(conn), revision)


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return _revision(conn)


def head_revision() -> str:
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None
    return head
