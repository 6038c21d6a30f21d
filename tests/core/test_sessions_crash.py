"""SIGKILL a 2-session ``reply_safety`` run at each moment of a session's life (a turn of the first
session, the clinician's notes call, the next-session call, a turn of the second session, a reply's
judging) while that call is in flight at the loopback server; the re-run sends no call the store
had committed, the store holds each call once, and the results equal an uninterrupted run's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.crash import ROOT, committed, key, kill_at_each, results, stored_calls
from tests.support.fault_server import FaultServer
from tests.support.loopback_run import run_args

__all__ = ["ROOT", "committed", "key", "results"]  # imported by other crash tests

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
    return [sys.executable, "-m", "mindeval", *run_args(url, "reply_safety", out, limit=2, turns=4)]


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
        sent, lost = kill_at_each(srv, command(srv.url, out), out, env, MOMENTS)
    dup, made = stored_calls(out / "run.db")
    assert dup == [] and made == needed
    # every request beyond the needed ones is a call that was in flight at a kill (reply judging runs
    # beside the conversation, so a kill may cut two), asked again once: none answered is ever repeated
    assert 0 < lost <= 2 * len(MOMENTS) and sent - needed == lost
    assert results(out) == results(clean)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_means_over"] == 4 and summary["failures"] == []
