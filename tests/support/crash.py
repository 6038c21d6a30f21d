"""Kill-and-resume helpers of the crash tests: SIGKILL a ``mindeval run`` subprocess while a chosen
call is in flight at a loopback :class:`~tests.support.fault_server.FaultServer`, then check the
re-run sent no call the store had committed (tests/core/test_sessions_crash.py,
tests/targets/test_checkins_e2e.py)."""

from __future__ import annotations

import hashlib
import json
import signal
import sqlite3
import subprocess
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from tests.support.fault_server import FaultServer

ROOT = Path(__file__).resolve().parents[2]
Key = tuple[str, int | None, str]


def _key(model: str, seed: int | None, messages: list | None) -> Key:
    """A call: the judge's by its messages (every judge call has the run's seed), any other by its
    seed (unique per turn, notes call and next-session call)."""
    model = model.removeprefix("openai/")
    if "judge" in model:
        return (model, None, hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest())
    return (model, seed, "")


def key(body: dict) -> Key:
    """The :func:`_key` of a request body as the server received it."""
    return _key(str(body.get("model")), body.get("seed"), body["messages"])


def committed(db: Path) -> set[Key]:
    """The calls the store has committed as answered."""
    if not db.exists():
        return set()
    con = sqlite3.connect(db, timeout=30)
    try:
        rows = con.execute("select model, request_json from calls where status = 'ok'").fetchall()
    except sqlite3.OperationalError:
        return set()
    finally:
        con.close()
    return {_key(m, (req := json.loads(r)).get("seed"), req.get("messages")) for m, r in rows}


def results(out: Path) -> tuple[list, list]:
    """A run's conversations (sessions without their call ids, the member without the run id) and
    judgments: what an interrupted and an uninterrupted run must agree on."""
    rows = [json.loads(x) for x in (out / "interactions.jsonl").read_text().splitlines()]
    conv = [(r["profile_id"], r["messages"], {k: v for k, v in r["session"].items() if not k.endswith("call_id")}
             | {"member": r["session"]["member"].split("-", 3)[-1]}) for r in rows]
    judged = [(json.loads(x)["scores"], json.loads(x)["replies"]) for x in (out / "judgments.jsonl").read_text()
              .splitlines()]
    return conv, judged


def stored_calls(db: Path) -> tuple[list, int]:
    """The request hashes answered more than once, and the number of answered calls."""
    con = sqlite3.connect(db)
    try:
        dup = con.execute("select request_hash from calls where status = 'ok' group by request_hash "
                          "having count(*) > 1").fetchall()
        made = con.execute("select count(*) from calls where status = 'ok'").fetchone()[0]
    finally:
        con.close()
    return dup, made


def kill_at_each(srv: FaultServer, command: list[str], out: Path, env: Mapping[str, str],
                 moments: Mapping[str, Callable[[dict], bool]]) -> tuple[int, int]:
    """Run ``command`` (writing ``out``) once per moment and SIGKILL it as soon as the server has
    received a request (since that run started) the moment matches, while that call is in flight
    (the server's latency); each run must send no call the store had committed, none twice. Then
    run it to the end. Returns (requests sent over all runs, calls in flight at a kill)."""
    db = out / "run.db"
    sent = lost = 0
    for moment, matches in moments.items():
        before, seen = committed(db), srv.count()
        proc = subprocess.Popen(command, env=dict(env), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                cwd=ROOT)
        deadline = time.time() + 120
        while proc.poll() is None and time.time() < deadline and not any(
                matches(q["body"]) for q in srv.requests[seen:]):
            time.sleep(0.01)
        assert proc.poll() is None, f"the run ended before {moment}"
        proc.send_signal(signal.SIGKILL)  # the matching call is in flight (the server answers after its latency)
        proc.wait()
        again = [key(q["body"]) for q in srv.requests[seen:]]
        sent += len(again)
        assert not before & set(again), f"killed at {moment}: a committed call was sent again"
        assert len(again) == len(set(again)), f"killed at {moment}: a call was sent twice"
        lost += len(set(again) - committed(db))  # in flight at the kill: never answered to the store
    before, seen = committed(db), srv.count()
    r = subprocess.run(command, env=dict(env), capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert not before & {key(q["body"]) for q in srv.requests[seen:]}
    return sent + srv.count() - seen, lost
