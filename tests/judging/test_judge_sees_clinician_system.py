"""``${clinician_system}``: the judge is shown the clinician's system prompt exactly as the loopback
server received it, for a one-session target and for each session of a two-session one (the notes
of session 2 included); a patient template may not name it. The ``--dry-run`` estimates (a run's,
a re-judge's) price the prompt the judge is shown, and ``metaeval judge`` of a run directory shows it."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from pathlib import Path

import pytest

from mindeval.cli import main
from mindeval.cli.meta import main as metaeval_main
from mindeval.config import FIRST_MEMORY
from mindeval.engine.estimate import estimate_run
from mindeval.engine.loop import run_benchmark
from mindeval.engine.prepare import prepare
from mindeval.llm.gateway import ModelSpec
from mindeval.run_options import RunOptions
from mindeval.targets import validate_target
from tests.support.fault_server import FaultServer, request_text
from tests.support.rundirs import one_session_reply_safety

TARGET = Path(__file__).resolve().parents[2] / "targets" / "reply_safety"
BLOCK = re.compile(r"<<SENT>>\n(.*?)\n<<END SENT>>", re.S)


def _with_block(target: Path) -> Path:
    judge = target / "prompts" / "judge.txt"
    judge.write_text(judge.read_text() + "\nThe companion was told:\n<<SENT>>\n${clinician_system}\n<<END SENT>>\n")
    return target


def _long_clinician(target: Path) -> Path:
    """The clinician's prompt made long (about 1,300 tokens of house rules), so that a judge request
    without it is far shorter than one with it."""
    tpl = target / "prompts" / "clinician.txt"
    tpl.write_text(tpl.read_text() + "\nHouse rules: " + "keep replies short and kind; " * 180 + "\n")
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


def _judge_row(out: str) -> list[str]:
    """The judge row of a printed estimate: role, model, calls, input tokens, cache read, billed, ..."""
    return next(line.split() for line in out.splitlines() if line.startswith("judge "))


def test_the_dry_run_estimates_price_the_prompt_the_judge_is_shown(tmp_path, monkeypatch, capsys):
    """A two-session run whose judge template names ${clinician_system} (and ${memory}): told the replies'
    length, the run's estimate matches the judge input the server counted (session 1's prompt exactly as
    rendered, session 2's notes approximated at the clinician's reply length); the re-judge's estimate,
    over the stored transcripts and notes, matches what the re-judge then sends."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-sees")
    target = _long_clinician(_with_block(Path(shutil.copytree(TARGET, tmp_path / "rs"))))
    with FaultServer(reply_words=40) as srv:
        specs = {r: ModelSpec(model=f"openai/{r}-model", api_base=srv.url) for r in ("patient", "clinician", "judge")}
        opts = RunOptions(**specs, target=str(target), limit=2, turns=4, out=tmp_path / "run", concurrency=1,
                          progress=False)
        s = run_benchmark(opts, echo=None)
        assert s["n_judged"] == 4, s.get("failures")
        measured = s["tokens"]
        replies = {r: round(v["completion_tokens"] / v["calls"]) for r, v in measured.items()}
        est = estimate_run(prepare(opts), replies)
        for role in ("judge", "clinician"):
            assert est[role]["calls"] == measured[role]["calls"]
            assert est[role]["prompt_tokens"] == pytest.approx(measured[role]["prompt_tokens"], rel=0.03), role
        rejudge = ["judge", str(tmp_path / "run"), "--judge", "openai/judge2-model", "--judge-api-base", srv.url,
                   "--out", str(tmp_path / "J"), "--quiet"]
        capsys.readouterr()
        assert main([*rejudge, "--dry-run"]) == 0
        row = _judge_row(capsys.readouterr().out)
        assert main(rejudge) == 0
    again = json.loads((tmp_path / "J" / "summary.json").read_text())["tokens"]["judge"]
    assert row[1:3] == ["openai/judge2-model", str(again["calls"])]
    assert int(row[3]) == pytest.approx(again["prompt_tokens"], rel=0.01)


def test_metaeval_judge_of_a_run_directory_shows_each_session_its_prompt_as_sent(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-sees")
    target = _with_block(Path(shutil.copytree(TARGET, tmp_path / "rs")))
    out = tmp_path / "run"
    with FaultServer() as srv:
        assert _run(srv, target, out) == 0
        s1, s2 = _sent_systems(list(srv.requests))
        seen = srv.count()
        assert metaeval_main(["judge", "--annotations", str(out), "--judge", "openai/judge2-model",
                              "--judge-api-base", srv.url, "--out", str(tmp_path / "J")]) == 0
        reqs = list(srv.requests)[seen:]
    assert reqs and {r["model"] for r in reqs} == {"judge2-model"}
    rows = [json.loads(x) for x in (out / "interactions.jsonl").read_text().splitlines()]
    for row, sent in zip(rows, (s1, s2), strict=True):
        reply = next(m["content"] for m in row["messages"] if m["role"] == "assistant")
        hits = [BLOCK.findall(request_text(r)) for r in reqs if reply in request_text(r)]
        assert hits and {h[0] for h in hits} == {sent}
