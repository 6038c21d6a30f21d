"""One recorded run-configuration model: every run kind writes a ``config.json`` that
``RunConfig`` reads back (its typed view and its exact bytes), files written by earlier versions
(a ``metaeval judge`` config without ``judge_protocol``, without ``kind``) still load, and the files
main wrote before ``config.json`` had one model (``tests/fixtures/main_613cd6c``) keep their bytes
and hashes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from metaeval.sources import load_judge_run
from mindeval.cli import main
from mindeval.cli.meta import main as metaeval_main
from mindeval.errors import MindEvalError
from mindeval.records import (
    BENCHMARK_KIND,
    KINDS,
    RATED_JUDGE_KIND,
    BenchmarkConfig,
    JudgeRunConfig,
    RunConfig,
    require_kind,
)
from mindeval.rundir import legacy_target, read_config, read_run, upgraded_view

RUN = ["--patient", "fake/echo", "--clinician", "fake/echo", "--judge", "fake/judge", "--profiles", "demo",
       "--limit", "2", "--turns", "2", "--concurrency", "1", "--quiet"]


def _reads_back(path: Path, kind: str) -> RunConfig:
    """The one loader reads the file as its kind's model and writes the same bytes."""
    rec = RunConfig.read(path)
    assert rec.kind == kind and type(rec) is KINDS[kind]
    assert require_kind(rec, KINDS[kind], path) is rec
    copy = path.parent / "copy.json"
    rec.write(copy)
    assert copy.read_bytes() == path.read_bytes()
    copy.unlink()
    return rec


def test_every_run_kind_writes_a_config_the_one_model_reads(tmp_path, annotations):
    run = tmp_path / "run"
    assert main(["run", *RUN, "--out", str(run)]) == 0
    rec = _reads_back(run / "config.json", BENCHMARK_KIND)
    assert rec.database and rec.database.startswith("sqlite")
    assert "annotations_source" not in json.loads((run / "config.json").read_text())

    rejudged = tmp_path / "rejudged"  # mindeval judge RUN_DIR: a benchmark run on the stored conversations
    assert main(["judge", str(run), "--judge", "fake/judge:other", "--out", str(rejudged), "--quiet"]) == 0
    rj = _reads_back(rejudged / "config.json", BENCHMARK_KIND)
    assert isinstance(rj, BenchmarkConfig) and rj.judge.model == "fake/judge:other"
    assert read_run(rejudged).config == rj

    assert main(["judge", annotations, "--judge", "fake/judge", "--quiet", "--out", str(tmp_path / "mj")]) == 0
    assert metaeval_main(["judge", "--annotations", annotations, "--judge", "fake/judge", "--limit", "2",
                          "--out", str(tmp_path / "me")]) == 0
    for name in ("mj", "me"):
        rec = _reads_back(tmp_path / name / "config.json", RATED_JUDGE_KIND)
        assert isinstance(rec, JudgeRunConfig)
        cfg = rec
        assert cfg.judge.model == "fake/judge" and cfg.prompts["judge"].ref == rec.judge_prompt()
        assert not hasattr(cfg, "patient") and not hasattr(cfg, "profile_ids") and cfg.interaction_ids
        assert rec.annotations_source == annotations and not hasattr(rec, "database")
    # one implementation: the same options give the same configuration (and hash) by either command
    assert metaeval_main(["judge", "--annotations", annotations, "--judge", "fake/judge",
                          "--out", str(tmp_path / "me-all")]) == 0
    assert RunConfig.read(tmp_path / "me-all" / "config.json").config_hash == \
        RunConfig.read(tmp_path / "mj" / "config.json").config_hash


OLD_JUDGE_CONFIG = {  # as `metaeval judge` wrote it before judge protocols and targets (untyped dict)
    "run_id": "mj-0123456789abcdef", "config_hash": "0123", "kind": "metaeval-judge", "label": "old judge",
    "fewshot_interaction_ids": ["int-01"],
    "config": {
        "judge": {"model": "fake/judge", "temperature": None, "max_tokens": None},
        "prompt": {"ref": "judge/default@v1", "sha256": "ab"}, "annotations_sha256": "cd",
        "fewshot_sha256": None, "fewshot_k": 1, "fewshot_interaction_ids": ["int-01"],
        "fewshot_scores": {"int-01": {"CAC": 3.0, "EPC": 3.0, "AR": 3.0, "TRA": 3.0, "ASCQ": 3.0}},
        "zeros": "missing", "mapping_version": "1", "repetitions": 1, "retries": 3, "seed": 0,
        "interaction_ids": ["int-02"], "prompts": {"judge": "judge/default@v1"},
    },
    "annotations_source": "human_annotations.jsonl", "fewshot_source": None, "package_version": "0.1.0",
}
ROW = {"interaction_id": "int-02", "profile_id": "p2", "model": "sys", "judge_model": "fake/judge", "sample": 0,
       "parse_status": "ok", "scores": {"CAC": 3, "EPC": 4, "AR": 2, "TRA": 5, "ASCQ": 1}}


@pytest.mark.parametrize("drop_kind", [False, True], ids=["as-written", "without-kind"])
def test_an_old_metaeval_judge_config_still_loads(tmp_path, drop_kind):
    old = {k: v for k, v in OLD_JUDGE_CONFIG.items() if not (drop_kind and k == "kind")}
    (tmp_path / "config.json").write_text(json.dumps(old, indent=1))
    (tmp_path / "judgments.jsonl").write_text(json.dumps(ROW) + "\n")
    rec = read_config(tmp_path / "config.json")  # upgraded when read: MindEval's target block added
    assert rec.kind == RATED_JUDGE_KIND and rec.label == "old judge"
    assert isinstance(rec, JudgeRunConfig)
    cfg = rec
    assert cfg.judge_protocol == "mindeval" and cfg.target == legacy_target() and cfg.interaction_ids == ["int-02"]
    # today's keys: repetitions/retries are judge_samples/judge_retries, prompt is prompts.judge
    assert (cfg.judge_samples, cfg.judge_retries, cfg.prompts["judge"].ref) == (1, 3, "judge/default@v1")
    assert "repetitions" not in cfg.model_dump() and upgraded_view(old["config"]) == cfg.hashed_view()
    [judge] = load_judge_run(tmp_path)
    assert judge.label == "old judge" and judge.meta["fewshot_interaction_ids"] == ["int-01"]
    assert judge.meta["prompt"] == "judge/default@v1"
    assert read_run(tmp_path).config == rec


def test_a_config_of_another_kind_is_one_clear_error(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(OLD_JUDGE_CONFIG))
    with pytest.raises(MindEvalError) as exc:
        require_kind(read_config(path), BenchmarkConfig, path)
    assert str(exc.value) == (f"{path}:kind: expected a benchmark run's configuration, "
                              "this one is kind 'metaeval-judge'")
    path.write_text(json.dumps({**OLD_JUDGE_CONFIG, "kind": "something"}))
    with pytest.raises(MindEvalError) as exc:
        read_config(path)
    assert str(exc.value).startswith(f"{path}:kind: ")


# ------------------------------------------- config.json as main wrote it before the one model

MAIN = Path(__file__).resolve().parents[1] / "fixtures" / "main_613cd6c"
# How main (613cd6c, with RunConfigRecord around RunConfig) made each fixture's config.json,
# fake models only: the command (A = the authors' human_annotations.jsonl), in MAIN's order.
MADE_BY_MAIN = {
    "run": ["mindeval", "run", *RUN],
    "rejudged": ["mindeval", "judge", "<run>", "--judge", "fake/judge:other", "--quiet"],
    "metaeval_judge": ["metaeval", "judge", "--annotations", "A", "--judge", "fake/judge", "--limit", "2"],
    "metaeval_judge_fewshot": ["metaeval", "judge", "--annotations", "A", "--judge", "fake/judge", "--fewshot-k",
                               "1", "--label", "shots", "--limit", "2", "--fewshot-file", "A"],
}


@pytest.mark.parametrize("name", list(MADE_BY_MAIN))
def test_a_config_json_made_by_main_keeps_its_hash_and_bytes(tmp_path, name):
    """Read by the one model, main's file gives back its recorded hash and, written again, its bytes."""
    path = MAIN / name / "config.json"
    rec = read_config(path)
    assert rec.hash() == rec.config_hash
    assert upgraded_view(json.loads(path.read_text())["config"]) == rec.hashed_view()
    rec.write(tmp_path / "config.json")
    assert (tmp_path / "config.json").read_bytes() == path.read_bytes()


def _where_free(path: Path) -> str:
    """config.json without what differs between two makings of one run: the run id's random
    suffix and the paths (store, profiles, annotations), key order kept."""
    data = json.loads(path.read_text())
    data["run_id"] = data["run_id"].rsplit("-", 1)[0]
    for key in ("database", "annotations_source", "fewshot_source"):
        if data.get(key):
            data[key] = Path(data[key]).name
    if "profiles_source" in data["config"]:
        data["config"]["profiles_source"] = Path(data["config"]["profiles_source"]).name
    return json.dumps(data, indent=2)


def _as_scheme_1(path: Path) -> Path:
    """A benchmark run's config.json made today as under seed scheme 1 (issue 35: today's record
    ``seed_scheme: 2``, which changes their hash and so their run id's prefix; main's record none)."""
    data = json.loads(path.read_text())
    if data["config"].pop("seed_scheme", None) is None:
        return path
    old, new = data["config_hash"], RunConfig.from_json(data).hash()
    data["config_hash"], data["run_id"] = new, data["run_id"].replace(old[:8], new[:8])
    out = path.with_name("scheme_1.json")
    out.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    return out


def test_todays_runs_write_what_main_wrote(tmp_path, annotations):
    """The same four runs made today record main's hashes (so main's runs resume: nothing is bought
    again) and the same config.json, but for the run id's random suffix, the paths and (benchmark
    runs) the seed scheme: main's runs resume under theirs (tests/core/test_seed_scheme.py)."""
    for name, command in MADE_BY_MAIN.items():
        args = [annotations if a == "A" else str(tmp_path / "run") if a == "<run>" else a for a in command[1:]]
        assert (main if command[0] == "mindeval" else metaeval_main)([*args, "--out", str(tmp_path / name)]) == 0
        made, by_main = tmp_path / name / "config.json", MAIN / name / "config.json"
        assert getattr(read_config(made), "seed_scheme", None) == (2 if name in ("run", "rejudged") else None), name
        made = _as_scheme_1(made)
        assert read_config(made).config_hash == read_config(by_main).config_hash, name
        assert _where_free(made) == _where_free(by_main), name


# --------------------------------- config.json as main wrote it with one model for both kinds

BEFORE_KINDS = Path(__file__).resolve().parents[1] / "fixtures" / "main_97a883d"
# How main (97a883d, one RunConfig for both kinds) made each fixture (README.md there), fake models only.
MADE_BEFORE_KINDS = {
    "run": ["mindeval", "run", *RUN, "--repeats", "2"],
    "folder_target": ["mindeval", "run", "--patient", "fake/echo", "--clinician", "fake/echo", "--judge", "fake/judge",
                      "--target", "tests/fixtures/targets/toy", "--limit", "1", "--turns", "2", "--concurrency", "1",
                      "--quiet"],
    "metaeval_judge": ["metaeval", "judge", "--annotations", "A", "--judge", "fake/judge", "--fewshot-k", "1",
                       "--label", "shots", "--limit", "2"],
}


@pytest.mark.parametrize("name", list(MADE_BEFORE_KINDS))
def test_a_config_json_made_before_the_kinds_reads_as_its_kind_with_its_hash_and_bytes(tmp_path, name):
    path = BEFORE_KINDS / name / "config.json"
    written = json.loads(path.read_text())
    rec = read_config(path)
    assert type(rec) is KINDS[written["kind"]] and rec.kind == written["kind"]
    assert rec.hash() == rec.config_hash == written["config_hash"]
    assert upgraded_view(written["config"]) == rec.hashed_view()
    rec.write(tmp_path / "config.json")
    assert (tmp_path / "config.json").read_bytes() == path.read_bytes()


def test_a_run_made_before_the_kinds_resumes_and_buys_nothing(tmp_path):
    """Main's run (``--repeats 2``) with its store: the same command today finds it by its hash."""
    out = tmp_path / "run"
    out.mkdir()
    for name in ("config.json", "run.db"):
        shutil.copy(BEFORE_KINDS / "run" / name, out / name)
    before = json.loads((out / "config.json").read_text())
    assert main(["run", *RUN, "--repeats", "2", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["resumed"] is True and summary["calls_made"] == 0
    after = json.loads((out / "config.json").read_text())
    assert (after["run_id"], after["config_hash"]) == (before["run_id"], before["config_hash"])
    assert type(read_config(out / "config.json")) is BenchmarkConfig


def test_a_hand_made_config_reads_as_the_base_and_a_kind_check_names_what_it_lacks(tmp_path):
    """A file with a target alone (what ``metaeval compare`` needs) reads; a benchmark reader names
    the first field it lacks, as the one check of a kind (``require_kind``)."""
    path = tmp_path / "config.json"
    run = json.loads((BEFORE_KINDS / "run" / "config.json").read_text())
    path.write_text(json.dumps({"run_id": "r", "config": {"target": run["config"]["target"]}}))
    rec = read_config(path)
    assert type(rec) is RunConfig and rec.kind == BENCHMARK_KIND and rec.target.name == "mindeval"
    with pytest.raises(MindEvalError) as exc:
        require_kind(rec, BenchmarkConfig, path)
    assert str(exc.value) == f"{path}:config.judge: missing required field"
    del run["config"]["prompts"]["clinician"]
    path.write_text(json.dumps(run))
    with pytest.raises(MindEvalError) as exc:
        require_kind(read_config(path), BenchmarkConfig, path)
    assert str(exc.value) == f"{path}:config.prompts.clinician: missing required field"
    run["config"]["turns"] = "two"  # a bad value is an error for every reader, as before
    path.write_text(json.dumps(run))
    with pytest.raises(MindEvalError) as exc:
        read_config(path)
    assert str(exc.value).startswith(f"{path}:config.turns: ")
