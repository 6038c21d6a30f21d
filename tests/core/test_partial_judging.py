"""Partial judging (``partial_judging: true`` in target.yaml): every judged unit counts, and the
coverage and refusal rate stand beside every figure (summary.json, the console, the leaderboard in
every format, ``--by session``). The strict rule (the default) is tests/core/test_sessions.py's."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from mindeval.cli import main
from mindeval.llm import fake

TARGET = Path(__file__).resolve().parents[2] / "targets" / "reply_safety"
FLAGS = ("missed_risk_cue", "unsafe_advice", "claims_human", "diagnosis_overreach", "dismissive",
         "wrong_crisis_info", "unfitting_length", "boundary_slip")


def _verdict(level: str) -> str:
    return json.dumps({"answer_code": "<NONCE>", "SEVERITY": level, **{f"flag_{f}": "no" for f in FLAGS}})


def _target(tmp_path: Path, partial: bool) -> Path:
    t = shutil.copytree(TARGET, tmp_path / ("partial" if partial else "strict"))
    if partial:
        (t / "target.yaml").write_text((t / "target.yaml").read_text() + "partial_judging: true\n")
    return t


def _run(tmp_path: Path, partial: bool, capsys) -> tuple[int, dict, Path, str]:
    """One member, two check-ins of two replies each: session 1 minor then no concern, session 2
    major then a reply the judge never answers readably (refused)."""
    judge = fake.script(f"partial-{partial}", [_verdict("minor"), _verdict("no_concern"), _verdict("major"),
                                               "not an answer"])
    out = tmp_path / f"run-{partial}"
    code = main(["run", "--target", str(_target(tmp_path, partial)), "--limit", "1", "--turns", "4",
                 "--judge-retries", "1", "--concurrency", "1", "--patient", "fake/echo", "--clinician", "fake/echo",
                 "--judge", judge, "--out", str(out)])
    return code, json.loads((out / "summary.json").read_text()), out, capsys.readouterr().out


def test_the_strict_rule_leaves_the_member_out(tmp_path, capsys):
    code, summary, _, _ = _run(tmp_path, False, capsys)
    assert code == 1 and summary["n_means_over"] == 0 and "partial_judging" not in summary
    assert summary["replies"]["ratings"] == 0


def test_the_partial_rule_counts_the_judged_replies_with_coverage_and_refusals(tmp_path, capsys):
    code, summary, out, console = _run(tmp_path, True, capsys)
    assert code == 0  # a refused reply is left out, not missing: nothing to re-run
    # session 1: worst of minor (2) and no concern (3) = 2; session 2: its one judged reply, major (1)
    assert summary["n_means_over"] == 2 and summary["means"] == {"SEVERITY": 1.5, "average": 1.5}
    assert summary["replies"]["ratings"] == 3
    block = summary["partial_judging"]
    assert (block["k"], block["n"], block["left_out"], block["members_left_out"]) == (3, 4, 1, 0)
    assert block["share"] == 0.75 and block["ci95"] == [0.3006, 0.9544]  # Wilson, 3 of 4
    assert block["refused_rounds"] == {"k": 1, "n": 2, "share": 0.5, "ci95": [0.0945, 0.9055]}
    assert "judged 75% [30%, 95%] (3/4) of the replies asked, 1 left out" in console
    assert "refused judge rounds 50% [9%, 91%] (1/2)" in console and "INCOMPLETE" not in console
    assert "2 judged replies 0% [0%, 66%] (1/2)" not in console and "2 n=1" in console
    print(console)
    by = summary["by_session"]
    assert (by["1"]["coverage"]["k"], by["1"]["coverage"]["n"], by["2"]["coverage"]["k"], by["2"]["coverage"]["n"]) \
        == (2, 2, 1, 2)
    assert by["2"]["coverage"]["refused_rounds"]["k"] == 1


def test_the_field_is_recorded_only_when_declared(tmp_path, capsys):
    """A target without ``partial_judging`` writes the config (and hash) it wrote before the field."""
    from mindeval.records import TargetInfo

    _, strict, strict_out, _ = _run(tmp_path, False, capsys)
    _, partial, partial_out, _ = _run(tmp_path, True, capsys)
    block = json.loads((strict_out / "config.json").read_text())["config"]["target"]
    assert "partial_judging" not in block and TargetInfo.model_validate(block).model_dump() == block
    assert json.loads((partial_out / "config.json").read_text())["config"]["target"]["partial_judging"] is True
    assert strict["config_hash"] != partial["config_hash"]
