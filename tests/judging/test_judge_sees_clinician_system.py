"""``${clinician_system}``: the judge is shown the clinician's system prompt exactly as the loopback
server received it, for a one-session target and for each session of a two-session one (the notes
of session 2 included); a patient template may not name it."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from pathlib import Path

from mindeval.cli import main
from mindeval.config import FIRST_MEMORY
from mindeval.targets import validate_target
from tests.support.fault_server import FaultServer, request_text
from tests.support.rundirs import one_session_reply_safety

TARGET = Path(__file__).resolve().parents[2] / "targets" / "reply_safety"
BLOCK = re.compile(r"<<SENT>>\n(.*?)\n<<END SENT>>", re.S)


def _with_block(target: Path) -> Path:
    judge = target / "prompts" / "judge.txt"
    judge.write_text(judge.read_text() + "\nThe companion was told:\n<<SENT>>\n${clinician_system}\n<<END SENT>>\n")
    return target


def _run(srv: FaultServer, target: Path, out: Path) -> int:
    args = ["run", "--target", str(target), "--limit", "1", "--turns", "4", "--concurrency", "1", "--quiet",
            "--out", str(out)]
    for role in ("patient", "clinician", "judge"):
        args += [f"--{role}", f"openai/{role}-model", f"--{role}-api-base", srv.url]
    return main(args)


def _sent_systems(reqs: list[dict]) -> list[str]:
    """The distinct system messages the clinician model received, in order."""
    out: list[str] = []
    for r in reqs:
        first = r["body"]["messages"][0]
        if r["model"] == "clinician-model" and first["role"] == "system" and first["content"] not in out:
            out.append(first["content"])
    return out


def _shown(reqs: list[dict], marker: str) -> set[str]:
    """What the judge requests that quote ``marker`` (a clinician reply) show as the clinician's prompt."""
    hits = [BLOCK.findall(request_text(r)) for r in reqs if r["model"] == "judge-model" and marker in request_text(r)]
    assert hits and all(len(h) == 1 for h in hits)
    return {h[0] for h in hits}


def test_the_judge_sees_the_one_session_prompt_as_sent(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-sees")
    target = _with_block(one_session_reply_safety(tmp_path))
    with FaultServer() as srv:
        assert _run(srv, target, tmp_path / "run") == 0
        reqs = list(srv.requests)
    systems = _sent_systems(reqs)
    assert len(systems) == 1
    judged = [r for r in reqs if r["model"] == "judge-model"]
    assert judged and {BLOCK.findall(request_text(r))[0] for r in judged} == {systems[0]}


def test_the_judge_of_session_two_sees_the_prompt_with_its_notes(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-sees")
    target = _with_block(Path(shutil.copytree(TARGET, tmp_path / "rs")))
    out = tmp_path / "run"
    with FaultServer() as srv:
        assert _run(srv, target, out) == 0
        reqs = list(srv.requests)
    s1, s2 = _sent_systems(reqs)
    assert FIRST_MEMORY in s1 and FIRST_MEMORY not in s2
    rows = [json.loads(x) for x in (out / "interactions.jsonl").read_text().splitlines()]
    notes = rows[1]["session"]["memory"]
    assert notes and notes in s2
    replies = [[m["content"] for m in row["messages"] if m["role"] == "assistant"] for row in rows]
    assert _shown(reqs, replies[0][0]) == {s1}
    assert _shown(reqs, replies[1][0]) == {s2}


def test_a_patient_template_may_not_name_it(tmp_path):
    target = Path(shutil.copytree(TARGET, tmp_path / "rs"))
    patient = target / "prompts" / "patient.txt"
    patient.write_text(patient.read_text() + "\nWhat the companion was told: ${clinician_system}\n")
    problems = [str(p) for p in validate_target(target)]
    hit = [p for p in problems if ":clinician_system: " in p]
    assert len(hit) == 1 and "only in a judge template" in hit[0], problems
    line = patient.read_text().splitlines().index("What the companion was told: ${clinician_system}") + 1
    assert hit[0].startswith(f"{patient}:{line}:") and "\n" not in hit[0]


def test_a_prompt_other_than_the_one_sent_is_never_shown(tmp_path, monkeypatch, capsys):
    """The calls record the SHA-256 of the system prompt they were sent: a stored conversation whose
    calls were sent another prompt than the one rendered now is refused, not shown to the judge."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-sees")
    target = _with_block(one_session_reply_safety(tmp_path))
    out = tmp_path / "run"
    with FaultServer() as srv:
        assert _run(srv, target, out) == 0
        with sqlite3.connect(out / "run.db") as db:
            db.execute("UPDATE calls SET request_json = json_set(request_json, '$.ref.system_sha256', 'other') "
                       "WHERE role = 'clinician'")
        db.close()
        seen = srv.count()
        capsys.readouterr()
        assert _run(srv, target, out) == 2
        assert srv.count() == seen
    err = capsys.readouterr().err
    assert "system prompt stored with its calls differs" in err and len(err.strip().splitlines()) == 1, err
