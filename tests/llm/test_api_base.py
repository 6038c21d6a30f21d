"""Local servers are first-class: one ``--api-base`` (or run-file key ``api_base``) serves every
role unless a role names its own server, and a server the user names needs no API key (issue 29)."""

from __future__ import annotations

import json

from mindeval.cli import main
from mindeval.run_options import RunOptions
from tests.support.fault_server import FaultServer

RUN = ["run", "--limit", "1", "--turns", "2", "--quiet"]
MODELS = ["--patient", "openai/patient-model", "--clinician", "openai/clinician-model", "--judge", "openai/judge-model"]


def test_one_api_base_serves_every_role_without_a_key(server, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")  # no dummy key: the run used to stop at "missing API key"
    assert main([*RUN, *MODELS, "--api-base", server.url, "--out", str(tmp_path / "run")]) == 0
    assert {r["model"] for r in server.requests} == {"patient-model", "clinician-model", "judge-model"}
    assert all(r["auth"] is None for r in server.requests)
    config = json.loads((tmp_path / "run" / "config.json").read_text())["config"]
    assert {config[role]["api_base"] for role in ("patient", "clinician", "judge")} == {server.url}


def test_a_roles_own_api_base_wins_and_a_set_key_is_sent(server, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local-test")
    with FaultServer() as judge_server:
        assert main([*RUN, *MODELS, "--api-base", server.url, "--judge-api-base", judge_server.url,
                     "--out", str(tmp_path / "run")]) == 0
        assert {r["model"] for r in judge_server.requests} == {"judge-model"}
    assert {r["model"] for r in server.requests} == {"patient-model", "clinician-model"}
    assert {r["auth"] for r in server.requests} == {"Bearer sk-local-test"}


def test_a_run_files_api_base_is_the_same_key(server, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    run_file = tmp_path / "run.yaml"
    run_file.write_text(f"patient: openai/patient-model\nclinician: openai/clinician-model\njudge: openai/judge-model\n"
                        f"api_base: {server.url}\nlimit: 1\nturns: 2\nquiet: true\nout: {tmp_path / 'run'}\n")
    assert main(["run", "--config", str(run_file)]) == 0
    assert {r["model"] for r in server.requests} == {"patient-model", "clinician-model", "judge-model"}


def test_in_process_models_keep_no_api_base():
    opts = RunOptions(out=".", api_base="http://127.0.0.1:1/v1", judge="fake/judge", clinician="openai/m")
    assert (opts.patient.api_base, opts.judge.api_base, opts.clinician.api_base) == \
        (None, None, "http://127.0.0.1:1/v1")
