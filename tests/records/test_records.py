"""Run-directory rows: one model per file, one score rule for every reader."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from metaeval.sources import load_judge_run
from mindeval import read_run
from mindeval.cli import main as mindeval_main
from mindeval.cli.meta import main as metaeval_main
from mindeval.errors import MindEvalError
from mindeval.leaderboard.loading import load_run
from mindeval.records import (
    AXES,
    BenchmarkConfig,
    InteractionRecord,
    JudgmentRecord,
    ModelRecord,
    RunSummary,
)
from mindeval.rundir import legacy_target, read_config

SHA = "cd" * 32


def _spec(model: str) -> dict:
    return {"model": model, "temperature": None, "max_tokens": None}


def write_run(out: Path, scores: list[dict | None], *, protocol: str = "mindeval") -> Path:
    """A complete run directory written through the record models."""
    out.mkdir(parents=True, exist_ok=True)
    pids = [f"p{i}" for i in range(len(scores))]
    config = BenchmarkConfig(
        run_id="run-x",
        patient=_spec("fake/echo"), clinician=_spec("sys/a"), judge=_spec("fake/judge"),
        prompts={r: {"ref": f"{r}/default@v1", "sha256": SHA} for r in ("patient", "clinician", "judge")},
        profile_ids=pids, turns=2, guidelines_version="1", seed=0, target=legacy_target(),
    )
    config.model_copy(update={"config_hash": config.hash()}).write(out / "config.json")  # as a run records it
    msgs = [{"role": "user", "content": "Hello."}, {"role": "assistant", "content": "Hi, how are you?"},
            {"role": "user", "content": "Tired."}]
    InteractionRecord.write(out / "interactions.jsonl", [
        InteractionRecord(id=f"i{n}", run_id="run-x", profile_id=pid, model="sys/a", messages=msgs)
        for n, pid in enumerate(pids)
    ])
    rows = [
        {"interaction_id": f"i{n}", "profile_id": pid, "model": "sys/a", "judge_model": "fake/judge",
         "sample": 0, "protocol": protocol, "scores": s, "parse_status": "ok" if s else "failed"}
        for n, (pid, s) in enumerate(zip(pids, scores, strict=True))
    ]
    (out / "judgments.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    RunSummary(run_id="run-x", n_interactions=len(pids)).write(out / "summary.json")
    return out


def five(v: float, **over: float) -> dict:
    return {ax: over.get(ax, v) for ax in AXES}


def test_read_run_round_trip_and_frame(tmp_path):
    run_dir = write_run(tmp_path / "r", [five(4), None, five(2, CAC=6)])
    run = read_run(run_dir)
    assert run.config.run_id == "run-x" and isinstance(run.config, BenchmarkConfig)
    assert run.config.clinician.model == "sys/a"
    assert [i.id for i in run.interactions] == ["i0", "i1", "i2"] and run.summary.n_interactions == 3
    assert [j.line for j in run.judgments] == [1, 2, 3]
    frame = run.to_frame()
    assert list(frame.columns[-6:]) == [*AXES, "average"]
    assert frame.loc[0, "CAC"] == 4.0 and frame.loc[2, "CAC"] == 6.0 and frame.loc[2, "average"] == 2.8
    assert math.isnan(frame.loc[1, "EPC"]) and frame.loc[1, "parse_status"] == "failed"
    # writing the rows back gives the same rows
    JudgmentRecord.write(tmp_path / "again.jsonl", run.judgments)
    assert JudgmentRecord.read(tmp_path / "again.jsonl") == run.judgments


@pytest.mark.parametrize(
    ("row", "where", "message"),
    [
        ({"scores": five(3, EPC=9)}, "scores.EPC", "score 9 is not a number from 1 to 6"),
        ({"scores": five(3, AR=3.5)}, "scores.AR", "score 3.5 is not a whole number"),
        ({"scores": five(3, TRA=True)}, "scores.TRA", "score True is not a number"),
        ({"scores": {"CAC": 3}}, "scores", "scores must have exactly the axes"),
        ({"scores": None}, "scores", "parse_status is 'ok' but scores is null"),
        ({"judge_model": None}, "judge_model", "Input should be a valid string"),
        ({"sample": -1}, "sample", "Input should be greater than or equal to 0"),
    ],
)
def test_bad_judgment_row_names_file_line_field(tmp_path, row, where, message):
    path = tmp_path / "judgments.jsonl"
    good = {"interaction_id": "i", "profile_id": "p", "model": "m", "judge_model": "j", "scores": five(3)}
    path.write_text(json.dumps(good) + "\n\n" + json.dumps({**good, **row}) + "\n")
    with pytest.raises(MindEvalError) as exc:
        JudgmentRecord.read(path, {"target": legacy_target()})
    assert str(exc.value).startswith(f"{path}:3:{where}: {message}")


def test_paper_protocol_allows_fractional_scores(tmp_path):
    run_dir = write_run(tmp_path / "r", [five(3.5), five(4)], protocol="paper")
    assert read_run(run_dir).judgments[0].scores["CAC"] == 3.5
    assert load_run(run_dir).scores[0].scores["CAC"] == 3.5
    [judge] = load_judge_run(run_dir)
    assert judge.frame.query("axis == 'CAC'")["score"].tolist() == [3.5, 4.0]


def test_a_fractional_score_is_refused_alike_by_every_reader(tmp_path, capsys):
    run_dir = write_run(tmp_path / "r", [five(4), five(3, EPC=3.5)])
    expected = f"{run_dir / 'judgments.jsonl'}:2:scores.EPC: score 3.5 is not a whole number"
    for read in (read_run, load_run, load_judge_run):
        with pytest.raises(MindEvalError) as exc:
            read(run_dir)
        assert str(exc.value).startswith(expected)
    assert mindeval_main(["leaderboard", str(run_dir)]) == 2
    lb_err = capsys.readouterr().err
    assert metaeval_main(["compare", "--judges", f"J={run_dir}", "--out", str(tmp_path / "cmp")]) == 2
    me_err = capsys.readouterr().err
    for err in (lb_err, me_err):
        assert expected in err and "Traceback" not in err


def test_config_errors_name_the_field(tmp_path):
    run_dir = write_run(tmp_path / "r", [five(4)])
    cfg = json.loads((run_dir / "config.json").read_text())
    del cfg["config"]["judge"]
    (run_dir / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(MindEvalError) as exc:
        load_run(run_dir)
    assert str(exc.value) == f"{run_dir / 'config.json'}:config.judge: missing required field"


PINNED_CONFIG = Path(__file__).parent / "data" / "config_before_model_home.json"


def test_a_config_saved_before_keeps_its_hash_and_bytes(tmp_path):
    """Model settings have one home (ModelRecord, which ModelSpec builds on): old runs still resume."""
    from mindeval.llm.gateway import ModelSpec

    assert issubclass(ModelSpec, ModelRecord)
    rec = read_config(PINNED_CONFIG)  # written before run directories carried their target: upgraded
    assert rec.hash() == rec.config_hash == "f41ff26c13d41030d543d88ea1aa3b49f495f82c45e6a86215de8a76695d6584"
    rec.write(tmp_path / "c.json")
    # Written again, the file gains exactly its target block (MindEval's); every other byte is kept.
    pinned, again = json.loads(PINNED_CONFIG.read_bytes()), json.loads((tmp_path / "c.json").read_bytes())
    assert "target" not in pinned["config"] and again["config"].pop("target") == legacy_target().model_dump(mode="json")
    assert again == pinned
    # readers see the same settings through the record model
    assert isinstance(rec, BenchmarkConfig)
    bench = rec
    assert bench.clinician == ModelRecord(**pinned["config"]["clinician"])
    assert (bench.clinician.model, bench.clinician.max_tokens) == ("fake/echo", 99)
    assert ModelRecord.model_validate(pinned["config"]["judge"]).model_dump() == bench.judge.model_dump()
