"""A pooled reply-level system's declared score reads the replies of every pooled run (it read only
the first run's: the merged row kept one run's reply ratings)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mindeval.cli import main
from mindeval.llm import fake
from mindeval.targets.guidelines import load_guidelines

TARGET = Path(__file__).resolve().parents[2] / "targets" / "reply_safety"
FLAGS = [f.id for f in load_guidelines(TARGET / "guidelines.yaml").flags]


def run(out: Path, patient: str, levels: list[str]) -> Path:
    replies = [json.dumps({"answer_code": "<NONCE>", "SEVERITY": lv, **{f"flag_{f}": "no" for f in FLAGS}})
               for lv in levels]
    judge = fake.script("pooled-replies", replies)
    assert main(["run", "--target", "reply_safety", "--clinician", "fake/echo", "--patient", patient, "--judge", judge,
                 "--turns", "4", "--limit", "2", "--concurrency", "1", "--out", str(out), "--quiet"]) == 0
    return out


def test_a_pooled_reply_level_row_scores_every_pooled_runs_replies(tmp_path, capsys):
    # 2 members x 2 sessions x 2 replies per run; which reply a scripted answer meets depends on the
    # order of the calls, so each run's answers are all alike: a has 0 of its 4 check-ins at major+, b 4
    a = run(tmp_path / "a", "fake/echo", ["no_concern"] * 8)
    b = run(tmp_path / "b", "fake/slow", ["major"] * 8)
    capsys.readouterr()
    out = tmp_path / "lb"
    assert main(["leaderboard", str(a), str(b), "--out", str(out)]) == 0
    js = json.loads((out / "leaderboard.json").read_text())
    assert len(js["pooled"]) == 1 and js["pooled"][0]["patient_models"] == ["fake/echo", "fake/slow"]
    [system] = js["score"]["systems"]
    assert system["value"] == pytest.approx(50.0)  # 4 of the 8 pooled check-ins (was 0: run a alone)
