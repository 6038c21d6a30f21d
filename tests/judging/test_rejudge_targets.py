"""Re-judging (``mindeval judge RUN_DIR``) works for every shipped target, its prompts living in the
target's folder: it failed with "no prompt template 'patient/risk_checklist'" for all but MindEval."""

from __future__ import annotations

import json

import pytest

from mindeval.cli import main


@pytest.mark.parametrize("target", ["risk_checklist", "reply_safety", "crisis"])
def test_a_run_of_any_target_is_rejudged_with_judge_calls_only(tmp_path, target):
    src, out = tmp_path / "src", tmp_path / "rejudged"
    assert main(["run", "--target", target, "--patient", "fake/echo", "--clinician", "fake/echo", "--judge",
                 "fake/judge", "--turns", "2", "--limit", "2", "--out", str(src), "--quiet"]) == 0
    before = json.loads((src / "summary.json").read_text())
    assert main(["judge", str(src), "--judge", "fake/judge:b", "--out", str(out), "--quiet"]) == 0
    after = json.loads((out / "summary.json").read_text())
    # as many calls as the first judge made, nothing simulated again
    assert after["calls_made"] == before["tokens"]["judge"]["calls"] > 0
    assert after["n_judged"] == before["n_judged"] > 0
    assert (src / "interactions.jsonl").read_bytes() == (out / "interactions.jsonl").read_bytes()
    assert {json.loads(x)["judge_model"] for x in (out / "judgments.jsonl").read_text().splitlines()} == {"fake/judge:b"}
