"""Every clinician meets the same patients' dice (:mod:`mindeval.seeds`): on every shipped target two
runs with the same ``--seed`` and different clinicians send the patient model the same seed at every
turn and step (the ``seed`` of each request a loopback server receives), while runs stored before
seed schemes (scheme 1: seeds from the run id) resume under their own scheme without a new call."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from pathlib import Path

import pytest

from mindeval.cli import main
from mindeval.records import CONFIG_FILE, RunConfig
from mindeval.run_options import RunOptions
from mindeval.runfile import read_run_file
from mindeval.seeds import turn_seed
from mindeval.targets import builtin_names
from tests.support.fault_server import FaultServer

SEED = 7
PATIENT = "patient-model"


def _args(srv: FaultServer, target: str, out: Path, clinician: str, *more: str) -> list[str]:
    args = ["run", "--target", target, "--limit", "2", "--turns", "4", "--concurrency", "1", "--quiet",
            "--seed", str(SEED), "--out", str(out), *more]
    for role, model in (("patient", PATIENT), ("clinician", clinician), ("judge", "judge-model")):
        args += [f"--{role}", f"openai/{model}", f"--{role}-api-base", srv.url]
    return args


def _seeds(srv: FaultServer, start: int, model: str) -> list[int]:
    """The ``seed`` of each request ``model`` received since request ``start``, in order."""
    return [r["body"].get("seed") for r in srv.requests[start:] if r["model"] == model]


def _stored(out: Path, role: str) -> list[dict]:
    """The requests of ``role``'s calls the run stored."""
    with sqlite3.connect(out / "run.db") as db:
        rows = db.execute("select request_json from calls where status = 'ok' and role = ?", (role,)).fetchall()
    return [json.loads(r[0]) for r in rows]


@pytest.mark.parametrize("target", builtin_names())
def test_two_clinicians_meet_the_same_patient_seeds_turn_by_turn(tmp_path, monkeypatch, target):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-seeds")
    patient, clinician = [], []
    with FaultServer() as srv:
        for name in ("clinician-a", "clinician-b"):
            start = srv.count()
            main(_args(srv, target, tmp_path / name, name))
            patient.append(_seeds(srv, start, PATIENT))
            clinician.append(_seeds(srv, start, name))
    assert patient[0] == patient[1], f"{target}: the patient's seeds differ between clinicians"
    assert len(patient[0]) >= 2 and None not in patient[0] and len(set(patient[0])) == len(patient[0])
    assert clinician[0] == clinician[1] and len(clinician[0]) >= 2  # the clinician's, from the same key
    for name in ("clinician-a", "clinician-b"):
        out = tmp_path / name
        assert RunConfig.read(out / CONFIG_FILE).seed_scheme == 2
        stored = _stored(out, "patient")
        assert stored and all(re.fullmatch(rf"{target}:[^:]+:r0:s\d", r["seed_key"]) for r in stored)
        turns = [r for r in stored if "ref" in r]  # a turn's call (a session's situation has none)
        assert turns and all(r["seed"] == turn_seed(SEED, r["seed_key"], r["ref"]["turns"]) for r in turns)


def test_scheme_1_seeds_from_the_run_id_and_its_config_replays(tmp_path, monkeypatch):
    """The scheme of runs made before, still available (a replayed config.json): no patient seed shared."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-seeds")
    seeds = []
    with FaultServer() as srv:
        for name in ("clinician-a", "clinician-b"):
            run = tmp_path / f"{name}.yaml"
            keys = {"limit": 1, "turns": 4, "seed": SEED, "seed_scheme": 1, "quiet": True,
                    "out": str(tmp_path / name)}
            keys.update({role: {"model": f"openai/{m}", "api_base": srv.url}
                         for role, m in (("patient", PATIENT), ("clinician", name), ("judge", "judge-model"))})
            run.write_text(json.dumps(keys))
            start = srv.count()
            assert main(["run", "--config", str(run)]) == 0
            seeds.append(_seeds(srv, start, PATIENT))
        config = json.loads((tmp_path / "clinician-a" / CONFIG_FILE).read_text())["config"]
        assert "seed_scheme" not in config  # scheme 1 is recorded by its absence, as before
        start = srv.count()
        assert main(["run", "--config", str(tmp_path / "clinician-a" / CONFIG_FILE)]) == 0
        assert srv.count() == start  # the replay resumes it: nothing asked again
    assert len(seeds[0]) == 2 and not set(seeds[0]) & set(seeds[1])
    assert read_run_file(tmp_path / "clinician-a" / CONFIG_FILE)[0]["seed_scheme"] == 1
    with pytest.raises(ValueError):
        RunOptions(out=tmp_path, seed_scheme=3)


FIXTURE = Path(__file__).parent / "data" / "run_before_seed_scheme"  # main's multi-session run (README)
FIXTURE_BASE = "http://127.0.0.1:9/v1"  # nothing listens there: a request sent would fail the run


def test_a_run_stored_with_scheme_1_resumes_with_it_and_buys_nothing(tmp_path, capsys):
    """Its turns, session steps and judgments forgotten, the run asks again under its own scheme:
    every request (seed included) is in the call log. Its config hash is the one main recorded."""
    out = tmp_path / "run"
    out.mkdir()
    for name in ("run.db", CONFIG_FILE):
        shutil.copy(FIXTURE / name, out / name)
    recorded = json.loads((FIXTURE / CONFIG_FILE).read_text())["config_hash"]
    assert RunConfig.read(out / CONFIG_FILE).hash() == recorded
    with sqlite3.connect(out / "run.db") as db:
        for sql in ("DELETE FROM judgments", "DELETE FROM reply_judgments", "DELETE FROM turns WHERE call_id IS NOT NULL",
                    "UPDATE interactions SET status = 'running'",
                    "UPDATE sessions SET memory = NULL, situation = NULL, memory_call_id = NULL, "
                    "situation_call_id = NULL WHERE session > 1"):
            db.execute(sql)
    args = ["run", "--target", "reply_safety", "--limit", "1", "--turns", "2", "--out", str(out)]
    for role in ("patient", "clinician", "judge"):
        args += [f"--{role}", f"openai/{role}-model", f"--{role}-api-base", FIXTURE_BASE]
    assert main(args) == 0
    assert "calls made: 0   reused from store: 8" in capsys.readouterr().out
    config = json.loads((out / CONFIG_FILE).read_text())
    assert config["config_hash"] == recorded and "seed_scheme" not in config["config"]
    assert len((out / "judgments.jsonl").read_text().splitlines()) == 2
