"""Byte-identity of `metaeval compare` outputs for MindEval (no target).

Floats are written to 6 decimals (mindeval.stats.precision); each number may differ from the
pinned one by one unit in its last digit (a rounding boundary tipped by another CPU's last bit),
all other text is byte-identical (tests/metaeval/test_golden_any_machine.py varies BLAS settings).

The golden files were written by `metaeval compare` before it learnt about targets.
Regenerate only for an intended change: ``python -m tests.support.golden`` (every golden file).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from metaeval_builders import write_judgments

from metaeval.sources import load_authors_annotations
from mindeval.cli.meta import main
from tests.support.golden import assert_golden

GOLDEN = Path(__file__).parent / "golden" / "mindeval_compare"
AXES = ("CAC", "EPC", "AR", "TRA", "ASCQ")


@pytest.mark.golden
def test_mindeval_compare_outputs_are_byte_identical(tiny_authors, tmp_path, capsys):
    src = load_authors_annotations(tiny_authors)
    p1 = src.raters[0].frame
    rows = []
    for n, (iid, it) in enumerate(src.interactions.items()):
        base = {ax: p1[(p1.interaction_id == iid) & (p1.axis == ax)]["score"].iloc[0] for ax in AXES}
        for r in range(3):
            scores = {ax: int(min(6, max(1, round(v + ((r + n) % 3 - 1 if ax in ("CAC", "AR") else 0)))))
                      for ax, v in base.items()}
            rows.append({"interaction_id": iid, "profile_id": it.profile_id, "model": it.system,
                         "judge_model": "sys/alpha", "sample": r, "scores": scores})
    jdir = write_judgments(tmp_path / "judge", rows, {"run_id": "x"})
    out = tmp_path / "cmp"
    # The goldens were written with 1,000 resamples (the default then; 2,000 now, as the leaderboard's).
    assert main(["compare", "--humans", str(tiny_authors), "--judges", f"J={jdir}", "--out", str(out),
                 "--no-plots", "--resamples", "1000"]) == 0
    printed = capsys.readouterr().out
    got = {p.name: p.read_text(encoding="utf-8") for p in sorted(out.iterdir())}
    got["stdout.txt"] = printed
    got = {k: v.replace(str(tmp_path), "<TMP>") for k, v in got.items()}
    assert_golden(got, GOLDEN, loose_last_digit=True)


def test_explicit_target_mindeval_changes_nothing(tiny_authors, tmp_path, capsys):
    out = tmp_path / "cmp"
    assert main(["compare", "--humans", str(tiny_authors), "--target", "mindeval", "--out", str(out),
                 "--no-plots"]) == 0
    plain = tmp_path / "plain"
    assert main(["compare", "--humans", str(tiny_authors), "--out", str(plain), "--no-plots"]) == 0
    for name in ("agreement.md", "agreement.csv", "agreement.json"):
        assert (out / name).read_bytes() == (plain / name).read_bytes(), name
