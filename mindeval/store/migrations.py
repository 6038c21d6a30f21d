"""Migrations of the run store: one ordered list and a version table (the only way its schema changes).

A new store is created at the head of :data:`MIGRATIONS`. A store is upgraded when it is
opened: every migration above its recorded version runs, in order, in one transaction, and
the version is written. A store newer than this code is refused. A store made before
versions were recorded (no ``run_schema_version`` table) is brought to version 1 by
:func:`_baseline`, which adds the nullable columns those stores gained one by one.

Openers of one store migrate one at a time (a PostgreSQL transaction lock, SQLite's
``BEGIN IMMEDIATE``): two processes starting on a new store never both create its tables.

To change the schema: change :mod:`mindeval.store.tables` and append a :class:`Migration`
whose ``apply`` makes the same change to an existing store.
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel, ConfigDict
from sqlalchemy import Connection, Engine, inspect, text

from ..errors import MindEvalError
from .tables import RunBase

VERSION_TABLE = "run_schema_version"

# Nullable columns the run tables gained before the schema had a version (stores made by
# older releases may lack any of them): table -> columns.
UNVERSIONED_COLUMNS: dict[str, tuple[str, ...]] = {
    "calls": ("response_text", "reasoning", "error", "cached_tokens", "cache_write_tokens", "cost_usd", "finish_reason"),
    "interactions": ("patient_model", "error"),
    "turns": ("reasoning", "model", "call_id"),
    "judgments": ("scores_json", "rationale", "round", "error", "nonce", "answer_channel", "answers_json"),
}


class Migration(BaseModel):
    """One numbered schema change of the run store."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    version: int
    summary: str
    apply: Callable[[Connection], None]


def _add_column(conn: Connection, table: str, column: str) -> None:
    col = RunBase.metadata.tables[table].columns[column]
    kind = col.type.compile(dialect=conn.dialect)
    conn.execute(text(f'ALTER TABLE {table} ADD COLUMN "{column}" {kind}'))


def _baseline(conn: Connection) -> None:
    """Version 1: the schema of the first versioned release (tables and columns a store may lack)."""
    RunBase.metadata.create_all(conn)
    insp = inspect(conn)
    for table, columns in UNVERSIONED_COLUMNS.items():
        have = {c["name"] for c in insp.get_columns(table)}
        for column in columns:
            if column not in have:
                _add_column(conn, table, column)


def _reply_judgments(conn: Connection) -> None:
    """Version 2: the per-reply judgments of reply-level targets (``unit: reply``)."""
    RunBase.metadata.tables["reply_judgments"].create(conn, checkfirst=True)


def _sessions(conn: Connection) -> None:
    """Version 3: the sessions of multi-session targets (``sessions: N``): memory and situation per session."""
    RunBase.metadata.tables["sessions"].create(conn, checkfirst=True)


def _corrections(conn: Connection) -> None:
    """Version 4: human corrections of judge values (append-only, with who, when, from, to, why)."""
    RunBase.metadata.tables["corrections"].create(conn, checkfirst=True)


def _judge_attempts(conn: Connection) -> None:
    """Version 5: every judge attempt on record (a refused round is kept, not replaced)."""
    RunBase.metadata.tables["judge_attempts"].create(conn, checkfirst=True)


def _who_source(conn: Connection) -> None:
    """Version 6: how a correction's reviewer is known (``who_source``; NULL for older rows)."""
    if "who_source" not in {c["name"] for c in inspect(conn).get_columns("corrections")}:
        _add_column(conn, "corrections", "who_source")


def _session_schedule(conn: Connection) -> None:
    """Version 7: a session's drawn schedule (target.yaml ``schedule:``; NULL for older rows)."""
    if "schedule" not in {c["name"] for c in inspect(conn).get_columns("sessions")}:
        _add_column(conn, "sessions", "schedule")


def _memory_dropped(conn: Connection) -> None:
    """Version 8: the entries a bounded memory log (``memory.max_entries``) left out, per session."""
    if "memory_dropped" not in {c["name"] for c in inspect(conn).get_columns("sessions")}:
        _add_column(conn, "sessions", "memory_dropped")


MIGRATIONS: tuple[Migration, ...] = (
    Migration(version=1, summary="baseline: run tables, unversioned nullable columns", apply=_baseline),
    Migration(version=2, summary="reply_judgments: one row per judged clinician reply", apply=_reply_judgments),
    Migration(version=3, summary="sessions: one row per session of a multi-session conversation", apply=_sessions),
    Migration(version=4, summary="corrections: human corrections of judge values with provenance", apply=_corrections),
    Migration(version=5, summary="judge_attempts: one row per judge attempt, refused rounds kept", apply=_judge_attempts),
    Migration(version=6, summary="corrections.who_source: self-declared, os-user or signed-in reviewer",
              apply=_who_source),
    Migration(version=7, summary="sessions.schedule: the session's seeded draws (target.yaml schedule)",
              apply=_session_schedule),
    Migration(version=8, summary="sessions.memory_dropped: entries a bounded memory log left out",
              apply=_memory_dropped),
)
HEAD = MIGRATIONS[-1].version
MIGRATION_LOCK = 0x6D696E64  # PostgreSQL advisory lock key of "a process is migrating this store"


def current_version(engine: Engine | Connection) -> int | None:
    """The recorded schema version; ``None`` for an empty or unversioned store."""
    conn_or_engine = engine
    if isinstance(conn_or_engine, Engine):
        with conn_or_engine.connect() as conn:
            return current_version(conn)
    conn = conn_or_engine
    if not inspect(conn).has_table(VERSION_TABLE):
        return None
    return conn.execute(text(f"SELECT version FROM {VERSION_TABLE}")).scalar()


def one_at_a_time(conn: Connection) -> None:
    """Hold the database's migration lock until the transaction ends (other openers wait): a
    PostgreSQL transaction advisory lock, SQLite's write lock (also used by the app's migrations)."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": MIGRATION_LOCK})
    elif conn.dialect.name == "sqlite" and conn.connection.dbapi_connection.in_transaction is False:
        conn.exec_driver_sql("BEGIN IMMEDIATE")  # the write lock now, not at the first CREATE


def upgrade(engine: Engine) -> int:
    """Bring the store to :data:`HEAD` (creating it when empty); return the version found before."""
    with engine.begin() as conn:
        one_at_a_time(conn)
        found = current_version(conn)
        if found is not None and found > HEAD:
            raise MindEvalError(
                f"the run store has schema version {found}, newer than this mindeval knows ({HEAD}); "
                "upgrade mindeval to open it"
            )
        if found == HEAD:
            return found
        if found is None and not inspect(conn).has_table("runs"):
            RunBase.metadata.create_all(conn)  # a new store starts at the head
        else:
            for migration in MIGRATIONS:
                if migration.version > (found or 0):
                    migration.apply(conn)
        conn.execute(text(f"CREATE TABLE IF NOT EXISTS {VERSION_TABLE} (version INTEGER NOT NULL)"))
        conn.execute(text(f"DELETE FROM {VERSION_TABLE}"))
        conn.execute(text(f"INSERT INTO {VERSION_TABLE} (version) VALUES (:v)"), {"v": HEAD})
    return found or 0
