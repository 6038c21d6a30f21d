"""Guards of a run directory, so that no call is bought twice without a word.

- :func:`check_store`: a directory holding a run's outputs (``config.json``, ``interactions.jsonl``,
  ``judgments.jsonl``, ``summary.json``) is resumed from its store; when the store is missing, or
  holds no run of that ``config.json``, running again would buy every call again, so it is refused
  unless ``overwrite``.
- :func:`check_not_source`: a re-judged run is written beside its source, never over it.
- :func:`run_dir_lock`: one process per run directory; a second one is told which process holds it
  (:func:`mindeval.lockfile.lock_file`: pid, host and start time; a lock whose process is gone is
  taken over).

Light imports only: these checks run before any model library is loaded.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import MindEvalError
from .lockfile import lock_file

STORE_FILE = "run.db"
LOCK_FILE = ".mindeval.lock"
OUTPUT_FILES = ("config.json", "interactions.jsonl", "judgments.jsonl", "summary.json")
WHAT_TO_DO = "give --overwrite to run again and replace them, or a new --out"


def _sqlite_file(out: Path, db_url: str | None, store: str = STORE_FILE) -> Path | None:
    """The SQLite file of the store (None for another database)."""
    if db_url is None:
        return out / store
    if db_url.startswith("sqlite:///") and db_url != "sqlite:///:memory:":
        return Path(db_url.removeprefix("sqlite:///"))
    return None


def directory_runs(out: Path, db_url: str | None, record: str = "config.json") -> frozenset[str] | None:
    """The stored runs a run started in ``out`` may be taken for (resumed, or refused with a diff):
    every run of the store (None) when the store is the directory's own SQLite file; in a store
    other directories share (``--db`` elsewhere: PostgreSQL, or a SQLite file outside ``out``), only
    the run ``out``'s record names (none for a fresh directory): another directory's run of another
    configuration is never this directory's run."""
    f = _sqlite_file(out, db_url)
    if f is not None and f.resolve() == (out / STORE_FILE).resolve():
        return None
    run_id = _recorded_run(out / record)
    return frozenset({run_id} if run_id else ())


def _recorded_run(record: Path) -> str | None:
    try:
        data = json.loads(record.read_text(encoding="utf-8"))
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
    except sqlite3.OperationalError:  # no runs table: not a store of runs
        return False
    except sqlite3.DatabaseError as exc:  # a damaged file, or not a database at all
        raise MindEvalError(f"cannot open the store: {exc}; it is damaged or not a MindEval store", path=db) from None


def _server_has_run(db_url: str, run_id: str) -> bool:
    """Whether the database server at ``db_url`` (PostgreSQL, ...) holds run ``run_id``."""
    from sqlalchemy import inspect, text
    from sqlalchemy.exc import SQLAlchemyError

    from .store.db import make_engine, redact_url

    engine = make_engine(db_url)
    try:
        with engine.connect() as conn:
            if not inspect(conn).has_table("runs"):
                return False
            return conn.execute(text("select 1 from runs where id = :id"), {"id": run_id}).first() is not None
    except SQLAlchemyError as exc:
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        raise MindEvalError(f"cannot open database {redact_url(db_url)}: {reason}", field="--db") from None
    finally:
        engine.dispose()


def check_store(out: str | Path, db_url: str | None = None, *, overwrite: bool = False,
                outputs: tuple[str, ...] = OUTPUT_FILES, record: str = "config.json",
                store: str = STORE_FILE) -> None:
    """Refuse a directory whose outputs exist but whose store is missing or holds another run.

    ``outputs``: the files a finished run leaves in ``out``; ``record``: the one naming its
    ``run_id``; ``store``: the SQLite file in ``out`` when ``db_url`` is not given. A store on
    a database server (PostgreSQL) is asked for the recorded run.
    """
    out = Path(out)
    present = [name for name in outputs if (out / name).is_file()]
    if overwrite or not present:
        return
    run_id = _recorded_run(out / record)
    db = _sqlite_file(out, db_url, store)
    if db is None:
        if db_url and not db_url.startswith("sqlite") and run_id is not None and not _server_has_run(db_url, run_id):
            from .store.db import redact_url

            raise MindEvalError(f"its {record} is run {run_id}, which the store {redact_url(db_url)} does not hold "
                                f"(another database, or a store of another run?): running again would buy its "
                                f"calls again; {WHAT_TO_DO}", path=out)
        return
    if not db.is_file():
        raise MindEvalError(f"holds a run's outputs ({', '.join(present)}) but not its store {db.name}: running "
                            f"again would buy every model call again; {WHAT_TO_DO}", path=out)
    if run_id is not None and not _store_has_run(db, run_id):
        raise MindEvalError(f"its {record} is run {run_id}, which its store {db} does not hold (a store of "
                            f"another run?): running again would buy its calls again; {WHAT_TO_DO}", path=out)


def check_not_source(out: str | Path, source: str | Path) -> None:
    """``--out`` must not be the source run directory (its outputs would be replaced)."""
    if Path(out).resolve() == Path(source).resolve():
        raise MindEvalError(f"{out} is the source run directory: re-judging writes a new run directory "
                            "beside it; give another --out", field="--out")


@contextmanager
def run_dir_lock(out: str | Path, name: str = LOCK_FILE) -> Iterator[Path]:
    """Hold ``out``'s lock file ``name`` while a process writes the directory (:func:`lock_file`).

    A directory created here and still empty at the end is removed.
    """
    out = Path(out)
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    try:
        with lock_file(out / name, out, "in use by another run", "wait for it to finish or give another --out") as lock:
            yield lock
    finally:
        if created and out.is_dir() and not any(out.iterdir()):  # refused before anything was written
            out.rmdir()
