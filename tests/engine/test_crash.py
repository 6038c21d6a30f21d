"""SIGKILL `mindeval run` at 20 random moments against a local server: no completed call is
ever sent again, and the transcripts equal those of an uninterrupted run."""

import hashlib
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from tests.support.fault_server import FaultServer

ROLES = ("patient", "clinician", "judge")
KILLS = 20


def command(url, out):
    cmd = [sys.executable, "-m", "mindeval", "run", "--quiet", "--profiles", "demo", "--limit", "4",
           "--turns", "6", "--concurrency", "2", "--out", str(out)]
    for r in ROLES:
        cmd += [f"--{r}", f"openai/{r}-model", f"--{r}-api-base", url]
    return cmd


def request_key(body):
    """What identifies a call on the wire: its seed (unique per turn) and, for the judge, its messages."""
    seed = body.get("seed")
    if "judge" in str(body.get("model")):
        return ("judge", seed, hashlib.sha256(json.dumps(body["messages"], sort_keys=True).encode()).hexdigest())
    return ("turn", seed)


def committed_keys(db):
    """Keys of the calls the store has committed as answered."""
    if not db.exists():
        return set()
    con = sqlite3.connect(db, timeout=30)
    try:
        rows = con.execute("select role, request_json from calls where status = 'ok'").fetchall()
    except sqlite3.OperationalError:  # killed before the tables existed
        return set()
    finally:
        con.close()
    keys = set()
    for role, req in rows:
        req = json.loads(req)
        if role == "judge":
            keys.add(("judge", req["seed"],
                      hashlib.sha256(json.dumps(req["messages"], sort_keys=True).encode()).hexdigest()))
        else:
            keys.add(("turn", req["seed"]))
    return keys


def transcripts(out):
    rows = [json.loads(x) for x in (out / "interactions.jsonl").read_text().splitlines()]
    return {r["profile_id"]: r["messages"] for r in rows}


def scores(out):
    rows = [json.loads(x) for x in (out / "judgments.jsonl").read_text().splitlines()]
    return {r["profile_id"]: r["scores"] for r in rows}


@pytest.mark.slow
def test_sigkill_at_random_moments_repeats_no_completed_call(tmp_path):
    env = {**os.environ, "OPENAI_API_KEY": "sk-crash-test"}
    rng = random.Random(20)
    with FaultServer(latency_s=0.08) as srv:
        clean = tmp_path / "clean"
        assert subprocess.run(command(srv.url, clean), env=env, capture_output=True, timeout=300).returncode == 0
        clean_requests = srv.count()
        assert clean_requests == 4 * 6 + 4

        out = tmp_path / "crashed"
        db = out / "run.db"
        landed_mid_run = 0
        for _ in range(KILLS):
            committed = committed_keys(db)
            seen = srv.count()
            proc = subprocess.Popen(command(srv.url, out), env=env, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
            if rng.random() < 0.2:  # sometimes during start-up
                time.sleep(rng.uniform(0.0, 1.5))
            else:  # mostly while calls are in flight
                deadline = time.time() + 60
                while srv.count() == seen and proc.poll() is None and time.time() < deadline:
                    time.sleep(0.005)
                time.sleep(rng.uniform(0.0, 0.4))
            landed_mid_run += proc.poll() is None
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            again = [request_key(r["body"]) for r in srv.requests[seen:]]
            assert not committed & set(again), "a call committed before the kill was sent again"
            assert len(again) == len(set(again))
        committed = committed_keys(db)
        seen = srv.count()
        r = subprocess.run(command(srv.url, out), env=env, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stdout + r.stderr
        assert not committed & {request_key(q["body"]) for q in srv.requests[seen:]}
        # every call the run needed was answered once, plus at most the in-flight ones lost at each kill
        assert srv.count() - clean_requests >= 4 * 6 + 4
        assert landed_mid_run >= KILLS // 2
    assert transcripts(out) == transcripts(clean)
    assert scores(out) == scores(clean)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_judged"] == 4 and summary["failures"] == []
