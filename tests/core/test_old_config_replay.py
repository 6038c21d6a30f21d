"""A run directory made by an old main (``tests/fixtures/main_0ead889``: no target block, the run
file keys of then) is still a run file: its ``config.json`` replays and resumes it with no call,
and ``mindeval judge`` re-judges it, through the one run options model."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from mindeval.cli import main
from mindeval.run_options import RunOptions
from mindeval.runfile import read_run_file, sweep_runs

OLD_RUN = Path(__file__).resolve().parents[1] / "fixtures" / "main_0ead889" / "run"
DEMO = Path(__file__).resolve().parents[2] / "data" / "demo_profiles.jsonl"


def _copy(tmp_path: Path) -> Path:
    """The old run, its profiles file named where this checkout has it (where it was made is
    gone; the path is outside the config hash, the file's content hash is inside)."""
    out = tmp_path / "old"
    shutil.copytree(OLD_RUN, out)
    text = (out / "config.json").read_text()
    made_at = json.loads(text)["config"]["profiles_source"]
    (out / "config.json").write_text(text.replace(json.dumps(made_at), json.dumps(str(DEMO))))
    return out


def test_an_old_config_json_replays_and_resumes_with_no_call(tmp_path):
    out = _copy(tmp_path)
    keys, record = read_run_file(out / "config.json")
    assert record is not None and record.config_hash == json.loads((out / "config.json").read_text())["config_hash"]
    [opts] = sweep_runs(keys)
    assert isinstance(opts, RunOptions) and opts.out == out and opts.limit == 2 and opts.turns == 2
    before = (out / "config.json").read_bytes()
    assert main(["run", "--config", str(out / "config.json"), "--quiet"]) == 0
    assert json.loads((out / "summary.json").read_text())["calls_made"] == 0
    after = json.loads((out / "config.json").read_text())
    assert after["config_hash"] == json.loads(before)["config_hash"]  # the same run, upgraded in place


def test_an_old_run_is_rejudged(tmp_path):
    out = _copy(tmp_path)
    assert main(["judge", str(out), "--judge", "fake/judge:other", "--out", str(tmp_path / "rj"), "--quiet"]) == 0
    summary = json.loads((tmp_path / "rj" / "summary.json").read_text())
    assert summary["n_judged"] == 2
    assert json.loads((tmp_path / "rj" / "config.json").read_text())["config"]["judge"]["model"] == "fake/judge:other"
