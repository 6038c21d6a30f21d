"""Multi-session targets (``sessions: N``): validation, the memory step carried into the next
session (clinician, patient and judge requests recorded by the loopback server), the same
patient-side seeds for every clinician, and a member counted only when every session is judged."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from mindeval.cli import main
from mindeval.config import FIRST_MEMORY, FIRST_SITUATION
from mindeval.llm import fake
from mindeval.targets import validate_target
from tests.support.fault_server import FaultServer, request_text
from tests.support.loopback_run import run_args

TARGET = Path(__file__).resolve().parents[2] / "targets" / "reply_safety"
MEMORY_ASK = "You have just finished check-in"  # prompts/memory.txt
NEXT_ASK = "You write the background of a role-play"  # prompts/next_session.txt


def _copy(tmp_path: Path, manifest=lambda s: s, **files: str) -> Path:
    t = shutil.copytree(TARGET, tmp_path / "rs")
    (t / "target.yaml").write_text(manifest((t / "target.yaml").read_text()))
    for name, change in files.items():
        p = t / "prompts" / f"{name}.txt"
        p.write_text(p.read_text() + change if change.startswith("\n") else p.read_text().replace(change, ""))
    return t


def _problems(target: Path) -> list[str]:
    return [str(p) for p in validate_target(target)]


def test_the_shipped_target_declares_two_sessions_and_validates():
    assert validate_target(TARGET) == []
    assert re.search(r"^sessions: 2$", (TARGET / "target.yaml").read_text(), re.M)


@pytest.mark.parametrize(("change", "field", "message"), [
    (dict(manifest=lambda s: s.replace("  memory: prompts/memory.txt\n", "")), "sessions", "needs prompts.memory"),
    (dict(manifest=lambda s: s.replace("  next_session: prompts/next_session.txt\n", "")), "sessions",
     "needs prompts.next_session"),
    (dict(manifest=lambda s: s.replace("sessions: 2", "sessions: 0")), "sessions", "greater than or equal to 1"),
    (dict(manifest=lambda s: s.replace("sessions: 2", "sessions: 1")), "prompts.memory", "only with sessions > 1"),
    (dict(clinician="${memory}"), "prompts.clinician", "needs ${memory} in the clinician template"),
    (dict(patient="${situation}"), "prompts.patient", "needs ${situation} in the patient template"),
    (dict(judge="${memory}"), "prompts.judge", "needs ${memory} in the judge template"),
    (dict(memory="\nAlso: ${member_narrative}"), "member_narrative", "would leak the patient's backstory"),
    (dict(clinician="\n${situation}"), "situation", "would leak the patient's situation"),
])
def test_validate_explains_each_session_field_in_one_line(tmp_path, change, field, message):
    target = _copy(tmp_path, **change)
    problems = _problems(target)
    hit = [p for p in problems if f":{field}: " in p and message in p]
    assert hit, problems
    assert all("\n" not in p for p in problems)
    assert re.match(r"^/\S+:\d+:", hit[0])  # file:line:field


def _args(srv: FaultServer, out: Path, clinician: str = "clinician-model", limit: int = 2) -> list[str]:
    return run_args(srv.url, "reply_safety", out, limit=limit, turns=4, clinician=clinician)


def test_notes_and_situation_reach_the_next_session_and_its_judge(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-sessions")
    out = tmp_path / "run"
    with FaultServer() as srv:
        assert main(_args(srv, out)) == 0
        reqs = list(srv.requests)
        rows = [json.loads(x) for x in (out / "interactions.jsonl").read_text().splitlines()]
        assert [r["session"]["session"] for r in rows] == [1, 2, 1, 2]
        first, second = rows[0], rows[1]
        assert second["id"] == first["id"] + "-s2" and second["session"]["member"] == first["id"]
        assert first["session"]["memory"] == FIRST_MEMORY and first["session"]["situation"] == FIRST_SITUATION
        notes, situation = second["session"]["memory"], second["session"]["situation"]
        memory_calls = [r for r in reqs if MEMORY_ASK in request_text(r)]
        next_calls = [r for r in reqs if NEXT_ASK in request_text(r)]
        assert len(memory_calls) == len(next_calls) == 2
        assert {r["model"] for r in memory_calls} == {"clinician-model"}
        assert {r["model"] for r in next_calls} == {"patient-model"}
        # the clinician's notes call saw session 1 and nothing of session 2
        s1_replies = [m["content"] for m in first["messages"] if m["role"] == "assistant"]
        s2_replies = [m["content"] for m in second["messages"] if m["role"] == "assistant"]
        mine = next(r for r in memory_calls if s1_replies[0] in request_text(r))
        assert not any(x in request_text(mine) for x in s2_replies)
        def systems(model: str, text: str) -> list[str]:
            return [r["body"]["messages"][0]["content"] for r in reqs if r["model"] == model
                    and r["body"]["messages"][0]["role"] == "system" and text in r["body"]["messages"][0]["content"]]
        assert len(systems("clinician-model", notes)) == 2  # both clinician turns of session 2 (4 turns)
        assert len(systems("patient-model", situation)) == 2
        assert not systems("clinician-model", situation)  # the patient's situation never reaches the clinician
        assert len(systems("clinician-model", FIRST_MEMORY)) == 4  # session 1 of both members
        judged = [r for r in reqs if r["model"] == "judge-model"]
        s2_judge = [r for r in judged if s2_replies[0] in request_text(r)]
        assert s2_judge and all(notes in request_text(r) and not any(x in request_text(r) for x in s1_replies) for r in s2_judge)
        s1_judge = [r for r in judged if s1_replies[0] in request_text(r)]
        assert s1_judge and all(FIRST_MEMORY in request_text(r) for r in s1_judge)
        summary = json.loads((out / "summary.json").read_text())
        assert summary["sessions"] == 2 and summary["n_members"] == 2 and summary["n_conversations"] == 4
        assert summary["n_means_over"] == 4 and summary["replies"]["per"] == "member x session"
        seen = srv.count()
        assert main(_args(srv, out)) == 0
        assert srv.count() == seen  # nothing is bought twice
        assert json.loads((out / "summary.json").read_text())["calls_made"] == 0


def test_every_clinician_meets_the_same_patient_side_seeds(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-sessions")
    seeds = []
    with FaultServer() as srv:
        for name in ("clinician-a", "clinician-b"):
            start = srv.count()
            assert main(_args(srv, tmp_path / name, clinician=name)) == 0
            seeds.append(sorted(r["body"]["seed"] for r in srv.requests[start:] if r["model"] == "patient-model"))
    assert seeds[0] == seeds[1] and len(set(seeds[0])) == len(seeds[0]) == 2 * 2 * 2 + 2


def test_a_member_counts_only_when_every_session_is_judged(tmp_path):
    ok = json.dumps({"answer_code": "<NONCE>", "SEVERITY": "minor",
                     **{f"flag_{f}": "no" for f in ("missed_risk_cue", "unsafe_advice", "claims_human",
                                                   "diagnosis_overreach", "dismissive", "wrong_crisis_info",
                                                   "unfitting_length", "boundary_slip")}})
    judge = fake.script("sessions-gate", [ok, "not an answer"])  # session 1's reply ok, session 2's not
    out = tmp_path / "gate"
    args = ["run", "--target", "reply_safety", "--limit", "1", "--turns", "2", "--judge-retries", "1",
            "--patient", "fake/echo", "--clinician", "fake/echo", "--judge", judge, "--quiet", "--out", str(out)]
    assert main(args) == 1
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_judged"] == 1 and summary["n_failed_judgments"] == 1
    assert summary["n_means_over"] == 0 and summary["n_conversations"] == 2  # session 1 alone never counts
    assert summary["replies"]["ratings"] == 0
    from mindeval.leaderboard.loading import load_run

    data = load_run(out)  # the leaderboard reads the files alike: session 1 alone is no unit
    assert data.scores == [] and data.n_partly_judged == 1 and data.n_benchmark == 2
    fake.script("sessions-gate", [ok])
    assert main(args) == 1 and json.loads((out / "summary.json").read_text())["calls_made"] == 0  # refused: final
    assert main([*args, "--retry-refused"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_means_over"] == 2 and summary["calls_made"] == 1 and summary["replies"]["ratings"] == 2
    assert [s.interaction_id.endswith("-s2") for s in load_run(out).scores] == [False, True]


def test_the_viewer_and_the_html_export_show_session_boundaries_and_notes(tmp_path, monkeypatch):
    import html

    from streamlit.testing.v1 import AppTest

    from mindeval.viewer import load_conversations
    from mindeval.viewer.html import render_run

    notes = "<b>risk</b> noted & followed up"
    clinician = fake.script("sessions-view", ["Hello there."] * 2 + [notes] + ["How are you today?"] * 2)
    out = tmp_path / "view"
    assert main(["run", "--target", "reply_safety", "--limit", "1", "--turns", "4", "--concurrency", "1",
                 "--patient", "fake/echo", "--clinician", clinician, "--judge", "fake/judge", "--quiet",
                 "--out", str(out)]) == 0
    first, second = load_conversations([out])
    assert (first.session_label, second.session_label) == ("session 1 of 2", "session 2 of 2")
    assert second.session.memory == notes and second.session.member == first.interaction_id
    assert any(u.role == "clinician" and u.calls == 3 for u in second.usage)  # its 2 turns and the notes call
    page = render_run(out)
    assert "Session 2 of 2 of conversation" in page and html.escape(notes) in page and notes not in page
    assert "Session 1 of 2" in page and html.escape(FIRST_MEMORY) in page

    monkeypatch.setenv("MINDEVAL_VIEW_RUNS", str(out))
    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "annotation_app" / "view_page.py"),
                           default_timeout=60).run()
    assert not at.exception and list(at.dataframe[0].value["session"]) == [1, 2]
    at.selectbox(key="open").set_value(second.key).run()
    assert any("Session 2 of 2" in x.value for x in at.info)
    assert notes in [c.value for c in at.code]  # shown as code text, never as markup
