"""Guards of a run directory, so that no call is bought twice without a word.

- :func:`check_store`: a directory holding a run's outputs (``config.json``, ``interactions.jsonl``,
  ``judgments.jsonl``, ``summary.json``) is resumed from its store; when the store is missing, or
  holds no run of that ``config.json``, running again would buy every call again, so it is refused
  unless ``overwrite``.
- :func:`check_not_source`: a re-judged run is written beside its source, never over it.
- :func:`run_dir_lock`: one process per run directory; a second one is told which process holds it
  (a lock file with pid, host and start time; a lock whose process is gone is taken over).

Light imports only: these checks run before any model library is loaded.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

from .errors import MindEvalError

STORE_FILE = "run.db"
LOCK_FILE = ".mindeval.lock"
OUTPUT_FILES = ("config.json", "interactions.jsonl", "judgments.jsonl", "summary.json")
WHAT_TO_DO = "give --overwrite to run again and replace them, or a new --out"


def _sqlite_file(out: Path, db_url: str | None) -> Path | None:
    """The SQLite file of the store (None for another database)."""
    if db_url is None:
        return out / STORE_FILE
    if db_url.startswith("sqlite:///") and db_url != "sqlite:///:memory:":
        return Path(db_url.removeprefix("sqlite:///"))
    return None


def _recorded_run(out: Path) -> str | None:
    try:
        data = json.loads((out / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    run_id = data.get("run_id") if isinstance(data, dict) else None
    return run_id if isinstance(run_id, str) else None


def _store_has_run(db: Path, run_id: str) -> bool:
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            return con.execute("select 1 from runs where id = ?", (run_id,)).fetchone() is not None
        finally:
            con.close()
    except sqlite3.Error:
        return False


def check_store(out: str | Path, db_url: str | None = None, *, overwrite: bool = False) -> None:
    """Refuse a directory whose outputs exist but whose store is missing or holds another run."""
    out = Path(out)
    present = [name for name in OUTPUT_FILES if (out / name).is_file()]
    if overwrite or not present:
        return
    db = _sqlite_file(out, db_url)
    if db is None:  # another database: its run is found (or refused) by its configuration
        return
    run_id = _recorded_run(out)
    if not db.is_file():
        raise MindEvalError(f"holds a run's outputs ({', '.join(present)}) but not its store {db.name}: running "
                            f"again would buy every model call again; {WHAT_TO_DO}", path=out)
    if run_id is not None and not _store_has_run(db, run_id):
        raise MindEvalError(f"its config.json is run {run_id}, which its store {db} does not hold (a store of "
                            f"another run?): running again would buy its calls again; {WHAT_TO_DO}", path=out)


def check_not_source(out: str | Path, source: str | Path) -> None:
    """``--out`` must not be the source run directory (its outputs would be replaced)."""
    if Path(out).resolve() == Path(source).resolve():
        raise MindEvalError(f"{out} is the source run directory: re-judging writes a new run directory "
                            "beside it; give another --out", field="--out")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _holder(lock: Path) -> dict | None:
    try:
        data = json.loads(lock.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


@contextmanager
def run_dir_lock(out: str | Path) -> Iterator[Path]:
    """Hold ``out``'s lock file while a process writes the directory.

    Another live process holding it is an error naming it; a lock left by a process that is
    gone (same host, pid not running) is taken over with a note on stderr. A directory created
    here and still empty at the end is removed.
    """
    out = Path(out)
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    lock = out / LOCK_FILE
    me = {"pid": os.getpid(), "host": socket.gethostname(),
          "started": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    for _ in range(2):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            held = _holder(lock) or {}
            pid, host = held.get("pid"), held.get("host")
            if host == me["host"] and isinstance(pid, int) and not _alive(pid):
                print(f"note: {lock}: taking over the lock of pid {pid} (no longer running)", file=sys.stderr)
                lock.unlink(missing_ok=True)
                continue
            raise MindEvalError(f"in use by another run: pid {pid} on {host} since {held.get('started')}; wait "
                                f"for it to finish or give another --out (if it is not running, delete {lock})",
                                path=out) from None
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(me, f)
        break
    else:
        raise MindEvalError(f"cannot take the lock {lock}; delete it if no run is using this directory", path=out)
    try:
        yield lock
    finally:
        if (_holder(lock) or {}).get("pid") == me["pid"]:
            lock.unlink(missing_ok=True)
        if created and not any(out.iterdir()):  # refused before anything was written: leave no trace
            out.rmdir()
