"""A researcher's week: one config file sweeps three clinicians into three run directories and
a leaderboard; another judge re-scores the saved conversations (no simulation call, counted by
the fake models and in the call log); the two judges' leaderboards are compared."""

from __future__ import annotations

import json
import sqlite3

import yaml

from mindeval.cli import main
from mindeval.llm.fake import CALLS
from mindeval.rundir import read_run

CLINICIANS = ["fake/echo:a", "fake/echo:b", "fake/echo:c"]


def _calls_by_role(run_dir, run_id):
    con = sqlite3.connect(run_dir / "run.db")
    rows = con.execute("select role, count(*) from calls where run_id = ? and status = 'ok' group by role",
                       (run_id,)).fetchall()
    con.close()
    return dict(rows)


def test_sweep_from_one_file_then_rejudge_and_compare(tmp_path, capsys):
    cfg = tmp_path / "sweep.yaml"
    cfg.write_text(yaml.safe_dump({
        "patient": "fake/echo", "clinicians": CLINICIANS, "judge": "fake/judge", "profiles": "demo",
        "limit": 3, "turns": 4, "concurrency": 2, "out": str(tmp_path / "sweep")}))
    CALLS.clear()
    assert main(["run", "--config", str(cfg), "--quiet"]) == 0
    dirs = [tmp_path / "sweep" / name for name in ("fake_echo_a", "fake_echo_b", "fake_echo_c")]
    for d, clinician in zip(dirs, CLINICIANS, strict=True):
        s = json.loads((d / "summary.json").read_text())
        assert s["clinician"] == clinician and s["n_judged"] == 3 and s["calls_made"] == 3 * 4 + 3
    board = json.loads((tmp_path / "sweep" / "_leaderboard" / "leaderboard.json").read_text())
    assert sorted(r["label"] for r in board["table"]["systems"]) == CLINICIANS
    assert sum(CALLS.values()) == 3 * (3 * 4 + 3)

    # Replaying a run's config.json is that run again: resumed, nothing called.
    CALLS.clear()
    assert main(["run", "--config", str(dirs[0] / "config.json"), "--quiet"]) == 0
    assert not CALLS and json.loads((dirs[0] / "summary.json").read_text())["resumed"] is True

    # Another judge over the saved conversations: judge calls only.
    CALLS.clear()
    rejudged = tmp_path / "rejudged_a"
    assert main(["judge", str(dirs[0]), "--judge", "fake/judge:b", "--out", str(rejudged), "--quiet"]) == 0
    assert dict(CALLS) == {"judge:b": 3}
    run = read_run(rejudged)
    assert _calls_by_role(rejudged, run.config.run_id) == {"judge": 3}  # the call log agrees
    assert {j.judge_model for j in run.judgments} == {"fake/judge:b"} and len(run.to_frame()) == 3
    source = read_run(dirs[0])
    assert [i.messages for i in run.interactions] == [i.messages for i in source.interactions]
    assert run.summary.model_extra["calls_made"] == 3

    # The other two as well, in one command; then rank the two judges' leaderboards.
    CALLS.clear()
    others = tmp_path / "rejudged"
    assert main(["judge", str(dirs[1]), str(dirs[2]), "--judge", "fake/judge:b", "--out", str(others),
                 "--quiet"]) == 0
    assert dict(CALLS) == {"judge:b": 6}
    capsys.readouterr()
    assert main(["leaderboard", *map(str, dirs), "--compare-to", str(rejudged), str(others / "fake_echo_b"),
                 str(others / "fake_echo_c"), "--out", str(tmp_path / "lb"), "--no-report"]) == 0
    comparison = json.loads((tmp_path / "lb" / "leaderboard.json").read_text())["comparisons"]
    assert len(comparison) == 1 and "fake/judge:b" in comparison[0]["setup"]
    assert all(v["n_pairs"] == 3 for v in comparison[0]["accuracy"].values())


def test_rejudging_never_simulates_what_is_missing(tmp_path):
    src = tmp_path / "src"
    assert main(["run", "--patient", "fake/empty", "--clinician", "fake/echo", "--judge", "fake/judge",
                 "--limit", "2", "--turns", "2", "--out", str(src), "--quiet"]) == 1  # every interaction failed
    CALLS.clear()
    assert main(["judge", str(src), "--judge", "fake/judge:b", "--out", str(tmp_path / "rj"), "--quiet"]) == 1
    assert not CALLS
    s = json.loads((tmp_path / "rj" / "summary.json").read_text())
    assert s["n_judged"] == 0 and s["n_failed_interactions"] == 2 and s["calls_made"] == 0
