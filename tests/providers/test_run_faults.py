"""``mindeval run`` end to end against the fault server, one fault at a time and mixed.

For each fault: the run finishes (or stops with one clear line for a permanent fault),
the server's request counts show retries within bounds and no completed call repeated,
nothing is defaulted, and the exit code and summary say what happened.
"""

from __future__ import annotations

import json

from provkit import SECRET
from support.fault_server import JUDGE_MALFORMED, judge_json

from mindeval.cli import main

ROLES = ("patient", "clinician", "judge")
FAST = ["--max-retries", "3", "--retry-budget-s", "30"]


def run(srv, out, *extra: str, limit: int = 1, turns: int = 2) -> int:
    args = ["run", "--quiet", "--limit", str(limit), "--turns", str(turns), "--out", str(out), *FAST, *extra]
    for r in ROLES:
        args += [f"--{r}", f"openai/{r}-model", f"--{r}-api-base", srv.url]
    return main(args)


def summary(out) -> dict:
    return json.loads((out / "summary.json").read_text())


def ok_requests(srv, model: str) -> int:
    return srv.count(model=model, outcome="ok") + srv.count(model=model, outcome="content")


def test_full_run_never_stores_or_prints_the_key(server, tmp_path, capsys):
    server.script([{"content": "<think>consider</think>Thanks for telling me that.",
                    "reasoning": "provider trace"}], model="clinician-model")
    out = tmp_path / "D"
    assert run(server, out) == 0
    assert summary(out)["n_judged"] == 1
    turns = [json.loads(x) for x in (out / "interactions.jsonl").read_text().splitlines()][0]["turns"]
    assert turns[1]["reasoning"].startswith("provider trace") and "<think>" not in turns[1]["content"]
    assert server.count(model="judge-model") == 1 and server.count(model="clinician-model") == 1
    assert all(r["auth"] == f"Bearer {SECRET}" for r in server.requests)
    for f in out.iterdir():
        assert SECRET.encode() not in f.read_bytes(), f"API key leaked into {f.name}"
    printed = capsys.readouterr()
    assert SECRET not in printed.out + printed.err


def test_401_stops_with_one_clear_line_never_retried(server, tmp_path, capsys):
    server.script(["401"] * 20, model="clinician-model")
    out = tmp_path / "D"
    assert run(server, out, limit=2) == 1
    text = capsys.readouterr().out
    line = "2 interactions failed  clinician openai/clinician-model: 401 AuthenticationError: Incorrect API key provided"
    assert line in text and text.count("Incorrect API key") == 1
    assert "tenacity" not in text and SECRET not in text and "Traceback" not in text
    assert server.count(model="clinician-model") == 2  # one request per interaction, never retried
    assert server.count(model="judge-model") == 0
    s = summary(out)
    assert s["n_failed_interactions"] == 2 and s["n_judged"] == 0
    assert s["CAC"] is None and s["average"] is None and s["n_means_over"] == 0
    for f in out.iterdir():
        assert SECRET.encode() not in f.read_bytes(), f"API key leaked into {f.name}"


def test_a_bad_key_stops_the_run_instead_of_failing_every_profile(server, tmp_path, capsys):
    server.script(["401"], model="clinician-model")
    out = tmp_path / "D"
    assert run(server, out, "--concurrency", "1", limit=4) == 1
    text = capsys.readouterr().out
    assert "STOPPED: no new interaction started after a 401 from openai/clinician-model" in text
    assert server.count(model="clinician-model") == 1  # not once per profile
    s = summary(out)
    assert s["stopped"] and s["n_failed_interactions"] == 1 and s["n_means_over"] == 0
    # the key is fixed: the same command finishes the run
    assert run(server, out, "--concurrency", "1", limit=4) == 0
    assert summary(out)["n_means_over"] == 4 and not summary(out)["stopped"]


def test_429_and_5xx_are_retried_and_the_run_completes(server, tmp_path, capsys):
    server.script([{"status": 429, "retry_after": 0.2}, "503", "ok"] * 2, model="clinician-model")
    server.script(["500", "ok"], model="judge-model")
    out = tmp_path / "D"
    assert run(server, out, turns=4) == 0
    s = summary(out)
    assert s["n_judged"] == 1 and s["n_failed_interactions"] == 0
    assert server.count(model="clinician-model") == 6  # 2 turns x (429, 503, ok)
    assert server.count(model="judge-model") == 2
    assert "FAILED" not in capsys.readouterr().out


def test_a_hanging_server_does_not_stall_the_run(server, tmp_path):
    server.script(["hang", "hang", "ok"], model="clinician-model")
    out = tmp_path / "D"
    assert run(server, out, "--clinician-timeout", "0.5") == 0
    assert server.count(model="clinician-model") == 3 and summary(out)["n_judged"] == 1


def test_empty_replies_fail_the_turn_after_bounded_retries_then_rerun_completes(server, tmp_path, capsys):
    server.script(["ok", "empty", "empty", "empty"], model="clinician-model")  # 1 attempt + 2 empty retries
    out = tmp_path / "D"
    assert run(server, out, turns=4) == 1
    assert "clinician openai/clinician-model: empty reply (3 attempts)" in capsys.readouterr().out
    assert server.count(model="clinician-model") == 4
    rows = [json.loads(x) for x in (out / "interactions.jsonl").read_text().splitlines()]
    assert rows[0]["status"] != "complete" and all(t["content"] for t in rows[0]["turns"])
    assert run(server, out, turns=4) == 0  # a re-run retries what failed ...
    assert server.count(model="clinician-model") == 5
    # ... and never repeats a completed call: turns 1 and 2 were not asked again.
    assert ok_requests(server, "clinician-model") == 2 and ok_requests(server, "patient-model") == 2
    assert summary(out)["n_judged"] == 1


def test_malformed_and_missing_axis_judge_replies_are_never_defaulted(server, tmp_path, capsys):
    bad = [{"content": JUDGE_MALFORMED}, {"content": judge_json(missing="ASCQ")}, "500"]
    server.script(bad * 2, model="judge-model")
    out = tmp_path / "D"
    assert run(server, out, "--judge-retries", "2") == 1
    s = summary(out)
    assert s["n_judged"] == 0 and s["n_failed_judgments"] == 1
    judged = [json.loads(x) for x in (out / "judgments.jsonl").read_text().splitlines()]
    assert judged and all(not j.get("scores") for j in judged)
    assert "judgment failed" in capsys.readouterr().out
    first = server.count(model="judge-model")
    assert 2 <= first <= 6
    assert run(server, out, "--judge-retries", "2") in (0, 1)
    assert server.count(model="judge-model") > first  # a re-run asks the judge again


def test_mixed_faults_finish_with_every_turn_and_judgment(server, tmp_path):
    server.configure(rates={"429": 0.15, "500": 0.1, "503": 0.05, "empty": 0.05, "hang": 0.03, "drop": 0.03})
    out = tmp_path / "D"
    rc = run(server, out, "--max-retries", "8", "--clinician-timeout", "2", "--patient-timeout", "2",
             "--judge-timeout", "2", "--retry-budget-s", "60", limit=3, turns=4)
    s = summary(out)
    assert rc == 0 and s["n_judged"] == 3 and s["n_failed_interactions"] == 0
    # Every completed call was requested once: 3 x 2 patient + 3 x 2 clinician turns, 3 judgments.
    assert ok_requests(server, "patient-model") == 6 and ok_requests(server, "clinician-model") == 6
    assert ok_requests(server, "judge-model") == 3
