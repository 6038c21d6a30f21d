"""One process per run of a store: a second process resuming the same run is refused with one
line naming the process that holds it (two writers of one run would buy its calls twice and
collide on its rows).

- PostgreSQL: a session advisory lock keyed by the run id, on a connection of its own whose
  ``application_name`` names the holder (pid, host); the server frees it when that process
  ends, however it ends.
- SQLite (a file): a lock file beside the database, ``.<file>.<run id>.lock``
  (:func:`mindeval.lockfile.lock_file`: pid, host, start; a dead holder's lock is taken over).
- In-memory SQLite and other databases: not claimed.
"""

from __future__ import annotations

import hashlib
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Engine, text

from ..errors import MindEvalError
from ..lockfile import lock_file

RUN_LOCKS = 0x6D72756E  # advisory lock namespace (first key) of MindEval runs
HOLDER = ("SELECT a.application_name, a.backend_start FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
          "WHERE l.locktype = 'advisory' AND l.granted AND l.classid = :ns AND l.objid = :key AND l.objsubid = 2 "
          "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())")
HINT = "wait for it to finish, or give --new-run to start a separate run"


def _key(run_id: str) -> int:
    return int.from_bytes(hashlib.sha256(run_id.encode()).digest()[:4], "big") & 0x7FFFFFFF


def _busy(run_id: str) -> str:
    return f"run {run_id} is in use by another process"


@contextmanager
def _postgres(engine: Engine, run_id: str, where: str) -> Iterator[None]:
    key = {"ns": RUN_LOCKS, "key": _key(run_id)}
    conn = engine.connect().execution_options(isolation_level="AUTOCOMMIT")
    try:
        me = f"mindeval pid {os.getpid()} on {socket.gethostname()}"[:63]
        conn.execute(text("SELECT set_config('application_name', :me, false)"), {"me": me})
        if not conn.execute(text("SELECT pg_try_advisory_lock(:ns, :key)"), key).scalar():
            row = conn.execute(text(HOLDER), key).first()
            who = (f"{row[0].removeprefix('mindeval ') or 'a session'} since {row[1]:%Y-%m-%dT%H:%M:%S%z}"
                   if row else "a session that has just ended")
            raise MindEvalError(f"{_busy(run_id)}: {who}; {HINT}", path=where)
        try:
            yield
        finally:
            conn.execute(text("SELECT pg_advisory_unlock(:ns, :key)"), key)
    finally:
        conn.close()


@contextmanager
def claim_run(engine: Engine, run_id: str, where: str) -> Iterator[None]:
    """Hold run ``run_id`` of the store behind ``engine`` (``where``: the store as shown to users)."""
    url = engine.url
    if url.get_backend_name() == "postgresql":
        with _postgres(engine, run_id, where):
            yield
        return
    if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:"):
        db = Path(url.database)
        with lock_file(db.parent / f".{db.name}.{run_id}.lock", where, _busy(run_id), HINT):
            yield
        return
    yield
