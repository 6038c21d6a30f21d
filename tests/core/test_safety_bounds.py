"""Safety net II, money and bounds: a re-judge's dry run reads the stored transcripts; sessions,
repeats and planned calls have documented ceilings; a formula's undefined value says why."""

from __future__ import annotations

import json

import pytest

from mindeval.cli import main
from tests.support.fault_server import FaultServer

JUDGE = "openai/judge-b"


def _judge_row(printed: str) -> list[str]:
    return next(ln.split() for ln in printed.splitlines() if ln.startswith("judge "))


def test_rejudge_dry_run_reads_the_stored_transcripts(tmp_path, capsys):
    """Three runs of one configuration whose replies differ in length: three estimates, each within
    3 % of the judge input the server counted when the runs were re-judged for real."""
    estimates, real = [], []
    with FaultServer() as srv:
        for words in (5, 40, 150):
            srv.configure(reply_words=words)
            src = tmp_path / f"src{words}"
            sim = ["--patient", "openai/sim", "--clinician", "openai/sim", "--judge", "fake/judge",
                   "--api-base", srv.url, "--limit", "2", "--turns", "4", "--quiet"]
            assert main(["run", *sim, "--out", str(src)]) == 0
            rejudge = ["judge", str(src), "--judge", JUDGE, "--api-base", srv.url, "--quiet"]
            capsys.readouterr()
            assert main([*rejudge, "--dry-run", "--out", str(tmp_path / f"dry{words}")]) == 0
            row = _judge_row(capsys.readouterr().out)
            assert not (tmp_path / f"dry{words}").exists()  # a dry run writes nothing
            estimates.append(int(row[3]))
            assert main([*rejudge, "--out", str(tmp_path / f"re{words}")]) == 0
            s = json.loads((tmp_path / f"re{words}" / "summary.json").read_text())
            assert int(row[2]) == s["tokens"]["judge"]["calls"] == 2
            real.append(s["tokens"]["judge"]["prompt_tokens"])
    assert len(set(estimates)) == 3 and estimates == sorted(estimates)
    for est, measured in zip(estimates, real, strict=True):
        assert est == pytest.approx(measured, rel=0.03), (estimates, real)
