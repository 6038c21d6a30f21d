"""Opening the run store: any SQLAlchemy URL, SQLite by default.

SQLite connections use WAL and a busy timeout. Benchmark runs write through one
writer thread (:class:`mindeval.store.runs.Writer`); :meth:`Database.write` is the
blocking path of the annotation app, serialised within the process by a lock.
Opening with ``create=True`` creates a new store or upgrades an older one through the
run store's one list of migrations (:mod:`mindeval.store.migrations`).
:meth:`Database.claim` holds one run for this process until :meth:`Database.close`
(:mod:`mindeval.store.claim`).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.exc import ArgumentError, DatabaseError
from sqlalchemy.orm import Session, sessionmaker

from ..errors import MindEvalError
from .migrations import upgrade


def sqlite_url(path: str | Path) -> str:
    return f"sqlite:///{Path(path).resolve()}"


def _wal(cur: Any) -> None:
    """``PRAGMA journal_mode=WAL``, waited for: SQLite answers "database is locked" at once, without
    its busy timeout, when another opener holds a lock on a store that is not yet in WAL mode."""
    for attempt in range(200):
        try:
            cur.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or attempt == 199:
                raise
            time.sleep(min(0.5, 0.005 * 2 ** attempt))  # backoff: at most ~90 s in all


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
                _wal(cur)
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


def check_intact(engine: Engine) -> None:
    """Raise :class:`DatabaseError` when a SQLite file is damaged or not a database (SQLite's own
    ``quick_check``, which reads every page); other servers check their own storage."""
    if engine.dialect.name != "sqlite":
        return
    with engine.connect() as conn:
        found = conn.execute(text("PRAGMA quick_check(1)")).scalar()
    if found != "ok":
        raise DatabaseError("PRAGMA quick_check", None, sqlite3.DatabaseError(str(found)))


class Database:
    """An engine, a session factory and a write lock."""

    def __init__(self, url: str, *, create: bool = True) -> None:
        self.url = url
        self.engine = make_engine(url)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        self.write_lock = threading.RLock()
        self._claims = ExitStack()
        try:
            if create:
                upgrade(self.engine)
            check_intact(self.engine)
        except DatabaseError as exc:  # a damaged file, or a file that is not a database at all
            raise MindEvalError(f"cannot open database {redact_url(url)}: {exc.orig}; "
                                "it is damaged or not a MindEval store") from None

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

    def claim(self, run_id: str) -> None:
        """Hold run ``run_id`` until :meth:`close`; another process holding it is a clear error."""
        from .claim import claim_run

        self._claims.enter_context(claim_run(self.engine, run_id, redact_url(self.url)))

    def close(self) -> None:
        try:
            self._claims.close()
        finally:
            self.engine.dispose()
