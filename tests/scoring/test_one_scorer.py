"""One scorer (issue 36 item 1): ``summary.json`` and ``mindeval leaderboard`` read the same
:func:`mindeval.scoring.score_run`, so they print the same figures for every kind of run.

The run that showed two scorers: ``--repeats 2 --limit 2``, a judge that gives profile 1's first
conversation 6s and answers its second with garbage, and profile 2's two conversations 2s. Before,
``summary.json`` averaged the three scored conversations (10/3 = 3.3333) and the leaderboard the
two profiles (6 and 2: 4.0). The unit is the profile (docs/leaderboard.md "What is a score"): 4.0.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from mindeval.cli import main
from mindeval.leaderboard import StatsSettings, build_leaderboard
from mindeval.llm.fake import script
from tests.support.items import uniform_reply
from tests.support.rundirs import summary

FAKE = ["--patient", "fake/echo", "--clinician", "fake/echo", "--quiet", "--concurrency", "1"]


def agree(out: Path) -> dict:
    """Assert that summary.json and ``mindeval leaderboard --allow-incomplete`` give the same
    figures for the run in ``out``; return the summary."""
    s = summary(out)
    lb = build_leaderboard([out], StatsSettings(resamples=2000, seed=0), allow_incomplete=True)
    [system] = lb.table.systems
    [run] = lb.runs
    assert s["n_means_over"] == run.n_scored and s["n_partly_judged"] == run.n_partly_judged
    for criterion, result in system.results.items():
        want = s["means"][criterion]
        if want is None:
            assert math.isnan(result.mean), criterion
        else:
            assert result.mean == pytest.approx(want, abs=5e-5), criterion
    if "harm" in s:
        [h] = lb.safety
        assert (h.k, h.n) == (s["harm"]["k"], s["harm"]["n"])
    if "levels" in s:
        [lv] = lb.levels
        assert lv.report.model_dump(mode="json") == s["levels"]
    if lb.score is not None:
        assert s["score"]["value"] == pytest.approx(lb.score.of(system.label).value, abs=1e-9)
    return s


def test_the_issue_run_repeats_with_one_unparseable_sample(tmp_path):
    """--repeats 2 --limit 2; profile 1: 6 then garbage, profile 2: 2 and 2 (judge calls in that order)."""
    judge = script(f"issue-{tmp_path.name}", [uniform_reply(6), "garbage", uniform_reply(2), uniform_reply(2)])
    out = tmp_path / "run"
    main(["run", *FAKE, "--judge", judge, "--profiles", "demo", "--limit", "2", "--repeats", "2", "--turns", "2",
          "--judge-retries", "1", "--max-retries", "0", "--out", str(out)])
    rows = [json.loads(x) for x in (out / "judgments.jsonl").read_text().splitlines()]
    by_profile: dict[str, list] = {}
    for r in rows:
        by_profile.setdefault(r["profile_id"], []).append(r["scores"]["CAC"] if r["scores"] else None)
    assert sorted(by_profile.values(), key=str) == [[2, 2], [6, None]]  # the issue's run
    s = agree(out)
    assert s["means"]["average"] == 4.0 and s["n_means_over"] == 3 and s["n_conversations"] == 4
    # the CLI prints the same figure
    assert main(["leaderboard", str(out), "--allow-incomplete", "--out", str(tmp_path / "board")]) == 0
    assert "4.00" in (tmp_path / "board" / "leaderboard.md").read_text()


def test_complete_run(tmp_path):
    out = tmp_path / "run"
    assert main(["run", *FAKE, "--judge", "fake/judge", "--profiles", "demo", "--limit", "3", "--turns", "2",
                 "--out", str(out)]) == 0
    s = agree(out)
    assert s["n_means_over"] == 3 and s["n_partly_judged"] == 0


def test_repeated_complete_run_with_several_samples(tmp_path):
    out = tmp_path / "run"
    assert main(["run", *FAKE, "--judge", "fake/judge", "--profiles", "demo", "--limit", "2", "--turns", "2",
                 "--repeats", "3", "--judge-samples", "2", "--out", str(out)]) == 0
    s = agree(out)
    assert s["n_means_over"] == 6


def test_incomplete_run_with_a_partly_judged_conversation(tmp_path):
    """Two samples each; conversation 2 has one garbage sample: it does not count, the run is incomplete."""
    judge = script(f"partly-{tmp_path.name}", [uniform_reply(5), uniform_reply(3), uniform_reply(4), "garbage", uniform_reply(1), uniform_reply(2)])
    out = tmp_path / "run"
    main(["run", *FAKE, "--judge", judge, "--profiles", "demo", "--limit", "3", "--turns", "2", "--judge-samples", "2",
          "--judge-retries", "1", "--max-retries", "0", "--out", str(out)])
    s = agree(out)
    assert s["n_means_over"] == 2 and s["n_partly_judged"] == 1
    assert s["means"]["average"] == 2.75  # (4 + 1.5) / 2


def test_categorical_target_with_harm_levels_and_labels(tmp_path):
    out = tmp_path / "run"
    assert main(["run", *FAKE, "--judge", "fake/judge", "--target", "crisis", "--limit", "4", "--turns", "2",
                 "--repeats", "2", "--out", str(out)]) == 0
    s = agree(out)
    assert "harm" in s and "levels" in s and s["by_label"]


def test_multi_session_reply_level_target_with_a_declared_score(tmp_path):
    out = tmp_path / "run"
    assert main(["run", *FAKE, "--judge", "fake/judge", "--target", "reply_safety", "--limit", "3", "--turns", "4",
                 "--out", str(out)]) == 0
    s = agree(out)
    assert s["sessions"] == 2 and s["n_means_over"] == 6 and s["replies"]["per"] == "member x session"
    assert s["score"]["value"] is not None


def test_categorical_target_with_a_declared_score(tmp_path):
    out = tmp_path / "run"
    assert main(["run", *FAKE, "--judge", "fake/judge", "--target", "risk_checklist", "--limit", "3",
                 "--turns", "2", "--out", str(out)]) == 0
    s = agree(out)
    assert s["score"]["value"] is not None and s["by_label"]
