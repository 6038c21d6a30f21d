"""A ``metaeval judge`` directory made by an old main (``tests/fixtures/main_41c6f72/metaeval_judge``:
its ``config`` in the keys of then, ``repetitions``/``retries``/``prompt``) is read, resumed with no
call and judged again by today's code, its configuration upgraded to the one run configuration model.

The fixture was made at commit 41c6f72 by ``metaeval judge --annotations
<shared data>/human_annotations.jsonl --judge fake/judge --limit 2 --out metaeval_judge``
(its run.db then compacted: journal_mode=DELETE, VACUUM)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from metaeval.sources import load_judge_run
from mindeval.cli.meta import main as metaeval_main
from mindeval.records import RATED_JUDGE_KIND, JudgeRunConfig, RunConfig
from mindeval.rundir import read_config

OLD = Path(__file__).resolve().parents[1] / "fixtures" / "main_41c6f72" / "metaeval_judge"


@pytest.fixture
def old(tmp_path) -> Path:
    out = tmp_path / "old"
    shutil.copytree(OLD, out)
    return out


def _config(out: Path) -> dict:
    return json.loads((out / "config.json").read_text())


def test_an_old_judge_run_is_read_as_todays_configuration(old):
    assert "repetitions" in _config(old)["config"]  # the fixture is in the old keys
    rec = read_config(old / "config.json")
    cfg = rec
    assert rec.kind == RATED_JUDGE_KIND and isinstance(cfg, JudgeRunConfig) and isinstance(cfg, RunConfig)
    assert (cfg.judge.model, cfg.judge_samples, cfg.judge_retries) == ("fake/judge", 1, 3)
    assert cfg.prompts["judge"].ref == rec.judge_prompt() == "judge/default@v2"
    assert len(cfg.interaction_ids or []) == 2 and len(cfg.fewshot_interaction_ids or []) == 5
    [judge] = load_judge_run(old)
    assert judge.label == "fake/judge" and judge.meta["prompt"] == "judge/default@v2"


def test_an_old_judge_run_resumes_with_no_call(old, annotations):
    before = _config(old)
    assert metaeval_main(["judge", "--annotations", annotations, "--judge", "fake/judge", "--limit", "2",
                          "--out", str(old)]) == 0
    summary = json.loads((old / "summary.json").read_text())
    assert summary["resumed"] is True and summary["calls_made"] == 0 and summary["n_judged"] == 2
    after = _config(old)  # the same run, its config.json rewritten in today's keys and hash
    assert after["run_id"] == before["run_id"] and after["config_hash"] != before["config_hash"]
    assert "repetitions" not in after["config"] and after["config"]["judge_samples"] == 1
    assert after["config_hash"] == read_config(old / "config.json").hash()
    assert metaeval_main(["judge", "--annotations", annotations, "--judge", "fake/judge", "--limit", "2",
                          "--out", str(old)]) == 0  # and again, from the upgraded file
    assert json.loads((old / "summary.json").read_text())["calls_made"] == 0


def test_an_old_judge_run_with_other_options_is_refused_then_judged_again(old, annotations, capsys):
    args = ["judge", "--annotations", annotations, "--judge", "fake/judge:other", "--limit", "2", "--out", str(old)]
    assert metaeval_main(args) != 0  # another configuration: not the old run
    assert "different configuration" in capsys.readouterr().err
    assert metaeval_main([*args, "--new-run"]) == 0
    summary = json.loads((old / "summary.json").read_text())
    assert summary["resumed"] is False and summary["calls_made"] == 2 and summary["n_judged"] == 2
    assert _config(old)["config"]["judge"]["model"] == "fake/judge:other"
