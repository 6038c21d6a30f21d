"""A target's ``schedule:`` (seeded per-member, per-session draws declared as data): validation, the
draws' frequencies and independence, the values reaching exactly the templates they are visible to
at the loopback server, the same draws for every clinician, stored = exported = sent, one session,
and a run killed right after a draw resuming with the stored values and no repeated committed call."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest

from mindeval.cli import main
from mindeval.schedule import Draw, declared, draw_session
from mindeval.targets import load_target, validate_target
from tests.core.test_sessions_crash import committed, key
from tests.support.fault_server import FaultServer, request_text
from tests.support.loopback_run import run_args

ROOT = Path(__file__).resolve().parents[2]
TARGET = ROOT / "targets" / "reply_safety"
NEXT_ASK = "You write the background of a role-play"  # targets/reply_safety/prompts/next_session.txt
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
SCHEDULE = f"""
schedule:
  gap: {{between: [1, 30], visible_to: [patient, next_session, memory, judge]}}
  weekday: {{choices: [{", ".join(DAYS)}], visible_to: [patient, clinician, next_session]}}
  beat: {{choices: [setback, plateau, progress], weights: [1, 2, 1], sessions: [2]}}
"""
PATIENT = "\nPSCHED gap=${schedule_gap} day=${schedule_weekday} beat=${schedule_beat}."
CLINICIAN = "\nCSCHED day=${schedule_weekday}."
NEXT = "\nNSCHED gap=${schedule_gap} day=${schedule_weekday} beat=${schedule_beat}."
MEMORY = "\nMSCHED gap=${schedule_gap}."
JUDGE = "\nJSCHED gap=${schedule_gap}."


def _copy(tmp_path: Path, schedule: str = SCHEDULE, manifest=lambda s: s, **files: str) -> Path:
    """reply_safety with ``schedule`` appended to target.yaml and each ``files`` text appended to its prompt."""
    t = shutil.copytree(TARGET, tmp_path / "rs")
    (t / "target.yaml").write_text(manifest((t / "target.yaml").read_text() + schedule))
    for name, text in files.items():
        p = t / "prompts" / f"{name}.txt"
        p.write_text(p.read_text() + text)
    return t


# ------------------------------------------------------------------ validation

@pytest.mark.parametrize(("schedule", "files", "field", "message"), [
    ("\nschedule:\n  Gap: {between: [1, 3]}\n", {}, "schedule", "must be snake_case"),
    ("\nschedule:\n  mood: {choices: []}\n", {}, "schedule.mood", "at least one text"),
    ("\nschedule:\n  mood: {choices: [low, high], weights: [1]}\n", {}, "schedule.mood",
     "one number per choice (2), not 1"),
    ("\nschedule:\n  mood: {choices: [low, high], weights: [1, 0]}\n", {}, "schedule.mood.weights", "positive"),
    ("\nschedule:\n  gap: {between: [9, 2]}\n", {}, "schedule.gap", "lo (9) must not exceed hi (2)"),
    ("\nschedule:\n  gap: {between: [1, 2], choices: [a]}\n", {}, "schedule.gap", "not both"),
    ("\nschedule:\n  gap: {between: [1, 2], when: [1]}\n", {}, "schedule.gap.when", "unknown field"),
    ("\nschedule:\n  beat: {choices: [a], sessions: [2, 3]}\n", {}, "schedule.beat.sessions",
     "session 3 is outside 1..2"),
    ("\nschedule:\n  beat: {choices: [a], sessions: [0]}\n", {}, "schedule.beat.sessions", "session 0 is outside"),
    ("\nschedule:\n  beat: {choices: [a], visible_to: [therapist]}\n", {}, "schedule.beat.visible_to.0", "Input should be"),
    ("\nschedule:\n  gap: {between: [1, 2]}\n", {"patient": "\n${schedule_mood}"}, "schedule_mood",
     "names no declared draw (schedule in target.yaml: gap)"),
    ("\nschedule:\n  gap: {between: [1, 2]}\n", {"clinician": "\n${schedule_gap}"}, "schedule_gap",
     "not visible to the clinician template"),
    ("\nschedule:\n  gap: {between: [1, 2], visible_to: [clinician]}\n", {"judge": "\n${schedule_gap}"},
     "schedule_gap", "not visible to the judge template"),
    ("\nschedule:\n  gap: {between: [1, 2]}\n", {"memory": "\n${schedule_gap}"}, "schedule_gap",
     "not visible to the memory template"),
    ("", {"next_session": "\n${schedule_gap}"}, "schedule_gap", "names no declared draw (schedule in target.yaml: none)"),
])
def test_validate_explains_each_schedule_problem_in_one_line(tmp_path, schedule, files, field, message):
    problems = [str(p) for p in validate_target(_copy(tmp_path, schedule, **files))]
    hit = [p for p in problems if f":{field}: " in p and message in p]
    assert hit, problems
    assert all("\n" not in p for p in problems)
    assert re.match(r"^/\S+:\d+:", hit[0])  # file:line:field


def test_a_valid_schedule_validates_and_is_recorded_only_when_declared(tmp_path):
    t = _copy(tmp_path, **{"patient": PATIENT, "clinician": CLINICIAN, "next_session": NEXT})
    assert validate_target(t) == []
    block = load_target(t).block().model_dump(mode="json")
    assert block["schedule"]["beat"] == {"choices": ["setback", "plateau", "progress"], "weights": [1.0, 2.0, 1.0],
                                         "sessions": [2], "visible_to": ["patient", "next_session"]}
    assert "schedule" not in load_target(TARGET).block().model_dump(mode="json")  # its runs' hash stays


# ------------------------------------------------------------------ the draws (pure)

def test_weights_are_honoured_and_between_covers_its_range():
    """10,000 members: 'b' (weight 3 of 4) within the 99.9% binomial interval around 0.75; every
    integer of [1, 5] drawn, each within its interval around 0.2."""
    sched = declared({"mood": {"choices": ["a", "b"], "weights": [1, 3]}, "gap": {"between": [1, 5]}})
    n = 10_000
    draws = [draw_session(sched, 7, f"t:p{i}:r0:s1", 1) for i in range(n)]
    z = 3.29

    def within(count: int, p: float) -> bool:
        return abs(count / n - p) <= z * math.sqrt(p * (1 - p) / n)
    assert within(sum(d["mood"] == "b" for d in draws), 0.75)
    gaps = [int(d["gap"]) for d in draws]
    assert set(gaps) == {1, 2, 3, 4, 5} and all(within(gaps.count(g), 0.2) for g in range(1, 6))


def test_each_draw_is_its_own_a_changed_declaration_changes_no_other():
    a = declared({"gap": {"between": [1, 30]}, "mood": {"choices": ["low", "ok", "high"]}})
    b = declared({"gap": {"between": [1, 30]}, "mood": {"choices": ["x", "y"], "weights": [5, 1]},
                  "extra": {"between": [0, 9]}})
    keys = [f"t:p{i}:r0:s1" for i in range(50)]
    assert [draw_session(a, 1, k, 1)["gap"] for k in keys] == [draw_session(b, 1, k, 1)["gap"] for k in keys]
    assert len({draw_session(a, 1, k, 1)["gap"] for k in keys}) > 5
    assert draw_session(a, 1, keys[0], 1) == draw_session(a, 1, keys[0], 1)  # no clock, no state
    assert [draw_session(a, 1, k, 1) for k in keys] != [draw_session(a, 2, k, 1) for k in keys]  # the seed counts
    only2 = {"beat": Draw(choices=["s"], sessions=[2])}
    assert draw_session(only2, 1, keys[0], 1) == {} and draw_session(only2, 1, keys[0], 2) == {"beat": "s"}


# ------------------------------------------------------------------ a run at the loopback server

def _args(srv: FaultServer, target: Path, out: Path, clinician: str = "clinician-model", limit: int = 6,
          seed: int = 0) -> list[str]:
    args = ["run", "--target", str(target), "--limit", str(limit), "--turns", "2", "--concurrency", "2",
            "--seed", str(seed), "--quiet", "--out", str(out)]
    for role, model in (("patient", "patient-model"), ("clinician", clinician), ("judge", "judge-model")):
        args += [f"--{role}", f"openai/{model}", f"--{role}-api-base", srv.url]
    return args


def _system(r: dict) -> str:
    m = r["body"]["messages"][0]
    return m["content"] if m["role"] == "system" else ""


def _exported(out: Path) -> dict[str, dict[str, str]]:
    return {r["id"]: r["session"]["schedule"] for r in map(json.loads, (out / "interactions.jsonl").read_text()
                                                           .splitlines())}


def _stored(out: Path) -> dict[str, dict[str, str]]:
    con = sqlite3.connect(out / "run.db")
    try:
        return {iid: json.loads(s) for iid, s in con.execute("select interaction_id, schedule from sessions")}
    finally:
        con.close()


def _by_member(schedules: dict[str, dict[str, str]]) -> list[dict[str, str]]:
    """The draws in member x session order, keyed apart from the run id."""
    return [schedules[k] for k in sorted(schedules, key=lambda k: (re.sub(r"^[^-]+-", "", k)))]


def test_the_draws_reach_exactly_the_templates_they_are_visible_to(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-schedule")
    t = _copy(tmp_path, **{"patient": PATIENT, "clinician": CLINICIAN, "next_session": NEXT, "memory": MEMORY,
                           "judge": JUDGE})
    out = tmp_path / "a"
    with FaultServer() as srv:
        assert main(_args(srv, t, out)) == 0
        reqs = list(srv.requests)
        exported = _exported(out)
        assert exported == _stored(out) and len(exported) == 12  # stored = exported, 6 members x 2 sessions
        for iid, drawn in exported.items():
            s2 = iid.endswith("-s2")
            assert set(drawn) == ({"gap", "weekday", "beat"} if s2 else {"gap", "weekday"})
            assert 1 <= int(drawn["gap"]) <= 30 and drawn["weekday"] in DAYS
            patient = f"PSCHED gap={drawn['gap']} day={drawn['weekday']} beat={drawn.get('beat', '')}."
            clinician = f"CSCHED day={drawn['weekday']}."
            sent_p = [r for r in reqs if r["model"] == "patient-model" and patient in _system(r)]
            sent_c = [r for r in reqs if r["model"] == "clinician-model" and clinician in _system(r)]
            assert sent_p and sent_c
            if s2:  # the next-session step is shown the session it prepares
                assert [r for r in reqs if NEXT_ASK in request_text(r) and
                        f"NSCHED gap={drawn['gap']} day={drawn['weekday']} beat={drawn['beat']}." in request_text(r)]
            else:  # the clinician's notes after session 1 are shown session 1's gap
                assert [r for r in reqs if r["model"] == "clinician-model" and
                        f"MSCHED gap={drawn['gap']}." in request_text(r)]
        # the clinician is shown the weekday alone (its notes call the gap: visible to memory)
        assert not any("gap=" in _system(r) or "beat=" in _system(r) for r in reqs if r["model"] == "clinician-model")
        judged = [re.findall(r"JSCHED gap=(\d+)\.", request_text(r)) for r in reqs if r["model"] == "judge-model"]
        assert all(len(g) == 1 for g in judged) and {g[0] for g in judged} == {d["gap"] for d in exported.values()}
        assert not any("day=" in request_text(r) for r in reqs if r["model"] == "judge-model")
        assert json.loads((out / "config.json").read_text())["config"]["target"]["schedule"]["gap"]["between"] == [1, 30]

        other = tmp_path / "b"  # another clinician meets the same schedule
        assert main(_args(srv, t, other, clinician="clinician-b")) == 0
        assert _by_member(_exported(other)) == _by_member(exported)
        reseeded = tmp_path / "c"
        assert main(_args(srv, t, reseeded, seed=1)) == 0
        assert _by_member(_exported(reseeded)) != _by_member(exported)
        seen = srv.count()
        assert main(_args(srv, t, out)) == 0  # resumed: the stored draws, nothing bought again
        assert srv.count() == seen and _exported(out) == exported


def _one_session(tmp_path: Path) -> Path:
    """reply_safety with one session, drawing an affect for the patient."""
    def one(s: str) -> str:
        s = s.replace("sessions: 2", "sessions: 1")
        return s.replace("  memory: prompts/memory.txt\n", "").replace("  next_session: prompts/next_session.txt\n", "")
    return _copy(tmp_path, "\nschedule:\n  affect: {choices: [flat, tense, bright]}\n", one,
                 patient="\nAFFECT=${schedule_affect}.")


@pytest.mark.parametrize("db", ["sqlite", "postgresql"])
def test_the_draws_are_stored_and_resumed_on_both_databases(tmp_path, monkeypatch, request, db):
    from sqlalchemy import create_engine
    from sqlalchemy import text as sql

    monkeypatch.setenv("OPENAI_API_KEY", "sk-schedule")
    t, out = _one_session(tmp_path), tmp_path / "db"
    url = f"sqlite:///{out / 'run.db'}" if db == "sqlite" else request.getfixturevalue("pg_url")
    seed = str(zlib.crc32(str(tmp_path).encode()))  # this test's own run in a shared database
    with FaultServer() as srv:
        assert main([*_args(srv, t, out, limit=3), "--db", url, "--seed", seed]) == 0
        exported = _exported(out)
        with create_engine(url).connect() as con:
            stored = {iid: json.loads(v) for iid, v in con.execute(sql(
                "SELECT interaction_id, schedule FROM sessions")) if iid in exported}
        assert stored == exported and len(exported) == 3
        seen = srv.count()
        assert main([*_args(srv, t, out, limit=3), "--db", url, "--seed", seed]) == 0
        assert srv.count() == seen and _exported(out) == exported


def test_a_one_session_target_draws_too(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-schedule")
    t = _one_session(tmp_path)
    assert validate_target(t) == []
    out = tmp_path / "one"
    with FaultServer() as srv:
        assert main(_args(srv, t, out, limit=2)) == 0
        reqs = list(srv.requests)
    rows = [json.loads(x) for x in (out / "interactions.jsonl").read_text().splitlines()]
    assert len(rows) == 2
    for r in rows:
        affect = r["session"]["schedule"]["affect"]
        assert r["session"]["sessions"] == 1 and r["session"]["member"] == r["id"]
        assert [q for q in reqs if q["model"] == "patient-model" and f"AFFECT={affect}." in _system(q)]
    assert _stored(out) == _exported(out)

    from streamlit.testing.v1 import AppTest

    from annotation_app.ui import inert
    from mindeval.viewer import load_conversations
    from mindeval.viewer.html import render_run

    convs = load_conversations([out])
    assert [c.session for c in convs] == [None, None] and [c.session_label for c in convs] == ["", ""]
    line = f"affect: {rows[0]['session']['schedule']['affect']}"
    assert convs[0].schedule_line == line and f"schedule drawn for this session: {line}" in render_run(out)
    monkeypatch.setenv("MINDEVAL_VIEW_RUNS", str(out))
    at = AppTest.from_file(str(ROOT / "annotation_app" / "view_page.py"), default_timeout=60).run()
    at.selectbox(key="open").set_value(convs[0].key).run()
    assert not at.exception and any(inert(line) in x.value for x in at.caption)


# ------------------------------------------------------------------ killed right after a draw

def _command(url: str, target: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "mindeval", *run_args(url, target, out, limit=1, turns=2)]


@pytest.mark.slow
def test_a_run_killed_right_after_a_draw_resumes_with_the_stored_values(tmp_path):
    """Killed while session 1's first call is in flight (its draws stored, no call committed), the
    stored draws (here marked) are the ones the resumed run sends; killed at the next-session call
    (session 2's draws stored before it), the re-run sends no committed call again."""
    t = _copy(tmp_path, **{"patient": PATIENT, "clinician": CLINICIAN, "next_session": NEXT})
    env = {**os.environ, "OPENAI_API_KEY": "sk-schedule-crash", "PYTHONPATH": str(ROOT)}
    out = tmp_path / "run"
    db = out / "run.db"
    with FaultServer(latency_s=0.3) as srv:
        for moment, matches in (("session 1's first call", lambda r: True),
                                ("the next-session call", lambda r: NEXT_ASK in request_text(r))):
            seen, before = srv.count(), committed(db)
            proc = subprocess.Popen(_command(srv.url, t, out), env=env, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, cwd=ROOT)
            deadline = time.time() + 120
            while proc.poll() is None and time.time() < deadline and not any(map(matches, srv.requests[seen:])):
                time.sleep(0.01)  # waits on the server's record of the call, not a fixed time
            assert proc.poll() is None, f"the run ended before {moment}"
            proc.send_signal(signal.SIGKILL)  # the matching call is in flight (answered after 0.3 s)
            proc.wait()
            assert not before & {key(q["body"]) for q in srv.requests[seen:]}, f"{moment}: a committed call again"
            stored = _stored(out)
            if moment == "session 1's first call":  # its draws are stored, no call is
                assert committed(db) == set() and [set(v) for v in stored.values()] == [{"gap", "weekday"}]
                [(iid, drawn)] = stored.items()
                con = sqlite3.connect(db)
                con.execute("update sessions set schedule = ? where interaction_id = ?",
                            (json.dumps({**drawn, "weekday": "Caturday"}), iid))
                con.commit()
                con.close()
            else:  # session 2's draws are stored before its next-session call
                assert any(k.endswith("-s2") and "beat" in v for k, v in stored.items())
        before, seen = committed(db), srv.count()
        r = subprocess.run(_command(srv.url, t, out), env=env, capture_output=True, text=True, timeout=300, cwd=ROOT)
        assert r.returncode == 0, r.stdout + r.stderr
        assert not before & {key(q["body"]) for q in srv.requests[seen:]}
        assert _exported(out) == stored  # the draws stored before the kills, the marked one included
        assert any("CSCHED day=Caturday." in _system(q) for q in srv.requests if q["model"] == "clinician-model")
    con = sqlite3.connect(db)
    dup = con.execute("select request_hash from calls where status = 'ok' group by request_hash "
                      "having count(*) > 1").fetchall()
    con.close()
    assert dup == []


def test_metaeval_reads_a_sessions_schedule_for_its_judge():
    """``metaeval judge`` of a run's rated rows passes each session's stored draws to the judge template."""
    from metaeval.sources import session_schedule

    assert session_schedule({"session": {"member": "m", "schedule": {"gap": "3", "weekday": "Friday"}}}) \
        == {"gap": "3", "weekday": "Friday"}
    assert session_schedule({"session": {"member": "m"}}) is None and session_schedule({}) is None
