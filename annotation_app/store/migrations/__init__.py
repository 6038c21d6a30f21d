"""Alembic migrations of the annotation platform, run programmatically (no alembic.ini).

:func:`upgrade` brings a database to ``head`` (or a given revision); the app and
the CLI call it on start, so a study database made by an older version is
upgraded in place. The version is kept in its own table
(``annotation_alembic_version``) so it never collides with other schemas.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine

from ..tables import VERSION_TABLE

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


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Apply migrations up to ``revision`` inside one transaction."""
    with engine.begin() as conn:
        command.upgrade(alembic_config(conn), revision)


def downgrade(engine: Engine, revision: str) -> None:
    with engine.begin() as conn:
        command.downgrade(alembic_config(conn), revision)


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        ctx = MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE})
        return ctx.get_current_revision()


def head_revision() -> str:
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None
    return head
