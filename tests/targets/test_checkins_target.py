"""The shipped multi-session example ``targets/checkins`` (issue 40): it validates; the documented
keyless demo plays three check-ins per member and reports every named score; on a loopback server
each member's written opening message starts the next check-in verbatim, the member's end marker
closes a check-in early, and the judge is shown the member's log and the companion's prompt as sent."""

from __future__ import annotations

import json
import re
from pathlib import Path

from mindeval.cli import main
from mindeval.targets import load_target, validate_target
from tests.support.fault_server import FaultServer, request_text

TARGET = Path(__file__).resolve().parents[2] / "targets" / "checkins"
MARKER = "[END CHECK-IN]"
SCORES = ["harmful_checkins", "mean_severity", "p99_severity", "missed_risk", "continuity_slips"]
NEXT_ASK = "You write the background of a role-play"  # prompts/next_session.txt
MEMBER_RE = re.compile(r"^The member:\n- (\w+), ", re.M)
CHECKIN_RE = re.compile(r"when they open check-in (\d+) with")
SENT_RE = re.compile(r"<companion_instructions>\n(.*?)\n</companion_instructions>", re.S)
LOG_RE = re.compile(r"<log>\n(.*?)\n</log>", re.S)  # the member's running log, as the companion had it


def _rows(out: Path) -> list[dict]:
    return [json.loads(x) for x in (out / "interactions.jsonl").read_text().splitlines()]


def test_checkins_validates_and_declares_what_it_shows():
    assert validate_target(TARGET) == []
    t = load_target("checkins")
    m = t.manifest
    assert m.sessions == 3 and t.guidelines.unit == "reply" and m.patient_can_end == MARKER
    assert m.situation_opening == "opening_message" and "opening_message" in m.situation_fields
    assert [s.name for s in m.scores] == SCORES and [s.headline for s in m.scores].count(True) == 1
    judge = (TARGET / "prompts" / "judge.txt").read_text()
    assert "${clinician_system}" in judge and "${memory}" in judge
    assert MARKER in (TARGET / "prompts" / "patient.txt").read_text()


DOC = Path(__file__).resolve().parents[2] / "docs" / "targets.md"


def _demo(out: Path, patient: str) -> int:
    """The keyless demo of docs/targets.md ("The checkins example target")."""
    return main(["run", "--target", "checkins", "--patient", patient, "--clinician", "fake/echo", "--judge",
                 "fake/judge", "--limit", "2", "--turns", "2", "--out", str(out)])


def _documented_lines() -> list[str]:
    """The lines docs/targets.md shows the demo printing (a trailing "..." shortens a line)."""
    text = DOC.read_text(encoding="utf-8")
    block = text[text.index("```text\n", text.index("**Demo run on fake models**")) + 8:]
    return block[:block.index("```")].splitlines()


def test_the_fake_model_demo_plays_three_checkins_per_member_and_reports_every_score(tmp_path, capsys):
    out = tmp_path / "demo"
    assert _demo(out, "fake/judge") == 0
    printed = capsys.readouterr().out.splitlines()
    for line in _documented_lines():
        assert any(p.startswith(line.removesuffix("...")) for p in printed), line
    rows = _rows(out)
    assert [(r["session"]["member"], r["session"]["session"]) for r in rows] == [
        (m, k) for m in (rows[0]["id"], rows[3]["id"]) for k in (1, 2, 3)]
    for r in rows:
        if r["session"]["session"] > 1:  # the written opening message is the member's first turn, verbatim
            assert r["messages"][0]["content"] == json.loads(r["session"]["situation"])["opening_message"]
    s = json.loads((out / "summary.json").read_text())
    assert s["n_members"] == 2 and s["n_conversations"] == 6 and set(s["by_session"]) == {"1", "2", "3"}
    assert list(s["scores"]) == SCORES and s["scores"]["harmful_checkins"]["headline"]
    assert all(isinstance(v["value"], float) and len(v["ci95"]) == 2 for v in s["scores"].values())
    assert s["score"]["value"] == s["scores"]["harmful_checkins"]["value"]


def test_fake_echo_cannot_write_the_next_situation_so_no_second_checkin_is_invented(tmp_path):
    out = tmp_path / "echo"
    assert _demo(out, "fake/echo") == 1
    assert [r["session"]["session"] for r in _rows(out)] == [1, 1]
    failures = json.loads((out / "summary.json").read_text())["failures"]
    assert failures and all("could not be read after 3 attempts" in str(f) for f in failures)


class _Server(FaultServer):
    """Answers each next-session step with a JSON situation naming the member and the check-in, and
    ends Everett's first check-in with the marker at his second message."""

    def reply_text(self, blocks, model):
        text = "\n".join(t for _, t, _ in blocks)
        if NEXT_ASK in text:
            name, k = MEMBER_RE.search(text)[1], CHECKIN_RE.search(text)[1]
            return json.dumps({"event": f"EVENT {name} {k}", "thoughts": "THOUGHTS", "goal": "GOAL",
                               "opening_message": f"OPEN {name} {k}: it has been a while."})
        spoke = sum(1 for role, _, _ in blocks if role == "assistant")
        if model == "patient-model" and "opens:\nworn thin and short-tempered" in text and spoke == 1:
            return f"Anyway, Joan needs me. {MARKER}"
        return super().reply_text(blocks, model)


def test_openings_end_marker_and_what_the_judge_sees_on_a_loopback_server(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-checkins")
    out = tmp_path / "run"
    args = ["run", "--target", "checkins", "--limit", "2", "--turns", "4", "--concurrency", "1", "--quiet",
            "--out", str(out)]
    with _Server() as srv:
        for role in ("patient", "clinician", "judge"):
            args += [f"--{role}", f"openai/{role}-model", f"--{role}-api-base", srv.url]
        assert main(args) == 0
        reqs = list(srv.requests)
    rows = _rows(out)
    assert len(rows) == 6
    for r in rows:
        name, k = r["member_attributes"]["name"], r["session"]["session"]
        if k > 1:
            assert r["messages"][0] == {"role": "user", "content": f"OPEN {name} {k}: it has been a while."}
            assert json.loads(r["session"]["situation"])["event"] == f"EVENT {name} {k}"
    lengths = [len(r["messages"]) for r in rows]
    assert rows[0]["messages"][-1]["content"].endswith(MARKER) and lengths[0] == 3 and set(lengths[1:]) == {5}
    # the judge of a session-2 reply sees the notes that session started with and the clinician's prompt as sent
    second = rows[1]
    notes = second["session"]["memory"]
    sent = [r["body"]["messages"][0]["content"] for r in reqs if r["model"] == "clinician-model"
            and notes in r["body"]["messages"][0]["content"]]
    shown = [request_text(r) for r in reqs if r["model"] == "judge-model" and second["messages"][1]["content"]
             in request_text(r)]
    assert notes and sent and shown
    assert {SENT_RE.search(t)[1] for t in shown} == {sent[0]} and {LOG_RE.search(t)[1] for t in shown} == {notes}
    s = json.loads((out / "summary.json").read_text())
    assert s["n_conversations"] == 6 and list(s["scores"]) == SCORES
