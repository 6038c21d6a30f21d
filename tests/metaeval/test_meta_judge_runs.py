"""`metaeval judge`: few-shot draw, repetitions, stored and resumable calls."""

from __future__ import annotations

import json

import numpy as np
import pytest

from metaeval.judge_runs import draw_fewshot, mean_axis_scores, run_judge
from metaeval.sources import load_authors_annotations, load_judge_run
from mindeval.errors import ConfigMismatchError, MindEvalError
from mindeval.llm import fake
from mindeval.records import AXES
from mindeval.run_options import RunOptions


def opts(tiny_authors, out, **kw) -> RunOptions:
    base = dict(annotations=str(tiny_authors), judge="fake/judge", out=str(out), concurrency=2)
    return RunOptions(**{**base, **kw})


def test_judge_run_writes_schema_and_excludes_fewshot(tiny_authors, tmp_path):
    out = tmp_path / "jr"
    summary = run_judge(opts(tiny_authors, out, fewshot_k=2, judge_samples=3, seed=5), echo=None)
    cfg = json.loads((out / "config.json").read_text())
    shots = cfg["fewshot_interaction_ids"]
    src = load_authors_annotations(tiny_authors)
    assert shots == draw_fewshot(src, 2, 5) and len(set(shots)) == 2
    rows = [json.loads(line) for line in (out / "judgments.jsonl").read_text().splitlines()]
    assert summary["n_judged"] + summary["n_failed_judgments"] == len(rows) == (12 - 2) * 3
    assert not {r["interaction_id"] for r in rows} & set(shots)
    assert {r["sample"] for r in rows} == {0, 1, 2}
    for key in ("interaction_id", "profile_id", "model", "judge_model", "sample", "scores", "average",
                "parse_status", "attempts", "raw_text", "rationale", "error", "severe", "n_turns"):
        assert key in rows[0]
    [judge] = load_judge_run(out)
    assert judge.runs == 3 and judge.meta["fewshot_interaction_ids"] == shots
    # few-shot scores are the annotators' means, recorded in the config
    for iid in shots:
        assert cfg["config"]["fewshot_scores"][iid] == pytest.approx(mean_axis_scores(src, iid, AXES))


def test_fewshot_scores_are_annotator_means(tiny_authors):
    src = load_authors_annotations(tiny_authors)
    row = json.loads(tiny_authors.read_text().splitlines()[1])
    got = mean_axis_scores(src, "int-01", AXES)
    per_rater_cac = [np.mean([row["criterion_1.responses"][i], row["criterion_2.responses"][i]]) for i in range(3)]
    assert got["CAC"] == pytest.approx(np.mean(per_rater_cac))
    assert got["ASCQ"] == pytest.approx(np.mean(row["criterion_10.responses"]))


def test_rerun_makes_no_call_and_other_config_is_refused(tiny_authors, tmp_path):
    out = tmp_path / "jr"
    run_judge(opts(tiny_authors, out, judge_samples=2), echo=None)
    first = (out / "judgments.jsonl").read_text()
    before = fake.CALLS["judge"]
    again = run_judge(opts(tiny_authors, out, judge_samples=2), echo=None)
    assert fake.CALLS["judge"] == before and again["calls_made"] == 0
    assert (out / "judgments.jsonl").read_text() == first
    with pytest.raises(ConfigMismatchError, match="judge_samples"):
        run_judge(opts(tiny_authors, out, judge_samples=3), echo=None)


def test_interrupted_run_resumes_without_repeating(tiny_authors, tmp_path, monkeypatch):
    from mindeval.store.runs import RunStore

    real_save = RunStore.save_judgment
    saved = []

    def crashing_save(store, j, round_=0):
        if len(saved) == 5:
            raise KeyboardInterrupt
        saved.append(j)
        return real_save(store, j, round_)

    monkeypatch.setattr(RunStore, "save_judgment", crashing_save)
    out = tmp_path / "part"
    before = fake.CALLS["judge"]
    with pytest.raises(KeyboardInterrupt):
        run_judge(opts(tiny_authors, out, concurrency=1, fewshot_k=0), echo=None)
    made_first = fake.CALLS["judge"] - before
    # the crash stops the run: at most the worker's next call starts after it
    assert 6 <= made_first <= 7
    monkeypatch.setattr(RunStore, "save_judgment", real_save)
    s = run_judge(opts(tiny_authors, out, concurrency=1, fewshot_k=0), echo=None)
    assert s["n_judged"] == 12
    # calls made before the crash whose judgments were not saved are answered from the store
    assert s["calls_reused"] == made_first - 5 and s["calls_made"] == 12 - made_first
    assert fake.CALLS["judge"] - before == 12


def test_failed_judgments_are_recorded_not_invented(tiny_authors, tmp_path):
    out = tmp_path / "bad"
    s = run_judge(opts(tiny_authors, out, judge="fake/empty", judge_retries=2, limit=2), echo=None)
    rows = [json.loads(line) for line in (out / "judgments.jsonl").read_text().splitlines()]
    assert s["n_failed_judgments"] == 2 and all(r["scores"] is None and r["parse_status"] == "failed" for r in rows)


def test_bad_options(tiny_authors, tmp_path):
    with pytest.raises(MindEvalError, match="cannot draw"):
        run_judge(opts(tiny_authors, tmp_path / "x", fewshot_k=50), echo=None)
    with pytest.raises(MindEvalError, match="provider"):
        run_judge(opts(tiny_authors, tmp_path / "y", judge="nope/model"), echo=None)
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="judge_samples"):  # the field's own bound, as on the command line
        run_judge(opts(tiny_authors, tmp_path / "z", judge_samples=0), echo=None)


def test_judge_run_with_another_target(tiny_authors, tmp_path):
    """`metaeval judge --target`: the target's judge prompt, dimensions and scale; its block in config.json."""
    from pathlib import Path

    from mindeval import read_run

    toy = Path(__file__).resolve().parents[1] / "fixtures" / "targets" / "toy"
    out = tmp_path / "jr"
    summary = run_judge(opts(tiny_authors, out, target=str(toy), limit=3), echo=None)
    assert summary["n_judged"] == 3 and summary["n_failed_judgments"] == 0
    run = read_run(out)
    assert run.config.prompts["judge"].ref == run.config.judge_prompt() == "judge/toy_judge@v1"
    assert run.target.name == "toy" and run.target.harm_values == (0,)
    assert all(j.target == "toy" and set(j.scores) == {"DETECT", "GUIDE"} for j in run.judgments)
    assert all(v in (0, 1, 2) for j in run.judgments for v in j.scores.values())
    # the rated file holds MindEval ratings: no example of the toy's dimensions is drawn from it by default
    assert run.config.fewshot_k == 0 and run.config.fewshot_interaction_ids == []
    with pytest.raises(MindEvalError, match="few-shot examples are MindEval ratings"):
        run_judge(opts(tiny_authors, tmp_path / "f", target=str(toy), fewshot_file=str(tiny_authors)), echo=None)
    with pytest.raises(MindEvalError, match="paper is MindEval's own judge"):
        run_judge(opts(tiny_authors, tmp_path / "p", target=str(toy), judge_protocol="paper"), echo=None)


def test_mindeval_judge_on_rated_interactions_is_metaeval_judge(tiny_authors, tmp_path):
    """`mindeval judge FILE` and `metaeval judge --annotations FILE` are one judge run: the same
    configuration (hash) and judgments, so each resumes the other's directory without a call."""
    from mindeval.cli import main as mindeval_main
    from mindeval.cli.meta import main as metaeval_main

    out = tmp_path / "jr"
    assert mindeval_main(["judge", str(tiny_authors), "--judge", "fake/judge", "--out", str(out), "--quiet"]) == 0
    first = json.loads((out / "config.json").read_text())
    rows = (out / "judgments.jsonl").read_text()
    shots = first["config"]["fewshot_interaction_ids"]  # one default (5) on both commands, drawn from the file
    assert first["config"]["fewshot_k"] == len(shots) == 5
    assert not set(shots) & {json.loads(r)["interaction_id"] for r in rows.splitlines()}  # never judged
    fake.CALLS.clear()
    assert metaeval_main(["judge", "--annotations", str(tiny_authors), "--judge", "fake/judge",
                          "--out", str(out)]) == 0
    assert not fake.CALLS  # resumed: the same configuration
    assert json.loads((out / "config.json").read_text())["config_hash"] == first["config_hash"]
    assert (out / "judgments.jsonl").read_text() == rows


def test_metaeval_judge_on_a_run_directory_rejudges_it(tmp_path):
    """`metaeval judge --annotations RUN_DIR` is `mindeval judge RUN_DIR`: judge calls only."""
    from mindeval.cli import main as mindeval_main
    from mindeval.cli.meta import main as metaeval_main

    src = tmp_path / "src"
    assert mindeval_main(["run", "--patient", "fake/echo", "--clinician", "fake/echo", "--judge", "fake/judge",
                          "--limit", "2", "--turns", "2", "--out", str(src), "--quiet"]) == 0
    fake.CALLS.clear()
    assert metaeval_main(["judge", "--annotations", str(src), "--judge", "fake/judge:b",
                          "--out", str(tmp_path / "rj")]) == 0
    assert dict(fake.CALLS) == {"judge:b": 2}
    rows = [json.loads(x) for x in (tmp_path / "rj" / "judgments.jsonl").read_text().splitlines()]
    assert {r["judge_model"] for r in rows} == {"fake/judge:b"} and len(rows) == 2
