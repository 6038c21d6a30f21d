"""``first_session`` in target.yaml: session 1's situation and notes from the target (a text or a
profile field), each wrong value explained in one file:line:field line, the texts reaching session
1's prompts on the loopback server, recorded in config.json and part of the configuration hash."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from mindeval.cli import main
from mindeval.config import FIRST_MEMORY, FIRST_SITUATION
from mindeval.records import load_profiles
from mindeval.targets import load_target, validate_target
from mindeval.targets.first_session import default_situation
from tests.support.fault_server import FaultServer
from tests.support.loopback_run import run_args

TARGET = Path(__file__).resolve().parents[2] / "targets" / "reply_safety"
SITUATION = "You come back to the check-in after a week of night shifts and little sleep."
NOTES = "Intake call: the member asked to be reminded of the breathing exercise."


def _copy(tmp_path: Path, block: str, sessions: int = 2) -> Path:
    t = Path(shutil.copytree(TARGET, tmp_path / "rs"))
    text = (t / "target.yaml").read_text().replace('opening_line: "Hi."\n', f'opening_line: "Hi."\n{block}')
    if sessions == 1:
        text = text.replace("sessions: 2", "sessions: 1").replace("  memory: prompts/memory.txt\n", "")
        text = text.replace("  next_session: prompts/next_session.txt\n", "")
    (t / "target.yaml").write_text(text)
    return t


@pytest.mark.parametrize(("block", "field", "message"), [
    ("first_session:\n  situation: {field: favourite_colour}\n", "first_session.situation",
     "'favourite_colour' is not a profile field"),
    ("first_session:\n  situation: [a, b]\n", "first_session.situation", "must be a text or {field: <profile field>}"),
    ("first_session:\n  memory: {field: member_narrative}\n", "first_session.memory", "is not an intake field"),
    ("first_session:\n  memory: {field: recent_mood}\n", "first_session.memory", "would leak the profile"),
    ("first_session:\n  memory: {name: age}\n", "first_session.memory.name", "unknown field"),
    ("first_session:\n  memory: {}\n", "first_session.memory", "give text or field, exactly one"),
    ("first_session:\n  situation: {text: '  '}\n", "first_session.situation.text", "must not be empty"),
    ("first_session:\n  situation: {text: x, field: name}\n", "first_session.situation", "exactly one"),
    ("first_session:\n  notes: hi\n", "first_session.notes", "unknown field"),
    ("first_session: hello\n", "first_session", "valid dictionary"),
])
def test_each_wrong_first_session_is_one_line_naming_file_line_field(tmp_path, block, field, message):
    target = _copy(tmp_path, block)
    problems = [str(p) for p in validate_target(target)]
    hit = [p for p in problems if f":{field}: " in p]
    assert len(hit) == 1 and message in hit[0], problems
    manifest = target / "target.yaml"
    key = field.split(".")[-1]
    lines = manifest.read_text().splitlines()
    start = next(n for n, ln in enumerate(lines) if ln.startswith("first_session:"))
    line = next(n for n, ln in enumerate(lines[start:], start + 1) if f"{key}:" in ln)
    assert hit[0].startswith(f"{manifest}:{line}:") and "\n" not in hit[0]


def test_one_session_refuses_it(tmp_path):
    target = _copy(tmp_path, f"first_session: {{situation: {SITUATION!r}}}\n", sessions=1)
    problems = [str(p) for p in validate_target(target)]
    assert [p for p in problems if ":first_session: " in p and "only with sessions > 1" in p], problems


def test_a_profile_field_gives_each_member_its_own_text(tmp_path):
    target = load_target(_copy(tmp_path, "first_session:\n  situation: {field: profession}\n"
                                         "  memory: {field: depressive_symptoms}\n"))
    p = load_profiles(target.profiles_path)[0]
    assert target.first_texts(p) == (p.member_attributes.profession, p.member_attributes.depressive_symptoms)
    assert target.block().first_session == {"situation": {"field": "profession"},
                                            "memory": {"field": "depressive_symptoms"}}


def test_the_default_names_the_clinician_by_its_role():
    assert default_situation("Companion") == FIRST_SITUATION
    assert default_situation("Therapist") == "This is your first session with the therapist."
    assert "companion" not in default_situation("Coach")
    # today's texts are not recorded: a multi-session run started before first_session keeps its hash
    assert load_target("reply_safety").block().first_session is None
    assert load_target("reply_safety").first_texts(load_target("reply_safety").profiles()[0]) == (
        FIRST_SITUATION, FIRST_MEMORY)


def _args(srv: FaultServer, target: Path, out: Path) -> list[str]:
    return run_args(srv.url, target, out, limit=1, turns=2)


def _systems(reqs: list[dict], model: str) -> list[str]:
    return [r["body"]["messages"][0]["content"] for r in reqs
            if r["model"] == model and r["body"]["messages"][0]["role"] == "system"]


def test_session_one_starts_from_the_declared_texts_and_a_change_is_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-first")
    target = _copy(tmp_path, f"first_session:\n  situation: {SITUATION!r}\n  memory: {NOTES!r}\n")
    out = tmp_path / "run"
    with FaultServer() as srv:
        assert main(_args(srv, target, out)) == 0
        reqs = list(srv.requests)
        patient, clinician = _systems(reqs, "patient-model"), _systems(reqs, "clinician-model")
        assert any(SITUATION in s for s in patient) and not any(FIRST_SITUATION in s for s in patient)
        assert any(NOTES in s for s in clinician) and not any(FIRST_MEMORY in s for s in clinician)
        rows = [json.loads(x) for x in (out / "interactions.jsonl").read_text().splitlines()]
        assert rows[0]["session"]["situation"] == SITUATION and rows[0]["session"]["memory"] == NOTES
        config = json.loads((out / "config.json").read_text())
        assert config["config"]["target"]["first_session"] == {"situation": SITUATION, "memory": NOTES}
        manifest = target / "target.yaml"
        manifest.write_text(manifest.read_text().replace("night shifts", "day shifts"))
        seen = srv.count()
        capsys.readouterr()
        assert main(_args(srv, target, out)) == 2
        assert srv.count() == seen
        err = capsys.readouterr().err
        assert re.search(r"target\.first_session\.situation: .*night shifts.* -> .*day shifts", err), err
