"""Byte-identity of every leaderboard output for MindEval runs (no ``target`` block).

Floats are written to 6 decimals (mindeval.stats.precision); each number may differ from the
pinned one by one unit in its last digit (a rounding boundary tipped by another CPU's last bit),
all other text is byte-identical (tests/metaeval/test_golden_any_machine.py varies BLAS settings).

The golden files under ``golden/`` were written by the leaderboard before it learnt
about targets; a MindEval run must still produce exactly these bytes. Regenerate only
for an intended change: ``python -m tests.support.golden`` (every golden file).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from leaderboard_rundirs import write_run

from mindeval.leaderboard import StatsSettings, build_leaderboard, write_outputs
from tests.support.golden import assert_golden

GOLDEN = Path(__file__).parent / "golden" / "mindeval"
PLACEHOLDER = "<RUNS>"


def _runs(root: Path) -> list[Path]:
    """Three clinicians on 12 profiles: repeated and failed judge samples, a failed conversation,
    severe patients, a non-default clinician prompt."""
    ids = [f"p{i:02d}" for i in range(12)]
    severe = ids[::3]
    a = {p: [(i % 6) + 1, 4, 5, (i * 7) % 6 + 1, 3] for i, p in enumerate(ids)}
    b = {p: [[3, 3, 4, 2, (i % 5) + 2], [4, 3, 4, 2, 5]] for i, p in enumerate(ids)}
    b["p03"] = [None, [2, 2, 2, 2, 2]]  # one of two judge samples failed: p03 unscored for b (issue 24 item 4)
    c = {p: [5, 5, (i % 4) + 3, 6, 4] for i, p in enumerate(ids) if p != "p07"}
    return [
        write_run(root / "a", "vendor/model-a", a, severe=severe, profile_ids=ids),
        write_run(root / "b", "vendor/model-b", b, severe=severe, profile_ids=ids,
                  clinician_text="Thanks for telling me. What happened next? Take your time."),
        write_run(root / "c", "vendor/model-a", c, severe=severe, profile_ids=ids,
                  clinician_prompt="clinician/four_sentences@v1", failed_interactions=["p07"]),
    ]


@pytest.mark.golden
def test_mindeval_leaderboard_outputs_are_byte_identical(tmp_path):
    runs = _runs(tmp_path / "runs")
    out = tmp_path / "board"
    # runs b and c are scored 11/12 (b: a failed judge sample, c: a lost conversation): ranked only with
    # allow_incomplete, and every output says so.
    written = write_outputs(build_leaderboard(runs, StatsSettings(resamples=2000, seed=3), allow_incomplete=True), out)
    got = {p.name: p.read_text(encoding="utf-8").replace(str(tmp_path / "runs"), PLACEHOLDER) for p in written}
    assert_golden(got, GOLDEN, loose_last_digit=True)
