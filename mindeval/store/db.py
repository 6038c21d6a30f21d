"""Opening the run store: any SQLAlchemy URL, SQLite by default.

SQLite connections use WAL and a busy timeout. Benchmark runs write through one
writer thread (:class:`mindeval.store.runs.Writer`); :meth:`Database.write` is the
blocking path of the annotation app, serialised within the process by a lock.
Columns added to the run tables since a store was created are added on open.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Engine, create_engine, event, inspect, text
from sqlalchemy.exc import ArgumentError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from ..errors import MindEvalError
from .tables import RunBase


def sqlite_url(path: str | Path) -> str:
    return f"sqlite:///{Path(path).resolve()}"


def make_engine(url: str) -> Engine:
    """Create an engine for ``url``; a bad URL is a clear :class:`MindEvalError`."""
    try:
        if url.startswith("sqlite"):
            engine = create_engine(
                url, connect_args={"check_same_thread": False, "timeout": 60}, future=True
            )

            @event.listens_for(engine, "connect")
            def _pragmas(dbapi_conn, _record):  # pragma: no cover - trivial
                cur = dbapi_conn.cursor()
                cur.execute("PRAGMA journal_mode=WAL")
                cur.execute("PRAGMA synchronous=NORMAL")
                cur.execute("PRAGMA foreign_keys=ON")
                cur.close()

            return engine
        return create_engine(url, pool_pre_ping=True, future=True)
    except (ArgumentError, ModuleNotFoundError) as exc:
        raise MindEvalError(f"cannot use database URL {redact_url(url)!r}: {exc}") from None


def redact_url(url: str) -> str:
    """Hide a password in a database URL before it is printed or stored."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return "<database url>"


def add_missing_columns(engine: Engine) -> None:
    """Add nullable columns the run tables gained since this store was created."""
    insp = inspect(engine)
    for table in RunBase.metadata.sorted_tables:
        have = {c["name"] for c in insp.get_columns(table.name)}
        for col in table.columns:
            if col.name not in have and col.nullable:
                kind = col.type.compile(dialect=engine.dialect)
                with engine.begin() as conn:
                    conn.execute(text(f'ALTER TABLE {table.name} ADD COLUMN "{col.name}" {kind}'))


class Database:
    """An engine, a session factory and a write lock."""

    def __init__(self, url: str, *, create: bool = True) -> None:
        self.url = url
        self.engine = make_engine(url)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        self.write_lock = threading.RLock()
        if create:
            try:
                RunBase.metadata.create_all(self.engine)
                add_missing_columns(self.engine)
            except OperationalError as exc:
                raise MindEvalError(
                    f"cannot open database {redact_url(url)}: {exc.orig}"
                ) from None

    def session(self) -> Session:
        """A plain session (the writer thread commits it itself)."""
        return self._sessions()

    @contextmanager
    def read(self) -> Iterator[Session]:
        with self._sessions() as session:
            yield session

    @contextmanager
    def write(self) -> Iterator[Session]:
        """A session whose changes are committed on exit (under the write lock)."""
        with self.write_lock, self._sessions() as session:
            try:
                yield session
                session.commit()
            except BaseException:
                session.rollback()
                raise

    def close(self) -> None:
        self.engine.dispose()
