"""One home per run option: each :class:`RunOptions` field carries its option (the parsers and the
docs table are generated from it), an option given on the command line wins over a run file at any
value (known by presence, never by comparison with a default), and a replay is exact (every field
round-trips a run file; a recorded run replays repeats and a target given by path)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from mindeval.cli import build_parser, main
from mindeval.cli.docs_table import main as docs_table
from mindeval.cli.fields import given, value_type
from mindeval.errors import MindEvalError
from mindeval.records import PROTOCOLS, TRANSCRIPT_FORMATS
from mindeval.run_options import ROLE_FIELDS, RUN_SETTINGS, RunOptions, cli_meta
from mindeval.runfile import read_run_file, sweep_runs

ROOT = Path(__file__).resolve().parents[2]
FAKES = ["--patient", "fake/echo", "--clinician", "fake/echo", "--judge", "fake/judge", "--profiles", "demo",
         "--limit", "1", "--turns", "2", "--quiet"]


def test_the_docs_table_is_generated_from_the_fields():
    assert docs_table(["--check"]) == 0, "run `python -m mindeval.cli.docs_table`"


def test_no_hand_written_option_for_a_field():
    """The commands' sources add no option of a RunOptions field by hand (mindeval.cli.fields does)."""
    flags = {f'"--{n.replace("_", "-")}"' for n in RunOptions.model_fields} | {f'"--{r}"' for r in ROLE_FIELDS}
    for path in [ROOT / "mindeval/cli/commands/run.py", ROOT / "mindeval/cli/commands/judge.py", ROOT / "mindeval/cli/options.py"]:
        text = path.read_text()
        assert not [f for f in flags if f"add_argument({f}" in text], path


def test_an_option_is_given_by_presence_not_by_value():
    sub = build_parser()
    assert given(sub.parse_args(["run"])) == {}
    got = given(sub.parse_args(["run", "--seed", "0", "--judge-samples", "1", "--judge-temperature", "0"]))
    assert got == {"seed": 0, "judge_samples": 1, "judge": {"temperature": 0.0}}


def test_a_command_line_option_at_its_default_wins_over_the_run_file(tmp_path):
    run = tmp_path / "run"
    (tmp_path / "r.yaml").write_text(f"seed: 5\njudge_samples: 2\nout: {run}\n")
    assert main(["run", "--config", str(tmp_path / "r.yaml"), *FAKES, "--seed", "0", "--judge-samples", "1"]) == 0
    config = json.loads((run / "config.json").read_text())["config"]
    assert (config["seed"], config["judge_samples"]) == (0, 1)
    plain = tmp_path / "plain"
    assert main(["run", *FAKES, "--out", str(plain)]) == 0  # one judge sample: the same calls bought
    calls = [json.loads((d / "summary.json").read_text())["tokens"]["judge"]["calls"] for d in (run, plain)]
    assert calls[0] == calls[1] == 1


def test_a_role_setting_on_the_command_line_keeps_the_files_model(tmp_path):
    (tmp_path / "r.yaml").write_text("judge: {model: fake/judge:x, temperature: 0.5}\n")
    keys, _ = read_run_file(tmp_path / "r.yaml")
    from mindeval.cli.fields import merged

    [opts] = sweep_runs(merged(keys, given(build_parser().parse_args(["run", "--judge-temperature", "0"]))))
    assert (opts.judge.model, opts.judge.temperature) == ("fake/judge:x", 0.0)


def _other(name: str, tmp_path: Path):
    """A valid value of field ``name`` other than its default."""
    special = {"patient": {"model": "fake/echo:p", "temperature": 0.3}, "clinician": "fake/echo:c",
               "judge": {"model": "fake/judge:j", "max_tokens": 50}, "out": str(tmp_path / "o"),
               "api_base": "http://127.0.0.1:9/v1",
               "assume_reply_tokens": {"judge": 7}, "target": "crisis", "db": "sqlite:///x.db",
               "judge_protocol": [p for p in PROTOCOLS if p != "mindeval"][0],
               "transcript_format": [t for t in TRANSCRIPT_FORMATS if t != "mindeval"][0], "zeros": "zero"}
    if name in special:
        return special[name]
    default = RunOptions.model_fields[name].get_default(call_default_factory=True)
    kind = value_type(name)
    if kind is bool:
        return not default
    if kind in (int, float):
        high = next((m.le for m in RunOptions.model_fields[name].metadata if getattr(m, "le", None) is not None), None)
        value = (default or 1) + 2
        return value if high is None or value <= high else (high if high != default else high - 1)
    if cli_meta(name).get("choices"):
        return [c for c in cli_meta(name)["choices"] if c != default][0]
    return f"{name}-value"  # a string (a path or a name): read as given


def test_every_field_round_trips_a_run_file(tmp_path):
    """Each field (iterated, so a new one is covered) set apart from its default survives writing
    the options as a run file and reading it back; a key of `metaeval judge` alone set is refused there."""
    for name in RunOptions.model_fields:
        opts = RunOptions.model_validate({"out": str(tmp_path / "o"), name: _other(name, tmp_path)})
        assert getattr(opts, name) != getattr(RunOptions(out=opts.out), name) or name == "out", name
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(opts.keys()))
        if cli_meta(name)["commands"] == "m":
            with pytest.raises(MindEvalError, match="metaeval judge"):
                read_run_file(path)
            continue
        keys, _ = read_run_file(path)
        [back] = sweep_runs(keys, path)
        assert getattr(back, name) == getattr(opts, name), name


# What a benchmark's config.json records: every field of ``mindeval run`` but the run settings
# (a replay takes those from its own command line) and api_base (recorded in each role's settings).
REPLAYED = [n for n in RunOptions.model_fields if "r" in cli_meta(n)["commands"] and n not in RUN_SETTINGS
            and n != "api_base"]
BENCHMARK = {"patient": "fake/echo:p", "clinician": "fake/echo:c", "judge": "fake/judge:j", "limit": 1, "turns": 2,
             "seed": 3, "repeats": 2, "judge_retries": 2, "judge_samples": 2, "fewshot_k": 0}


def test_a_recorded_run_replays_every_field(tmp_path):
    """Every replayed field (iterated) of a recorded run comes back from its config.json."""
    target = shutil.copytree(ROOT / "targets" / "crisis", tmp_path / "my_target")
    run = tmp_path / "run"
    opts = RunOptions.model_validate({**BENCHMARK, "target": str(target), "out": str(run), "quiet": True})
    from mindeval.engine.loop import run_benchmark

    run_benchmark(opts)
    keys, rec = read_run_file(run / "config.json")
    [back] = sweep_runs(keys)
    missing = [n for n in REPLAYED if n not in keys]
    assert missing == [], f"config.json does not replay {missing}"
    for name in REPLAYED:
        want, got = getattr(opts, name), getattr(back, name)
        if name in ROLE_FIELDS:
            want, got = want.model, got.model
        if name in ("patient_prompt", "clinician_prompt", "judge_prompt", "profiles", "fewshot_file"):
            continue  # resolved: the target's own (None) or the file read (checked by the config hash below)
        assert got == want, name
    from mindeval.engine.prepare import prepare

    assert prepare(back).config.hash() == rec.config_hash


def test_a_repeats_run_is_rejudged_into_a_new_folder(tmp_path):
    src = tmp_path / "src"
    assert main(["run", *FAKES, "--repeats", "2", "--out", str(src)]) == 0
    assert main(["judge", str(src), "--judge", "fake/judge:b", "--out", str(tmp_path / "rj"), "--quiet"]) == 0
    summary = json.loads((tmp_path / "rj" / "summary.json").read_text())
    assert summary["repeats"] == 2 and summary["n_judged"] == 2


def test_a_run_of_a_target_folder_is_rejudged_from_elsewhere_and_refused_when_it_changed(tmp_path, monkeypatch):
    target = shutil.copytree(ROOT / "targets" / "crisis", tmp_path / "t" / "my_target")
    monkeypatch.chdir(tmp_path / "t")
    src = tmp_path / "src"
    assert main(["run", "--target", "my_target", *FAKES, "--out", str(src)]) == 0
    recorded = json.loads((src / "config.json").read_text())["config"]
    assert recorded["target_source"] == str(target.resolve()) and len(recorded["target_sha256"]) == 64
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert main(["judge", str(src), "--judge", "fake/judge:b", "--out", str(tmp_path / "rj"), "--quiet"]) == 0
    assert json.loads((tmp_path / "rj" / "summary.json").read_text())["n_judged"] == 1
    with (target / "guidelines.yaml").open("a") as fh:
        fh.write("\n# edited\n")
    with pytest.raises(MindEvalError, match="changed since the run") as exc:
        read_run_file(src / "config.json")
    assert exc.value.field == "config.target_sha256"
    shutil.rmtree(target)
    assert main(["judge", str(src), "--judge", "fake/judge:b", "--out", str(tmp_path / "rj2"), "--quiet"]) == 2
