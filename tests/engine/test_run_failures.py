"""Loud failures, retry with --retry-refused, --max-cost, --dry-run and option checks of `mindeval run`."""


import pytest

from mindeval.cli import main
from mindeval.llm.fake import script
from tests.support.rundirs import summary

GOOD = '{"answer_code": "<NONCE>", "CAC": 3, "EPC": 5, "AR": 2, "TRA": 4, "ASCQ": 1}'  # <NONCE>: the round's code
ECHO = ["--patient", "fake/echo", "--clinician", "fake/echo", "--quiet"]


def test_failed_judgment_is_reported_final_and_retried_with_new_calls_on_request(tmp_path, capsys):
    out = tmp_path / "D"
    judge = script("retry-judge", ["nope", "still nope"])
    args = [*ECHO, "--judge", judge, "--limit", "1", "--turns", "2", "--judge-retries", "2", "--out", str(out)]
    assert main(["run", *args]) == 1
    printed = capsys.readouterr().out
    assert "scored 0/1 conversations of the benchmark" in printed
    assert f"1 judgment failed  judge {judge}: no scores found" in printed and "Re-run the same command" in printed
    assert summary(out)["n_failed_judgments"] == 1 and "--retry-refused" in printed
    script("retry-judge", [GOOD])  # the provider answers properly now
    assert main(["run", *args]) == 1  # a plain re-run: the refused judgment is final (docs/judging.md)
    assert summary(out)["n_failed_judgments"] == 1 and summary(out)["calls_made"] == 0
    capsys.readouterr()
    assert main(["run", *args, "--retry-refused"]) == 0
    s = summary(out)
    assert s["n_judged"] == 1 and s["n_failed_judgments"] == 0 and s["n_means_over"] == 1
    assert s["calls_made"] == 1  # the stored turns are kept, only the judge is asked anew
    assert (s["n_retried_judgments"], s["n_refused_rounds"], s["n_judge_rounds"], s["n_judge_attempts"]) == (1, 1, 2, 3)
    assert "scored 1/1 conversations of the benchmark; means over them\n" in capsys.readouterr().out


def test_a_judgment_with_no_judge_reply_is_asked_again_by_a_plain_rerun(tmp_path):
    """Every attempt a failed call (no reply read): nothing was refused, so nothing to select on;
    a plain re-run judges it as its next round, and the round is counted."""
    out = tmp_path / "D"
    judge = script("unanswered-judge", [])  # every call fails: script exhausted
    args = [*ECHO, "--judge", judge, "--limit", "1", "--turns", "2", "--judge-retries", "2", "--max-retries", "0",
            "--out", str(out)]
    assert main(["run", *args]) == 1
    assert summary(out)["n_failed_judgments"] == 1
    script("unanswered-judge", [GOOD])
    assert main(["run", *args]) == 0
    s = summary(out)
    assert s["n_failed_judgments"] == 0 and s["calls_made"] == 1
    assert (s["n_judge_rounds"], s["n_refused_rounds"], s["n_judge_attempts"]) == (2, 1, 3)


def test_failed_interaction_exits_non_zero_and_resumes(tmp_path, capsys):
    out = tmp_path / "D"
    clin = script("retry-clin", [])
    args = ["--patient", "fake/echo", "--clinician", clin, "--judge", "fake/judge", "--quiet",
            "--limit", "2", "--turns", "2", "--out", str(out)]
    assert main(["run", *args]) == 1
    printed = capsys.readouterr().out
    assert f"2 interactions failed  clinician {clin}: " in printed and "script exhausted" in printed
    assert "scored 0/2 conversations of the benchmark; means over them  (INCOMPLETE" in printed
    s = summary(out)
    assert s["n_failed_interactions"] == 2 and s["failures"][0]["role"] == "clinician"
    script("retry-clin", ["C1", "C2"])
    assert main(["run", *args]) == 0
    s = summary(out)
    assert s["n_complete"] == 2 and s["calls_made"] == 2 * 2 + 2 and s["failures"] == []


def test_concurrency_zero_is_an_error_in_the_python_api_too(tmp_path):
    from pydantic import ValidationError

    from mindeval.engine.loop import run_benchmark
    from mindeval.run_options import RunOptions

    with pytest.raises(ValidationError, match="concurrency"):  # the field's own bound, as on the command line
        run_benchmark(RunOptions(out=tmp_path / "D", concurrency=0), echo=None)
    assert not (tmp_path / "D").exists()


def test_dry_run_estimates_without_calling(tmp_path, capsys):
    from mindeval.llm import fake

    before = sum(fake.CALLS.values())
    out = tmp_path / "D"
    assert main(["run", *ECHO, "--judge", "fake/judge", "--limit", "3", "--turns", "4", "--out", str(out),
                 "--dry-run"]) == 0
    printed = capsys.readouterr().out
    assert "dry run: 3 profiles x 4 turns" in printed and "total: 15 calls" in printed
    lines = {ln.split()[0]: ln.split() for ln in printed.splitlines() if ln.split()}
    assert lines["clinician"][2] == "6" and lines["patient"][2] == "6" and lines["judge"][2] == "3"
    assert "replies of patient 80, clinician 150" in printed  # the method is printed with the estimate
    assert main(["run", *ECHO, "--judge", "fake/judge", "--limit", "3", "--turns", "4", "--out", str(out),
                 "--dry-run", "--assume-reply-tokens", "clinician=40"]) == 0
    shorter = {ln.split()[0]: ln.split() for ln in capsys.readouterr().out.splitlines() if ln.split()}
    assert "clinician 40," in " ".join(shorter["method:"])
    assert int(shorter["patient"][3]) < int(lines["patient"][3])  # the patient reads shorter clinician turns
    assert sum(fake.CALLS.values()) == before and not out.exists()
    assert main(["run", *ECHO, "--out", str(out), "--dry-run", "--assume-reply-tokens", "nurse=3"]) == 2
    assert "--assume-reply-tokens: expected ROLE=N" in capsys.readouterr().err


def test_max_cost_stops_cleanly_and_resumes(tmp_path, capsys, monkeypatch):
    import mindeval.budget as budget

    monkeypatch.setattr(budget, "prices", lambda model: (1e-4, 1e-4, 1e-5))
    out = tmp_path / "D"
    args = [*ECHO, "--judge", "fake/judge", "--limit", "3", "--turns", "4", "--concurrency", "1", "--out", str(out)]
    assert main(["run", *args, "--max-cost", "0.6"]) == 1
    printed = capsys.readouterr().out
    s1 = summary(out)
    assert s1["stopped"] and "STOPPED: stopped before exceeding --max-cost $0.60" in printed
    assert 0 < s1["calls_made"] < 15
    spent = sum(v["cost_usd"] for v in s1["tokens"].values() if v["cost_usd"])
    assert spent <= 0.6
    assert main(["run", *args, "--max-cost", "100"]) == 0
    s2 = summary(out)
    assert s2["stopped"] is None and s2["n_judged"] == 3
    assert s1["calls_made"] + s2["calls_made"] == 15  # nothing paid twice


@pytest.mark.parametrize("bad", ["--max-cost", "--limit"])
def test_negative_numbers_are_refused(tmp_path, capsys, bad):
    assert main(["run", *ECHO, bad, "-1", "--out", str(tmp_path / "D")]) == 2
