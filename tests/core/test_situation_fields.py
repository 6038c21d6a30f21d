"""A structured next situation (``situation_fields``, ``situation_opening``): validation, the fields
reaching session 2's patient prompt, its verbatim scripted opening, and an unreadable answer
retried then recorded failed (no situation invented), on a loopback server."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from mindeval.cli import main
from mindeval.situation import parse_situation
from mindeval.targets import validate_target
from tests.support.fault_server import FaultServer, request_text
from tests.support.loopback_run import run_args

TARGET = Path(__file__).resolve().parents[2] / "targets" / "reply_safety"
NEXT_ASK = "You write the background of a role-play"  # prompts/next_session.txt
DECLARED = "situation_fields: [event, goal, opening_message]\nsituation_opening: opening_message\n"
ANSWER = {"event": "EVENT-lost the bus pass", "goal": "GOAL-sleep better", "opening_message": "OPEN-so, about that pass"}


def _target(tmp_path: Path, declared: str = DECLARED, patient: str = "\nToday: ${situation_event} / ${situation_goal}") -> Path:
    t = shutil.copytree(TARGET, tmp_path / "rs")
    (t / "target.yaml").write_text((t / "target.yaml").read_text().replace("sessions: 2\n", "sessions: 2\n" + declared))
    p = t / "prompts" / "patient.txt"
    p.write_text(p.read_text() + patient)
    return t


def test_validation_refuses_bad_declarations_in_one_line(tmp_path):
    assert validate_target(_target(tmp_path / "ok")) == []
    bad = [str(p) for p in validate_target(_target(tmp_path / "a", patient="\n${situation_mood}"))]
    assert len(bad) == 1 and "\n" not in bad[0] and bad[0].startswith(str(tmp_path / "a" / "rs" / "prompts" / "patient.txt"))
    assert ":situation_mood: " in bad[0] and "names no declared situation field" in bad[0]
    bad = [str(p) for p in validate_target(_target(tmp_path / "b", "situation_fields: [event]\nsituation_opening: goal\n"))]
    assert any(":situation_opening: " in p and "must be one of situation_fields" in p for p in bad), bad
    one = _target(tmp_path / "c", patient="")
    (one / "target.yaml").write_text((one / "target.yaml").read_text().replace("sessions: 2", "sessions: 1"))
    assert any(":situation_fields: " in str(p) and "only with sessions > 1" in str(p) for p in validate_target(one))


class _Server(FaultServer):
    """Answers the next-session step with ``answers`` in turn (the last repeated)."""

    def __init__(self, answers: list[str]) -> None:
        super().__init__()
        self.answers = answers

    def reply_text(self, blocks, model):
        if any(NEXT_ASK in text for _, text, _ in blocks):
            asked = sum(1 for r in self.requests if NEXT_ASK in request_text(r))
            return self.answers[min(asked, len(self.answers)) - 1]
        return super().reply_text(blocks, model)


def _args(target: Path, srv: FaultServer, out: Path) -> list[str]:
    return run_args(srv.url, target, out, limit=1, turns=4)


def test_session_two_gets_the_fields_and_opens_with_the_verbatim_line(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-situation")
    target, out = _target(tmp_path), tmp_path / "run"
    with _Server(["not json", json.dumps(ANSWER)]) as srv:
        assert main(_args(target, srv, out)) == 0
        asks = [r for r in srv.requests if NEXT_ASK in request_text(r)]
        assert len(asks) == 2 and "could not be read" in request_text(asks[1])  # retried with the reason
        rows = [json.loads(x) for x in (out / "interactions.jsonl").read_text().splitlines()]
        second = rows[1]
        assert json.loads(second["session"]["situation"]) == ANSWER
        assert second["messages"][0]["role"] == "user" and second["messages"][0]["content"] == ANSWER["opening_message"]
        with sqlite3.connect(out / "run.db") as db:  # stored as the patient's scripted turn, like opening_line
            assert db.execute("SELECT role, author, content FROM turns WHERE interaction_id = ? AND idx = 0",
                              (second["id"],)).fetchall() == [("patient", "scripted", ANSWER["opening_message"])]
        systems = [r["body"]["messages"][0]["content"] for r in srv.requests if r["model"] == "patient-model"
                   and r["body"]["messages"][0]["role"] == "system" and ANSWER["event"] in r["body"]["messages"][0]["content"]]
        assert systems and all(f"Today: {ANSWER['event']} / {ANSWER['goal']}" in s for s in systems)
        config = json.loads((out / "config.json").read_text())
        assert config["config"]["target"]["situation_fields"] == ["event", "goal", "opening_message"]
        assert config["config"]["target"]["situation_opening"] == "opening_message"
        seen = srv.count()
        assert main(_args(target, srv, out)) == 0
        assert srv.count() == seen  # resume repeats no call, the retry included


def test_an_unreadable_answer_is_retried_then_recorded_failed(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-situation")
    target, out = _target(tmp_path), tmp_path / "run"
    with _Server(['{"event": "x"}']) as srv:
        assert main(_args(target, srv, out)) != 0
        assert sum(1 for r in srv.requests if NEXT_ASK in request_text(r)) == 3
        rows = [json.loads(x) for x in (out / "interactions.jsonl").read_text().splitlines()]
        assert len(rows) == 1 and rows[0]["session"]["session"] == 1  # no session 2 on an invented situation
        assert "could not be read after 3 attempts" in (out / "summary.json").read_text()


def test_a_model_that_accepts_a_schema_is_sent_the_answer_s_schema(tmp_path, monkeypatch):
    """Where the provider table says the patient model accepts a JSON-schema ``response_format``
    (as the embedded model does), the next-session step asks for exactly the declared fields,
    the opening one non-empty; a model that does not is sent none."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-situation")
    target = _target(tmp_path)
    with _Server([json.dumps(ANSWER)]) as srv:
        args = _args(target, srv, tmp_path / "run")
        args[args.index("openai/patient-model")] = "openai/gpt-4o-mini"
        assert main(args) == 0
        ask = next(r for r in srv.requests if NEXT_ASK in request_text(r))
        schema = ask["body"]["response_format"]["json_schema"]["schema"]
        assert schema["required"] == ["event", "goal", "opening_message"] and not schema["additionalProperties"]
        assert schema["properties"]["opening_message"] == {"type": "string", "minLength": 1}
        assert schema["properties"]["event"] == {"type": "string"}
        assert main(_args(target, srv, tmp_path / "other")) == 0
        plain = [r for r in srv.requests if NEXT_ASK in request_text(r)][-1]
        assert "response_format" not in plain["body"]


def test_an_answer_that_copies_the_form_s_placeholder_is_unreadable():
    """SmolLM2 answers the checkins form with its placeholders (``{"event": "<text>", ...}``): no
    situation, so it is asked again (then the step fails), never started from as a check-in."""
    fields = ["event", "goal", "opening_message"]
    with pytest.raises(ValueError, match="placeholder copied, not filled in: event, opening_message"):
        parse_situation(json.dumps({"event": "<text>", "goal": "rest", "opening_message": " <text> "}), fields)
    ok = {"event": "a <b>bold</b> week", "goal": "<3", "opening_message": "hi"}
    assert parse_situation(json.dumps(ok), fields) == ok
