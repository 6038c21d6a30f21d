"""Safety net II, money and bounds: a re-judge's dry run reads the stored transcripts; sessions,
repeats and planned calls have documented ceilings; a formula's undefined value says why."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

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


TOY = Path(__file__).resolve().parents[1] / "fixtures" / "targets" / "toy"
ODD = "100 * pct_best_practice / (pct_potential_harm - pct_potential_harm)"


def test_a_formula_dividing_by_zero_shows_n_a_with_its_reason(tmp_path, capsys):
    """The run's console, summary.json and the leaderboard's row each say n/a and why, on one line."""
    target = Path(shutil.copytree(TOY, tmp_path / "toy"))
    manifest = target / "target.yaml"
    manifest.write_text(manifest.read_text() + f'score:\n  label: Odd score\n  formula: "{ODD}"\n')
    assert main(["targets", "validate", str(target)]) == 0  # valid: the division is by a figure, zero only later
    out = tmp_path / "r"
    assert main(["run", "--target", str(target), "--patient", "fake/echo", "--clinician", "fake/echo",
                 "--judge", "fake/judge", "--limit", "2", "--turns", "2", "--out", str(out), "--quiet"]) == 0
    why = "division by zero in '100 * pct_best_practice / (pct_potential_harm - pct_potential_harm)'"
    assert f"Odd score: n/a ({why}" in capsys.readouterr().out
    score = json.loads((out / "summary.json").read_text())["score"]
    assert score["value"] is None and score["why"].startswith(why)
    assert main(["leaderboard", str(out), "--out", str(tmp_path / "lb")]) == 0
    row = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("| 1 |"))
    assert f"n/a ({why}" in row
