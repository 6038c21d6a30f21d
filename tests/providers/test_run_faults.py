"""``mindeval run`` end to end against the fault server: results, errors, secrets."""

from __future__ import annotations

import json

from provkit import SECRET

from mindeval.cli import main

ROLES = ("patient", "clinician", "judge")


def run_args(srv, out, *extra: str) -> list[str]:
    args = ["run", "--quiet", "--limit", "1", "--turns", "2", "--out", str(out), *extra]
    for r in ROLES:
        args += [f"--{r}", f"openai/{r}-model", f"--{r}-api-base", srv.url]
    return args


def test_full_run_against_server_never_stores_or_prints_the_key(server, tmp_path, capsys):
    server.script([{"content": "<think>consider</think>Thanks for telling me that.",
                    "reasoning": "provider trace"}], model="clinician-model")
    out = tmp_path / "D"
    assert main(run_args(server, out)) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_judged"] == 1
    turns = [json.loads(x) for x in (out / "interactions.jsonl").read_text().splitlines()][0]["turns"]
    assert turns[1]["reasoning"].startswith("provider trace") and "<think>" not in turns[1]["content"]
    assert server.count(model="judge-model") == 1 and server.count(model="clinician-model") == 1
    assert all(r["auth"] == f"Bearer {SECRET}" for r in server.requests)
    for f in out.iterdir():
        assert SECRET.encode() not in f.read_bytes(), f"API key leaked into {f.name}"
    printed = capsys.readouterr()
    assert SECRET not in printed.out + printed.err


def test_401_stops_with_the_provider_message_and_no_key(server, tmp_path, capsys):
    server.script(["401"] * 20, model="clinician-model")
    out = tmp_path / "D"
    main(run_args(server, out))
    printed = capsys.readouterr()
    recorded = (out / "interactions.jsonl").read_text()
    assert "clinician openai/clinician-model: 401 AuthenticationError: Incorrect API key provided" in recorded
    assert "tenacity" not in recorded + printed.out + printed.err
    assert SECRET not in printed.out + printed.err
    assert server.count(model="clinician-model") == 1  # never retried
    for f in out.iterdir():
        assert SECRET.encode() not in f.read_bytes(), f"API key leaked into {f.name}"
