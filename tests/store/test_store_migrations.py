"""The run store changes its schema one way: the ordered migrations of mindeval.store.migrations.

The fixture ``tests/fixtures/main_0ead889/run`` was made by ``mindeval run`` at commit 0ead889
(before the run store had a schema version): fake models, 2 demo profiles x 2 turns, 6 calls.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import threading
from pathlib import Path

import pytest
from sqlalchemy import inspect

from mindeval.cli import main
from mindeval.errors import MindEvalError
from mindeval.store.db import Database, sqlite_url
from mindeval.store.migrations import HEAD, MIGRATIONS, VERSION_TABLE, current_version
from mindeval.store.tables import RunBase

ROOT = Path(__file__).resolve().parents[2]
OLD_RUN = ROOT / "tests" / "fixtures" / "main_0ead889" / "run"
ARGS = ["--patient", "fake/echo", "--clinician", "fake/echo", "--judge", "fake/judge", "--profiles", "demo",
        "--limit", "2", "--turns", "2", "--quiet"]


def _copy(tmp_path: Path) -> Path:
    out = tmp_path / "old"
    shutil.copytree(OLD_RUN, out)
    return out


def _sql(db: Path, *stmts: str) -> list:
    with sqlite3.connect(db) as c:
        return [c.execute(s).fetchall() for s in stmts]


def test_the_migrations_are_numbered_in_order():
    assert [m.version for m in MIGRATIONS] == list(range(1, len(MIGRATIONS) + 1)) and HEAD == len(MIGRATIONS)


def test_a_run_made_by_main_0ead889_is_read_resumed_and_upgraded(tmp_path):
    out = _copy(tmp_path)
    db = out / "run.db"
    assert _sql(db, f"SELECT name FROM sqlite_master WHERE name = '{VERSION_TABLE}'") == [[]]  # unversioned
    before = json.loads((out / "summary.json").read_text())
    assert before["calls_made"] == 6
    assert main(["run", *ARGS, "--out", str(out)]) == 0
    after = json.loads((out / "summary.json").read_text())
    assert after["calls_made"] == 0 and after["n_complete"] == 2 and after["n_judged"] == 2
    assert after["means"] == before["means"]
    assert _sql(db, "SELECT count(*) FROM calls", "SELECT count(*) FROM runs") == [[(6,)], [(1,)]]
    assert current_version(Database(sqlite_url(db), create=False).engine) == HEAD


def test_an_unversioned_store_gains_the_columns_it_lacks(tmp_path):
    db = _copy(tmp_path) / "run.db"
    _sql(db, "ALTER TABLE judgments DROP COLUMN answers_json", "ALTER TABLE calls DROP COLUMN finish_reason")
    store = Database(sqlite_url(db))
    cols = {t: {c["name"] for c in inspect(store.engine).get_columns(t)} for t in ("judgments", "calls")}
    assert "answers_json" in cols["judgments"] and "finish_reason" in cols["calls"]
    assert current_version(store.engine) == HEAD
    assert _sql(db, "SELECT count(*) FROM judgments WHERE answers_json IS NULL") == [[(2,)]]  # rows kept


def test_a_new_store_starts_at_the_head_with_every_table(tmp_path):
    store = Database(sqlite_url(tmp_path / "new.db"))
    assert current_version(store.engine) == HEAD
    have = set(inspect(store.engine).get_table_names())
    assert set(RunBase.metadata.tables) | {VERSION_TABLE} == have
    Database(sqlite_url(tmp_path / "new.db"))  # opening again changes nothing
    assert _sql(tmp_path / "new.db", f"SELECT version FROM {VERSION_TABLE}") == [[(HEAD,)]]


def test_a_store_newer_than_the_code_is_refused(tmp_path):
    db = tmp_path / "new.db"
    Database(sqlite_url(db))
    _sql(db, f"UPDATE {VERSION_TABLE} SET version = {HEAD + 1}")
    with pytest.raises(MindEvalError, match=f"schema version {HEAD + 1}, newer than this mindeval knows"):
        Database(sqlite_url(db))


def test_no_schema_change_outside_the_migrations():
    """One way to change each schema: only the two migration homes alter tables."""
    homes = {ROOT / "mindeval" / "store" / "migrations.py", *(ROOT / "annotation_app" / "store" / "migrations").rglob("*.py")}
    offenders = [str(p.relative_to(ROOT)) for pkg in ("mindeval", "metaeval", "annotation_app")
                 for p in (ROOT / pkg).rglob("*.py")
                 if p not in homes and any(s in p.read_text(encoding="utf-8") for s in ("ALTER TABLE", "add_column("))]
    assert offenders == []


def test_openers_of_a_new_store_at_once_create_it_once(any_db_url):
    """Several processes starting on one new store (a shared --db) migrate it one at a time
    (before: 'table runs already exists' on SQLite, a pg_type UniqueViolation on PostgreSQL)."""
    import threading

    start, errors = threading.Barrier(4), []

    def open_store() -> None:
        start.wait()
        try:
            Database(any_db_url).close()
        except Exception as exc:  # noqa: BLE001 - any failure is the finding
            errors.append(f"{type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=open_store) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    db = Database(any_db_url, create=False)
    try:
        assert current_version(db.engine) == HEAD
        assert set(RunBase.metadata.tables) <= set(inspect(db.engine).get_table_names())
    finally:
        db.close()


def test_an_opener_waits_for_a_lock_held_on_a_store_not_yet_in_wal_mode(tmp_path):
    """SQLite refuses ``PRAGMA journal_mode=WAL`` at once ("database is locked", no busy timeout)
    while another connection holds a write lock on a store still in rollback mode: the opener
    waits for the lock instead of failing (seen as a flaky 'cannot open database' under load)."""
    from mindeval.store.db import make_engine

    path = tmp_path / "store.db"
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("CREATE TABLE t (a)")
    released = threading.Timer(0.3, lambda: holder.execute("COMMIT"))
    released.start()
    try:
        engine = make_engine(f"sqlite:///{path}")
        with engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        engine.dispose()
    finally:
        released.join()
        holder.close()


NEW_RUN = ROOT / "tests" / "fixtures" / "main_665ffb1" / "run"


def test_a_run_made_by_main_665ffb1_upgrades_to_sessions_and_its_files_stay_byte_identical(tmp_path):
    """Schema version 2 (main 665ffb1, before sessions) gains the sessions table; a single-session
    run resumes with no call and rewrites its interactions and judgments byte for byte."""
    out = tmp_path / "v2"
    shutil.copytree(NEW_RUN, out)
    db = out / "run.db"
    assert _sql(db, f"SELECT version FROM {VERSION_TABLE}") == [[(2,)]]
    files = {f: (out / f).read_bytes() for f in ("interactions.jsonl", "judgments.jsonl")}
    before = json.loads((out / "summary.json").read_text())
    assert main(["run", *ARGS, "--out", str(out)]) == 0
    after = json.loads((out / "summary.json").read_text())
    assert after["calls_made"] == 0 and after["means"] == before["means"]
    assert {f: (out / f).read_bytes() for f in files} == files
    new = ("n_judge_rounds", "n_refused_rounds", "n_retried_judgments", "n_judge_attempts")  # counted since v5
    skip = ("calls_made", "calls_reused", "elapsed_s", "resumed", *new)
    assert {k: v for k, v in after.items() if k not in skip} == {k: v for k, v in before.items() if k not in skip}
    assert after["n_refused_rounds"] == after["n_failed_judgments"] == 0
    assert after["n_judge_rounds"] == after["n_judged"] and after["n_judge_attempts"] >= after["n_judged"]
    assert current_version(Database(sqlite_url(db), create=False).engine) == HEAD == 8
    assert "schedule" in {c["name"] for c in inspect(Database(sqlite_url(db), create=False).engine)
                          .get_columns("sessions")}  # version 7: a session's drawn schedule
    assert "judge_attempts" in inspect(Database(sqlite_url(db), create=False).engine).get_table_names()
    assert "sessions" in inspect(Database(sqlite_url(db), create=False).engine).get_table_names()
    assert _sql(db, "SELECT count(*) FROM sessions") == [[(0,)]]  # one session: no session rows


MAIN_665 = ROOT / "tests" / "fixtures" / "main_665ffb1" / "corr_run"  # made by `mindeval run` at main 665ffb1


def test_a_store_made_by_main_665ffb1_upgrades_and_takes_corrections(tmp_path):
    """Version 2 (main 665ffb1: no corrections table) upgrades in place; rows kept; a correction is stored."""
    from mindeval.corrections import CorrectionRequest, correct, run_corrections

    out = tmp_path / "run"
    shutil.copytree(MAIN_665, out)
    db = out / "run.db"
    assert _sql(db, f"SELECT version FROM {VERSION_TABLE}", "SELECT name FROM sqlite_master WHERE name = 'corrections'") \
        == [[(2,)], []]
    judged = _sql(db, "SELECT * FROM judgments ORDER BY id")
    assert run_corrections(out) == []  # read without upgrading: an old store has none
    assert _sql(db, f"SELECT version FROM {VERSION_TABLE}") == [[(2,)]]
    iid = json.loads((out / "judgments.jsonl").read_text().splitlines()[0])["interaction_id"]
    [c] = correct(out, CorrectionRequest(interaction_id=iid, axis="AR", to="6", reason="r", who="w"))
    assert _sql(db, f"SELECT version FROM {VERSION_TABLE}") == [[(HEAD,)]]
    assert _sql(db, "SELECT * FROM judgments ORDER BY id") == judged
    assert _sql(db, "SELECT interaction_id, axis, reason, who FROM corrections") == [[(iid, "AR", "r", "w")]]
    assert [x.id for x in run_corrections(out)] == [c.id]


def test_a_version_7_store_with_sessions_upgrades_to_memory_dropped_and_its_files_stay_byte_identical(tmp_path):
    """Version 8 adds ``sessions.memory_dropped`` (a bounded memory log): a 2-session run stored
    before it (the column dropped, version 7 recorded) upgrades, resumes with no call, its session
    rows read back (no count: NULL) and its interactions rewrite byte for byte."""
    out = tmp_path / "v6"
    args = ["run", "--target", "reply_safety", "--patient", "fake/echo", "--clinician", "fake/echo",
            "--judge", "fake/judge", "--limit", "1", "--turns", "2", "--quiet", "--out", str(out)]
    assert main(args) == 0
    db = out / "run.db"
    _sql(db, "ALTER TABLE sessions DROP COLUMN memory_dropped", f"UPDATE {VERSION_TABLE} SET version = 7")
    files = {f: (out / f).read_bytes() for f in ("interactions.jsonl", "judgments.jsonl")}
    assert b"memory_dropped" not in files["interactions.jsonl"]
    assert main(args) == 0
    assert json.loads((out / "summary.json").read_text())["calls_made"] == 0
    assert {f: (out / f).read_bytes() for f in files} == files
    assert _sql(db, f"SELECT version FROM {VERSION_TABLE}", "SELECT memory_dropped FROM sessions") \
        == [[(HEAD,)], [(None,), (None,)]]
