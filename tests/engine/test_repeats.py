"""`mindeval run --repeats N`: N conversations per profile, seeded apart, repeat 0 as without repeats,
resumable after SIGKILL with no call bought twice; the leaderboard keeps a profile's conversations together."""

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time

from mindeval.leaderboard import StatsSettings, build_leaderboard
from mindeval.seeds import turn_seed

ARGS = ["--patient", "fake/slow", "--clinician", "fake/slow", "--judge", "fake/judge", "--quiet",
        "--profiles", "demo", "--limit", "3", "--turns", "4", "--concurrency", "1"]


def query(db, sql):
    con = sqlite3.connect(db, timeout=5)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def count_turns(db):
    try:
        return query(db, "select count(*) from turns")[0][0]
    except sqlite3.Error:
        return 0


def turn_requests(db):
    """``interaction_id:turn`` -> (the seed sent, the key it derives from), for every stored turn call."""
    rows = query(db, "select tag, request_json from calls where status='ok' and role != 'judge'")
    return {tag: (req["seed"], req["seed_key"]) for tag, req in ((t, json.loads(r)) for t, r in rows)}


def without_run_id(seeds):
    """``position-profile[-rN]:turn`` -> the seed sent (the interaction id without its run id)."""
    return {tag.split("-", 3)[3]: seed for tag, (seed, _) in seeds.items()}


def test_repeats_seeded_resumable_and_pooled_per_profile(tmp_path):
    plain, rep = tmp_path / "plain", tmp_path / "rep"
    env = dict(os.environ)
    assert subprocess.run([sys.executable, "-m", "mindeval", "run", *ARGS, "--out", str(plain)], env=env,
                          capture_output=True, timeout=300).returncode == 0
    cmd = [sys.executable, "-m", "mindeval", "run", *ARGS, "--repeats", "2", "--out", str(rep)]
    db = rep / "run.db"
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    deadline = time.time() + 120
    while count_turns(db) < 12 and time.time() < deadline:  # inside the 3rd of 6 conversations
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    calls_before = query(db, "select count(*) from calls where status='ok'")[0][0]
    assert 12 <= count_turns(db) < 30, "the kill must land mid-run"
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr
    dup = query(db, "select request_hash from calls where status='ok' group by request_hash having count(*) > 1")
    total = query(db, "select count(*) from calls where status='ok'")[0][0]
    assert dup == [] and total == 6 * 4 + 6  # 3 profiles x 2 repeats: 4 turns and 1 judgment each
    summary = json.loads((rep / "summary.json").read_text())
    assert summary["calls_made"] == total - calls_before and summary["n_judged"] == 6
    config = json.loads((rep / "config.json").read_text())["config"]
    assert config["repeats"] == 2 and "repeats" not in json.loads((plain / "config.json").read_text())["config"]
    # Seeds derive from the conversation's key (target, profile, repeat, session), never the run id:
    # repeat 0 sends the seeds of the run without repeats (another run id), repeat 1 others.
    seeds_plain, seeds_rep = turn_requests(plain / "run.db"), turn_requests(db)
    for seeds in (seeds_plain, seeds_rep):
        assert all(seed == turn_seed(0, key, int(tag.rsplit(":", 1)[1])) for tag, (seed, key) in seeds.items())
        assert all(re.fullmatch(r"mindeval:[^:]+:r[01]:s1", key) for _, key in seeds.values())
    plain_seeds, rep_seeds = without_run_id(seeds_plain), without_run_id(seeds_rep)
    first = {k: v for k, v in rep_seeds.items() if "-r1" not in k}
    again = {k.replace("-r1", ""): v for k, v in rep_seeds.items() if "-r1" in k}
    assert first == plain_seeds
    assert len(again) == len(first) == 12 and all(again[k] != first[k] for k in first)
    # The leaderboard: 3 profiles of 2 conversations each, all scored.
    lb = build_leaderboard([rep], StatsSettings(seed=0))
    (row,) = lb.table.systems
    assert row.n == 3 and lb.coverage(row.label) == "6/6"
