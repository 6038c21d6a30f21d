"""``memory:`` in target.yaml: who writes the between-session memory, who reads it, and its bound as
a running log, checked where the prompts arrive (the loopback server): a 2-session copy of
``reply_safety`` whose member keeps the log (writer patient, readers patient and clinician,
max_entries 2)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from mindeval.cli import main
from mindeval.config import FIRST_MEMORY
from mindeval.records import bound_log
from mindeval.targets import load_target, validate_target
from tests.support.fault_server import FaultServer, request_text
from tests.support.loopback_run import run_args

TARGET = Path(__file__).resolve().parents[2] / "targets" / "reply_safety"
MEMORY_ASK = "You have just finished check-in"  # targets/reply_safety/prompts/memory.txt
LOG_BLOCK = "memory:\n  writer: patient\n  readers: [patient, clinician]\n  max_entries: 2\n"
JUDGE_NOTES = re.compile(r"The companion's own notes from earlier check-ins.*?\n\$\{memory\}\n\n", re.S)


def log_target(tmp_path: Path, block: str = LOG_BLOCK) -> Path:
    """reply_safety with ``block``: the patient template shows the member its log, the judge's
    shows none, the memory template tells the writer the bound."""
    t = shutil.copytree(TARGET, tmp_path / "log_target")
    (t / "target.yaml").write_text((t / "target.yaml").read_text() + block)
    p = t / "prompts"
    (p / "patient.txt").write_text((p / "patient.txt").read_text() + "\nYour own log of the program so far:\n${memory}\n")
    (p / "judge.txt").write_text(JUDGE_NOTES.sub("", (p / "judge.txt").read_text()))
    (p / "memory.txt").write_text((p / "memory.txt").read_text()
                                  + "Keep at most ${max_entries} entries, one per line, the newest last.\n")
    return t


def log_reply(text: str) -> str:
    """The writer's running log: the earlier log (the line after "before this check-in:"), a blank
    line and three new entries, each naming the request it answers (deterministic per request)."""
    earlier = text.split("Your notes from before this check-in:\n", 1)[1].split("\n\n", 1)[0]
    tag = re.search(r"check-in (\d+) with", text).group(1) + "-" + hashlib.sha256(text.encode()).hexdigest()[:8]
    return "\n".join([earlier, "", f"entry A of {tag}", f"entry B of {tag}", "   ", f"entry C of {tag}"])


class LogServer(FaultServer):
    """The loopback server whose memory calls answer with a multi-line running log."""

    empty_memory = False

    def reply_text(self, blocks, model):
        text = "\n".join(t for _, t, _ in blocks)
        if MEMORY_ASK in text:
            return "" if self.empty_memory else log_reply(text)
        return super().reply_text(blocks, model)


def _args(srv: FaultServer, target: Path, out: Path) -> list[str]:
    return _args_url(srv.url, target, out)


def _systems(reqs: list[dict], model: str) -> list[str]:
    return [r["body"]["messages"][0]["content"] for r in reqs if r["model"] == model
            and r["body"]["messages"][0]["role"] == "system"]


def test_the_patient_writes_a_bounded_log_that_only_its_readers_receive(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-memory")
    target, out = log_target(tmp_path), tmp_path / "run"
    assert validate_target(target) == []
    with LogServer() as srv:
        assert main(_args(srv, target, out)) == 0
        reqs = list(srv.requests)
        memory_calls = [r for r in reqs if MEMORY_ASK in request_text(r)]
        assert len(memory_calls) == 2 and {r["model"] for r in memory_calls} == {"patient-model"}
        assert all("Keep at most 2 entries" in request_text(r) for r in memory_calls)  # ${max_entries}
        rows = [json.loads(x) for x in (out / "interactions.jsonl").read_text().splitlines()]
        assert [r["session"]["session"] for r in rows] == [1, 2, 1, 2]
        for first, second in (rows[0:2], rows[2:4]):
            assert first["session"]["memory"] == FIRST_MEMORY and "memory_dropped" not in first["session"]
            reply = next(log_reply(request_text(r)) for r in memory_calls
                         if first["messages"][1]["content"] in request_text(r))
            kept = second["session"]["memory"]
            assert (kept, second["session"]["memory_dropped"]) == bound_log(reply, 2)
            assert kept.splitlines() == [x for x in reply.splitlines() if x.strip()][-2:]
            dropped = [x for x in reply.splitlines() if x.strip() and x not in kept.splitlines()]
            assert len(dropped) == 2 and dropped[0] == FIRST_MEMORY  # the oldest entries left out
            s2 = second["messages"][1]["content"]  # a reply of session 2: its requests carry the log
            for model in ("patient-model", "clinician-model"):
                mine = [s for s in _systems(reqs, model) if kept in s]
                assert len(mine) == 2, model  # both turns of this role in session 2 (4 turns)
                assert not any(d in s for s in mine for d in dropped)  # exactly the bounded log
            judged = [r for r in reqs if r["model"] == "judge-model" and s2 in request_text(r)]
            assert judged and not any(e in request_text(r) for r in judged for e in kept.splitlines())
        assert not any("entry " in request_text(r) for r in reqs if r["model"] == "judge-model")  # no reader
        con = sqlite3.connect(out / "run.db")
        roles = con.execute("select role, response_text from calls where tag like '%:memory'").fetchall()
        con.close()
        assert [role for role, _ in roles] == ["patient", "patient"]  # the writer's role in the call log
        assert all(len([x for x in text.splitlines() if x.strip()]) == 4 for _, text in roles)  # the reply kept whole
        config = json.loads((out / "config.json").read_text())
        assert config["config"]["target"]["memory"] == {"writer": "patient", "readers": ["patient", "clinician"],
                                              "max_entries": 2}
        seen = srv.count()
        assert main(_args(srv, target, out)) == 0
        assert srv.count() == seen  # resumed: nothing is asked twice
    # the viewer names whose memory it is and what the bound left out (before: "clinician's notes")
    assert main(["view", str(out), "--html", str(tmp_path / "v.html")]) == 0
    page = (tmp_path / "v.html").read_text()
    assert page.count("patient&#x27;s running log at the start of this session (2 older entries left out by the "
                      "bound)") == 2 and "clinician&#x27;s notes" not in page


def test_a_patient_writer_that_writes_nothing_fails_the_step_and_a_rerun_asks_again(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-memory")
    target, out = log_target(tmp_path), tmp_path / "run"
    with LogServer() as srv:
        srv.empty_memory = True
        assert main([*_args(srv, target, out), "--limit", "1"]) == 1
        rows = [json.loads(x) for x in (out / "interactions.jsonl").read_text().splitlines()]
        assert [r["session"]["session"] for r in rows] == [1]  # no session 2 on an invented empty log
        summary = json.loads((out / "summary.json").read_text())
        assert any(f["role"] == "patient" and "session step" in f["message"] for f in summary["failures"])
        srv.empty_memory = False
        start = srv.count()
        assert main([*_args(srv, target, out), "--limit", "1"]) == 0
        assert sum(MEMORY_ASK in request_text(r) for r in srv.requests[start:]) == 1  # asked again, once
        rows = [json.loads(x) for x in (out / "interactions.jsonl").read_text().splitlines()]
        assert [r["session"]["session"] for r in rows] == [1, 2] and rows[1]["session"]["memory_dropped"] == 2


def test_a_target_without_the_block_records_none():
    target = load_target("reply_safety")
    assert target.manifest.memory is None and "memory" not in target.info()
    assert "memory" not in target.block().model_dump(mode="json")


def _copy(tmp_path: Path, block: str, **edits: tuple[str, str]) -> Path:
    t = log_target(tmp_path, block)
    for name, (old, new) in edits.items():
        p = t / "prompts" / f"{name}.txt"
        p.write_text(p.read_text().replace(old, new) if old else p.read_text() + new)
    return t


MEMORY_OF_JUDGE = ("${output_format}\n", "${output_format}\n\nNotes: ${memory}\n")


@pytest.mark.parametrize(("block", "edits", "field", "message"), [
    # memory is a multi-session field
    (LOG_BLOCK, dict(), "memory", "only with sessions > 1"),
    # a template naming ${memory} whose role is not a reader
    (LOG_BLOCK, dict(judge=MEMORY_OF_JUDGE), "memory", "the judge is not a reader"),
    ("memory: {readers: [clinician, judge]}\n", dict(), "memory", "the patient is not a reader"),
    ("memory: {readers: [patient, judge], writer: patient}\n", dict(), "memory", "the clinician is not a reader"),
    # a reader's template that does not name it
    ("memory: {readers: [patient, clinician, judge]}\n", dict(judge=MEMORY_OF_JUDGE, patient=("${memory}", "")),
     "prompts.patient", "memory.readers lists the patient"),
    # the writer's bound without a bound
    ("memory: {readers: [patient, clinician], writer: patient}\n", dict(), "max_entries", "needs memory.max_entries"),
    # the clinician reads a log the patient writes: the backstory may not reach it
    (LOG_BLOCK, dict(memory=("", "${member_narrative}\n")), "member_narrative", "leak the patient's backstory"),
    # the clinician's prompt (holding the log) is no way around the judge's readership
    (LOG_BLOCK, dict(judge=("${output_format}\n", "${output_format}\n${clinician_system}\n")), "clinician_system",
     "the judge is not a reader"),
    ("memory: {readers: [clinician, nobody]}\n", dict(), "memory.readers.1", "clinician"),
    ("memory: {max_entries: 0}\n", dict(), "memory.max_entries", "greater than or equal to 1"),
    ("memory: {writer: patient, sessions: 1}\n", dict(), "memory.sessions", "unknown field"),
])
def test_validate_explains_each_memory_problem_in_one_line(tmp_path, block, edits, field, message):
    t = _copy(tmp_path, block, **edits)
    if "only with sessions" in message:
        (t / "target.yaml").write_text((t / "target.yaml").read_text().replace("sessions: 2", "sessions: 1"))
    problems = [str(p) for p in validate_target(t)]
    hit = [p for p in problems if f":{field}: " in p and message in p]
    assert hit, problems
    assert re.match(r"^/\S+:\d+:", hit[0]) and all("\n" not in p for p in problems)


def test_a_private_log_may_hold_the_backstory_when_no_clinician_reads_it(tmp_path):
    block = "memory: {writer: patient, readers: [patient], max_entries: 3}\n"
    t = _copy(tmp_path, block, memory=("", "${member_narrative}\n"), clinician=("${memory}", ""))
    assert validate_target(t) == []
    t2 = _copy(tmp_path / "b", block.replace("writer: patient", "writer: clinician"),
               memory=("", "${member_narrative}\n"), clinician=("${memory}", ""))
    assert any(":member_narrative: " in str(p) for p in validate_target(t2))  # the clinician writes it


@pytest.mark.slow
def test_sigkill_at_the_log_writing_call_repeats_no_committed_call(tmp_path):
    """SIGKILL while the patient's log call is in flight, then while a turn of session 2 is: each
    re-run sends no call the store had committed, and the results equal an uninterrupted run's."""
    from tests.support.crash import ROOT, kill_at_each, results, stored_calls

    target = log_target(tmp_path)
    env = {**os.environ, "OPENAI_API_KEY": "sk-memory-crash", "PYTHONPATH": str(ROOT)}

    def command(url: str, out: Path) -> list[str]:
        return [sys.executable, "-m", "mindeval", *_args_url(url, target, out)]
    moments = {"the log-writing call": lambda b: MEMORY_ASK in "\n".join(m["content"] for m in b["messages"]),
               "a turn of session 2": lambda b: b["messages"][0]["role"] == "system"
               and "entry B of" in b["messages"][0]["content"]}
    with LogServer(latency_s=0.3) as srv:
        clean = tmp_path / "clean"
        r = subprocess.run(command(srv.url, clean), env=env, capture_output=True, text=True, timeout=300, cwd=ROOT)
        assert r.returncode == 0, r.stdout + r.stderr
        needed = srv.count()
        out = tmp_path / "crashed"
        kill_at_each(srv, command(srv.url, out), out, env, moments)
    dup, made = stored_calls(out / "run.db")
    assert dup == [] and made == needed
    assert results(out) == results(clean)
    rows = [json.loads(x) for x in (out / "interactions.jsonl").read_text().splitlines()]
    assert [r["session"].get("memory_dropped") for r in rows] == [None, 2, None, 2]


def _args_url(url: str, target: Path, out: Path) -> list[str]:
    return run_args(url, target, out, limit=2, turns=4)


def test_the_estimate_counts_the_log_call_with_its_writer(tmp_path, monkeypatch):
    """``--dry-run`` prices the memory call with the writer's model: its calls per role are the
    ones the server then counts."""
    from mindeval.engine.estimate import estimate_run
    from mindeval.engine.loop import run_benchmark
    from mindeval.engine.prepare import prepare
    from mindeval.llm.gateway import ModelSpec
    from mindeval.run_options import RunOptions

    monkeypatch.setenv("OPENAI_API_KEY", "sk-memory")
    target = log_target(tmp_path)
    with LogServer() as srv:
        specs = {r: ModelSpec(model=f"openai/{r}-model", api_base=srv.url) for r in ("patient", "clinician", "judge")}
        opts = RunOptions(**specs, target=str(target), limit=2, turns=4, out=tmp_path / "run", concurrency=1,
                          progress=False)
        est = estimate_run(prepare(opts))
        measured = run_benchmark(opts, echo=None)["tokens"]
        by_model = {r: srv.count(f"{r}-model") for r in ("patient", "clinician")}
    assert {r: est[r]["calls"] for r in by_model} == {r: measured[r]["calls"] for r in by_model} == by_model
    assert by_model["patient"] == 2 * 2 * 2 + 2 + 2  # its turns, the log calls, the next-session calls
