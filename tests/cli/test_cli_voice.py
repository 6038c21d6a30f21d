"""One CLI voice: every --out problem is one line; a refused connection says so."""

from __future__ import annotations

import json

import pytest

from mindeval.cli import main
from mindeval.cli.meta import main as metaeval_main
from tests.support.net import free_port

FAKE = ["--patient", "fake/echo", "--clinician", "fake/echo", "--judge", "fake/judge"]


@pytest.fixture
def a_file(tmp_path):
    f = tmp_path / "a_file"
    f.write_text("x")
    return f


@pytest.mark.parametrize("cmd", [
    ["mindeval", "run", "--profiles", "demo", *FAKE, "--dry-run", "--out", "OUT"],
    ["mindeval", "leaderboard", "runs", "--out", "OUT"],
    ["mindeval", "profiles", "sample", "--n", "2", "-o", "OUT/p.jsonl"],
    ["metaeval", "compare", "--humans", "h.jsonl", "--out", "OUT"],
    ["metaeval", "judge", "--annotations", "h.jsonl", "--judge", "fake/judge", "--out", "OUT"],
])
@pytest.mark.parametrize("where", ["proc", "file/sub"])
def test_every_out_problem_is_one_line(cmd, where, a_file, capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    out = "/proc/x" if where == "proc" else f"{a_file}/sub"
    argv = [a.replace("OUT", out) for a in cmd[1:]]
    rc = (main if cmd[0] == "mindeval" else metaeval_main)(argv)
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("\n") == 1 and "Traceback" not in err
    if where == "proc":
        assert err.startswith(("error: --out: cannot write in /proc", "error: -o: cannot write in /proc"))
    else:
        assert f"cannot be created: {a_file} is a file; give a directory" in err


@pytest.mark.parametrize("provider", ["openai", "hosted_vllm"])
def test_a_refused_connection_says_cannot_connect(provider, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    base = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    out = tmp_path / "run"
    rc = main(["run", "--profiles", "demo", "--limit", "1", "--turns", "2", "--patient", "fake/echo",
               "--judge", "fake/judge", "--clinician", f"{provider}/x", "--clinician-api-base", base,
               "--max-retries", "0", "--out", str(out), "--quiet"])
    assert rc == 1
    (failure,) = json.loads((out / "summary.json").read_text())["failures"]
    assert failure["message"].startswith(f"clinician {provider}/x: cannot connect to {base} (gave up after 1 attempt")
    assert f"cannot connect to {base}" in capsys.readouterr().out
