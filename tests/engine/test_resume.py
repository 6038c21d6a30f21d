"""SIGKILL `mindeval run` mid-run, re-run: transcripts complete, prefix identical, no call repeated."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

ARGS = ["--patient", "fake/slow", "--clinician", "fake/slow", "--judge", "fake/judge", "--quiet",
        "--profiles", "demo", "--limit", "3", "--turns", "6", "--concurrency", "1"]


def count_turns(db):
    try:
        con = sqlite3.connect(db, timeout=5)
        n = con.execute("select count(*) from turns").fetchone()[0]
        con.close()
        return n
    except sqlite3.Error:
        return 0


def snapshot(db):
    con = sqlite3.connect(db)
    rows = con.execute("select interaction_id, idx, role, content from turns order by interaction_id, idx").fetchall()
    con.close()
    return rows


def test_sigkill_then_resume(tmp_path):
    out = tmp_path / "D"
    db = out / "run.db"
    cmd = [sys.executable, "-m", "mindeval", "run", *ARGS, "--out", str(out)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 120
    while count_turns(db) < 9 and time.time() < deadline:  # kill inside the 2nd interaction
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    before = snapshot(db)
    con = sqlite3.connect(db)
    calls_before = con.execute("select count(*) from calls where status='ok'").fetchone()[0]
    con.close()
    assert 9 <= len(before) < 21, "the kill must land mid-run"
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    after = snapshot(db)
    assert set(before) <= set(after)  # the completed prefix is kept as it was
    by_inter = {}
    for iid, idx, role, _ in after:
        by_inter.setdefault(iid, []).append((idx, role))
    assert len(by_inter) == 3
    for turns in by_inter.values():
        assert [i for i, _ in turns] == list(range(7))  # Hello + 6 turns, no gaps, no duplicates
    con = sqlite3.connect(db)
    dup = con.execute(
        "select request_hash, count(*) from calls where status='ok' group by request_hash having count(*) > 1"
    ).fetchall()
    total_calls = con.execute("select count(*) from calls where status='ok'").fetchone()[0]
    con.close()
    assert dup == [], "a stored call was made again"
    assert total_calls == 3 * 6 + 3
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_judged"] == 3
    # The second invocation paid only for calls that were not stored before the kill.
    assert summary["calls_made"] == total_calls - calls_before


def test_sweep_sigkill_then_resume(tmp_path):
    """A sweep killed mid-run resumes every run directory; no stored call is made again."""
    import yaml

    cfg = tmp_path / "sweep.yaml"
    out = tmp_path / "S"
    cfg.write_text(yaml.safe_dump({"patient": "fake/slow", "clinicians": ["fake/slow", "fake/echo:b"],
                                   "judge": "fake/judge", "profiles": "demo", "limit": 2, "turns": 4,
                                   "concurrency": 1, "out": str(out)}))
    cmd = [sys.executable, "-m", "mindeval", "run", "--config", str(cfg), "--quiet"]
    dbs = [out / "fake_slow" / "run.db", out / "fake_echo_b" / "run.db"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 120
    while sum(count_turns(db) for db in dbs if db.exists()) < 6 and time.time() < deadline:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert sum(count_turns(db) for db in dbs) < 2 * 2 * 5, "the kill must land mid-sweep"
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    for db in dbs:
        con = sqlite3.connect(db)
        dup = con.execute("select request_hash, count(*) from calls where status='ok' "
                          "group by request_hash having count(*) > 1").fetchall()
        n = con.execute("select count(*) from calls where status='ok'").fetchone()[0]
        con.close()
        assert dup == [] and n == 2 * 4 + 2
    assert (out / "_leaderboard" / "leaderboard.md").is_file()
