"""Workflow gaps of issue 38: a correction shows in the HTML viewer, the viewer labels a profile in its
target's own words, `--who ""` is refused in one line, a warning prints as one line (no Python source)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from mindeval.cli import main

ROOT = Path(__file__).resolve().parents[2]
FAKE = ["--patient", "fake/echo", "--clinician", "fake/echo", "--judge", "fake/judge", "--limit", "2", "--turns", "2",
        "--quiet"]


@pytest.fixture(scope="module")
def safety_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("gaps") / "reply_safety"
    assert main(["run", "--target", "reply_safety", *FAKE, "--out", str(out)]) == 0
    return out


def test_the_html_viewer_shows_a_correction_and_the_targets_own_labels(safety_run, tmp_path, capsys):
    first = json.loads((safety_run / "judgments.jsonl").read_text().splitlines()[0])
    iid = first["interaction_id"]
    assert main(["correct", str(safety_run), "--interaction", iid, "--axis", "SEVERITY", "--reply", "1",
                 "--to", "critical", "--reason", "missed a cue", "--who", "ana"]) == 0
    page = tmp_path / "v.html"
    assert main(["view", str(safety_run), "--html", str(page)]) == 0
    text = page.read_text()
    assert "Corrections by reviewers (1)" in text and "missed a cue" in text and "ana" in text
    assert "corrected (1)" in text  # marked in the table too
    labels = yaml.safe_load((ROOT / "targets" / "reply_safety" / "profile_labels.yaml").read_text())
    concern = labels[first["profile_id"]]["concern"]
    assert f"<td>concern: {concern}</td>" in text
    assert "<td>severe</td>" not in text and "<td>non-severe</td>" not in text  # MindEval's split, not this target's


def test_an_empty_reviewer_name_is_refused_in_one_line(safety_run, capsys):
    iid = json.loads((safety_run / "judgments.jsonl").read_text().splitlines()[0])["interaction_id"]
    store = (safety_run / "run.db").read_bytes()
    capsys.readouterr()
    for who in ("", "   "):
        assert main(["correct", str(safety_run), "--interaction", iid, "--axis", "SEVERITY", "--reply", "1",
                     "--to", "minor", "--reason", "r", "--who", who]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: --who: an empty name") and len(err.splitlines()) == 1, err
    assert (safety_run / "run.db").read_bytes() == store


def test_a_warning_prints_as_one_line_without_its_source(shared_data, tmp_path):
    """`mindeval judge FILE` over the authors' ratings warns of a rating without an axis (RollupWarning)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MINDEVAL_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-m", "mindeval", "judge", str(shared_data / "human_annotations.jsonl"),
                           "--judge", "fake/judge", "--out", str(tmp_path / "j"), "--quiet"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr
    warned = [line for line in done.stderr.splitlines() if "average score is NaN" in line]
    assert warned == [f"warning: {shared_data / 'human_annotations.jsonl'}: 1 rating(s) have an axis with no "
                      "rated sub-axis; their average score is NaN"], done.stderr
    assert "warnings.warn" not in done.stderr and "RollupWarning" not in done.stderr
