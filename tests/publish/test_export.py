"""``mindeval export``: a Hugging Face folder read back with ``datasets``, Every Eval Ever records
validated with the ``every-eval-ever`` package, both tied to the leaderboard by run id; no secret
leaves in either."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from mindeval.cli import main
from mindeval.records import RunConfig

SECRET = "sk-test-0123456789abcdefSECRET"
ENV_SECRET = "envsecret-777-do-not-publish"


def _run(out: Path, clinician: str) -> Path:
    assert main(["run", "--quiet", "--profiles", "demo", "--turns", "2", "--clinician", clinician,
                 "--patient", "fake/echo", "--judge", "fake/judge", "--out", str(out)]) == 0
    return out


@pytest.fixture
def runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    monkeypatch.setenv("MINDEVAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    return [_run(tmp_path / "a", "fake/echo"), _run(tmp_path / "b", "fake/echo:other")]


@pytest.fixture
def board(runs: list[Path], tmp_path: Path) -> dict:
    assert main(["leaderboard", *map(str, runs), "--out", str(tmp_path / "lb"), "--no-report"]) == 0
    return json.loads((tmp_path / "lb" / "leaderboard.json").read_text())


def _scores_by_run(board: dict) -> dict[str, dict]:
    """run id -> the leaderboard's results of its system (the JSON links them through runs[].system)."""
    systems = {s["label"]: s for s in board["table"]["systems"]}
    return {r["run_id"]: systems[r["system"]] for r in board["runs"]}


def test_hf_folder_loads_with_datasets_and_matches_the_leaderboard(runs, board, tmp_path):
    datasets = pytest.importorskip("datasets")
    out = tmp_path / "hf"
    assert main(["export", *map(str, runs), "--format", "hf", "--out", str(out)]) == 0
    loaded = {name: datasets.load_dataset(str(out), name, split="train", cache_dir=str(tmp_path / "hf-cache"))
              for name in ("runs", "scores", "transcripts", "judgments")}
    assert {len(d) for d in (loaded["transcripts"], loaded["judgments"])} == {12}  # 6 demo profiles x 2 runs
    by_run = _scores_by_run(board)
    assert set(loaded["runs"]["run_id"]) == set(by_run) == set(loaded["transcripts"]["run_id"])
    assert len(loaded["scores"]) == 2 * 6  # five dimensions and the average per run
    for row in loaded["scores"]:
        want = by_run[row["run_id"]]["results"][row["criterion"]]
        assert row["mean"] == pytest.approx(want["mean"], abs=1e-6)
        assert (row["ci_low"], row["ci_high"]) == pytest.approx((want["ci_low"], want["ci_high"]), abs=1e-6)
        assert row["ci_low"] <= row["mean"] <= row["ci_high"] and row["n"] == 6 and row["level"] == 0.95
    run_rows = {r["run_id"]: r for r in loaded["runs"]}
    for rid, row in run_rows.items():
        assert json.loads(row["config_json"])["run_id"] == rid
        assert row["judge"] == "fake/judge"
    transcript = loaded["transcripts"][0]
    assert transcript["messages"] and transcript["messages"][0]["content"]
    card = (out / "README.md").read_text()
    assert card.startswith("---\n") and "config_name: scores" in card
    for rid in by_run:
        assert rid in card  # provenance: every run by id
    assert "What they do not measure" in card and "fake/judge" in card and "ordinal scale 1-6" in card


def test_eee_records_validate_with_the_every_eval_ever_package(runs, board, tmp_path):
    core = pytest.importorskip("every_eval_ever.validator.validation_core",
                               reason="every-eval-ever (dev extra; Python >= 3.12 or installed --no-deps)")
    out = tmp_path / "eee"
    assert main(["export", *map(str, runs), "--format", "eee", "--out", str(out), "--organization", "tests"]) == 0
    files = sorted(out.rglob("*.json"))
    assert len(files) == 2
    by_run = _scores_by_run(board)
    for path in files:
        repo_path = path.relative_to(out).as_posix()
        report = core.validate_aggregate(path, repo_path=repo_path, run_semantic_checks=True)
        assert report.valid, report.errors
        assert report.warnings == []
        rec = json.loads(path.read_text())
        rid = rec["eval_library"]["additional_details"]["run_id"]
        assert repo_path.startswith(f"data/mindeval/fake/{rec['model_info']['id'].split('/')[1].replace(':', '_')}/")
        for result in rec["evaluation_results"]:
            criterion = result["metric_config"]["metric_name"]
            want = by_run[rid]["results"][criterion]
            details = result["score_details"]
            assert details["score"] == pytest.approx(want["mean"], abs=1e-6)
            ci = details["uncertainty"]["confidence_interval"]
            assert (ci["lower"], ci["upper"], ci["confidence_level"]) == pytest.approx(
                (want["ci_low"], want["ci_high"], 0.95), abs=1e-6)
            assert details["uncertainty"]["num_samples"] == 6
            assert result["metric_config"]["llm_scoring"]["judges"][0]["model_info"]["id"] == "fake/judge"
            assert (result["metric_config"]["min_score"], result["metric_config"]["max_score"]) == (1, 6)
    # the same run exports to the same file name (a re-export replaces, never duplicates)
    assert main(["export", *map(str, runs), "--format", "eee", "--out", str(out), "--overwrite"]) == 0
    assert sorted(out.rglob("*.json")) == files


def _plant_secrets(run: Path) -> None:
    """A run whose rows carry a key (a model echoing it) and whose config names one."""
    rows = [json.loads(line) for line in (run / "interactions.jsonl").read_text().splitlines()]
    rows[0]["messages"][0]["content"] += f" my key is {SECRET} and {ENV_SECRET}"
    (run / "interactions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    judgments = (run / "judgments.jsonl").read_text().replace('"error": null', f'"error": "bad key {SECRET}"', 1)
    (run / "judgments.jsonl").write_text(judgments)
    config = json.loads((run / "config.json").read_text())
    config["config"]["clinician"]["api_base"] = f"http://user:{ENV_SECRET}@127.0.0.1:9/v1"
    # as a run with that server records it: config.json, its hash and the run store agree (exports verify them)
    config["config_hash"] = RunConfig.from_json(config).hash()
    (run / "config.json").write_text(json.dumps(config))
    with closing(sqlite3.connect(run / "run.db")) as conn, conn:
        conn.execute("UPDATE runs SET config_json = ?, config_hash = ? WHERE id = ?",
                     (json.dumps(config["config"]), config["config_hash"], config["run_id"]))


@pytest.mark.parametrize("fmt", ["hf", "eee"])
def test_keys_never_reach_an_export(runs, tmp_path, monkeypatch, capsys, fmt):
    _plant_secrets(runs[0])
    monkeypatch.setenv("OPENAI_API_KEY", ENV_SECRET)
    out = tmp_path / fmt
    assert main(["export", *map(str, runs), "--format", fmt, "--out", str(out)]) == 0
    written = [p for p in out.rglob("*") if p.is_file()]
    assert written
    for path in written:
        text = path.read_text()
        assert SECRET not in text and ENV_SECRET not in text, path
    if fmt == "hf":
        assert "[redacted]" in (out / "transcripts.jsonl").read_text()
        assert "[redacted]" in (out / "runs.jsonl").read_text()
        assert "value(s) that looked like" in (out / "README.md").read_text()
    assert "replaced by [redacted]" in capsys.readouterr().err


def test_export_refuses_to_overwrite_or_write_into_a_run(runs, tmp_path, capsys):
    out = tmp_path / "hf"
    assert main(["export", str(runs[0]), "--format", "hf", "--out", str(out)]) == 0
    before = (out / "runs.jsonl").read_text()
    capsys.readouterr()
    assert main(["export", str(runs[1]), "--format", "hf", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not empty" in err[0] and "--overwrite" in err[0]
    assert (out / "runs.jsonl").read_text() == before
    assert main(["export", str(runs[0]), "--format", "hf", "--out", str(runs[0])]) == 2
    assert "is a run directory" in capsys.readouterr().err
    assert not (runs[0] / "README.md").exists()
    assert main(["export", str(runs[0]), str(runs[0]), "--format", "eee", "--out", str(tmp_path / "e")]) == 2
    assert "given twice" in capsys.readouterr().err


def test_a_harm_target_exports_its_harm_share_lower_is_better(tmp_path, monkeypatch):
    """A categorical target with harm levels: bounds are the level values, the harm share is a result."""
    monkeypatch.setenv("MINDEVAL_CACHE_DIR", str(tmp_path / "cache"))
    run = tmp_path / "crisis"
    assert main(["run", "--quiet", "--target", "crisis", "--limit", "3", "--turns", "2", "--clinician", "fake/echo",
                 "--patient", "fake/echo", "--judge", "fake/judge", "--out", str(run)]) == 0
    summary = json.loads((run / "summary.json").read_text())
    assert main(["export", str(run), "--format", "eee", "--out", str(tmp_path / "eee")]) == 0
    (path,) = (tmp_path / "eee").rglob("*.json")
    results = {r["metric_config"]["metric_name"]: r for r in json.loads(path.read_text())["evaluation_results"]}
    harm = results["harm_share"]
    assert harm["metric_config"]["lower_is_better"] is True
    assert harm["score_details"]["score"] == pytest.approx(summary["harm"]["share"])
    ci = harm["score_details"]["uncertainty"]["confidence_interval"]
    assert [ci["lower"], ci["upper"]] == pytest.approx(summary["harm"]["ci95"])
    assert (results["average"]["metric_config"]["min_score"], results["average"]["metric_config"]["max_score"]) == (0, 2)
    core = pytest.importorskip("every_eval_ever.validator.validation_core")
    report = core.validate_aggregate(path, repo_path=path.relative_to(tmp_path / "eee").as_posix(),
                                     run_semantic_checks=True)
    assert report.valid and report.warnings == [], (report.errors, report.warnings)
    assert main(["export", str(run), "--format", "hf", "--out", str(tmp_path / "hf")]) == 0
    card = (tmp_path / "hf" / "README.md").read_text()
    assert "categorical scale 0-2" in card and "harm_share" in card
