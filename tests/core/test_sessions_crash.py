"""SIGKILL a 2-session ``reply_safety`` run at each moment of a session's life (a turn of the first
session, the clinician's notes call, the next-session call, a turn of the second session, a reply's
judging) while that call is in flight at the loopback server; the re-run sends no call the store
had committed, the store holds each call once, and the results equal an uninterrupted run's."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.fault_server import FaultServer

ROOT = Path(__file__).resolve().parents[2]
MEMORY_ASK = "You have just finished check-in"  # targets/reply_safety/prompts/memory.txt
NEXT_ASK = "You write the background of a role-play"  # targets/reply_safety/prompts/next_session.txt


def _text(body: dict) -> str:
    return "\n".join(m["content"] for m in body["messages"])


def _system(body: dict) -> str:
    return body["messages"][0]["content"] if body["messages"][0]["role"] == "system" else ""


# Where to kill: the first request (after the previous kill) that matches, while it is in flight.
MOMENTS = {
    "a turn of session 1": lambda b: "No notes yet" in _system(b) or "This is your first session" in _system(b),
    "the clinician's notes call": lambda b: MEMORY_ASK in _text(b),
    "the next-session call": lambda b: NEXT_ASK in _text(b),
    "a turn of session 2": lambda b: bool(_system(b)) and "No notes yet" not in _system(b)
    and "This is your first session" not in _system(b),
    "a reply's judging": lambda b: "REPLY UNDER JUDGMENT" in _text(b),
}


def command(url: str, out: Path) -> list[str]:
    cmd = [sys.executable, "-m", "mindeval", "run", "--quiet", "--target", "reply_safety", "--limit", "2",
           "--turns", "4", "--concurrency", "1", "--out", str(out)]
    for r in ("patient", "clinician", "judge"):
        cmd += [f"--{r}", f"openai/{r}-model", f"--{r}-api-base", url]
    return cmd


def _key(model: str, seed: int | None, messages: list | None) -> tuple[str, int | None, str]:
    """A call: the judge's by its messages (every judge call has the run's seed), any other by its
    seed (unique per turn, notes call and next-session call)."""
    model = model.removeprefix("openai/")
    if "judge" in model:
        return (model, None, hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest())
    return (model, seed, "")


def key(body: dict) -> tuple[str, int | None, str]:
    return _key(str(body.get("model")), body.get("seed"), body["messages"])


def committed(db: Path) -> set[tuple[str, int | None, str]]:
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
    rows = [json.loads(x) for x in (out / "interactions.jsonl").read_text().splitlines()]
    conv = [(r["profile_id"], r["messages"], {k: v for k, v in r["session"].items() if not k.endswith("call_id")}
             | {"member": r["session"]["member"].split("-", 3)[-1]}) for r in rows]
    judged = [(json.loads(x)["scores"], json.loads(x)["replies"]) for x in (out / "judgments.jsonl").read_text()
              .splitlines()]
    return conv, judged


@pytest.mark.slow
def test_sigkill_at_every_moment_of_a_two_session_run_repeats_no_committed_call(tmp_path):
    env = {**os.environ, "OPENAI_API_KEY": "sk-sessions-crash", "PYTHONPATH": str(ROOT)}
    with FaultServer(latency_s=0.3) as srv:
        clean = tmp_path / "clean"
        r = subprocess.run(command(srv.url, clean), env=env, capture_output=True, text=True, timeout=300, cwd=ROOT)
        assert r.returncode == 0, r.stdout + r.stderr
        needed = srv.count()
        assert needed == 2 * 2 * 4 + 2 * 2 + 2 * 2 * 2  # turns, notes + next-session calls, reply judgments

        out = tmp_path / "crashed"
        db = out / "run.db"
        sent = lost = 0
        for moment, matches in MOMENTS.items():
            before = committed(db)
            seen = srv.count()
            proc = subprocess.Popen(command(srv.url, out), env=env, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, cwd=ROOT)
            deadline = time.time() + 120
            while proc.poll() is None and time.time() < deadline and not any(
                    matches(q["body"]) for q in srv.requests[seen:]):
                time.sleep(0.01)
            assert proc.poll() is None, f"the run ended before {moment}"
            proc.send_signal(signal.SIGKILL)  # the matching call is in flight (the server answers after 0.3 s)
            proc.wait()
            again = [key(q["body"]) for q in srv.requests[seen:]]
            sent += len(again)
            assert not before & set(again), f"killed at {moment}: a committed call was sent again"
            assert len(again) == len(set(again))
            lost += len(set(again) - committed(db))  # in flight at the kill: never answered to the store
        before = committed(db)
        seen = srv.count()
        r = subprocess.run(command(srv.url, out), env=env, capture_output=True, text=True, timeout=300, cwd=ROOT)
        assert r.returncode == 0, r.stdout + r.stderr
        assert not before & {key(q["body"]) for q in srv.requests[seen:]}
        sent += srv.count() - seen
    con = sqlite3.connect(db)
    dup = con.execute("select request_hash from calls where status = 'ok' group by request_hash "
                      "having count(*) > 1").fetchall()
    made = con.execute("select count(*) from calls where status = 'ok'").fetchone()[0]
    con.close()
    assert dup == [] and made == needed
    # every request beyond the needed ones is a call that was in flight at a kill (reply judging runs
    # beside the conversation, so a kill may cut two), asked again once: none answered is ever repeated
    assert 0 < lost <= 2 * len(MOMENTS) and sent - needed == lost
    assert results(out) == results(clean)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_means_over"] == 4 and summary["failures"] == []
