"""Human corrections of judge values: append-only rows with provenance, the judge's record untouched,
applied only by `leaderboard --with-corrections` (counted in every format), reply and question units,
refused input as one line."""

from __future__ import annotations

import csv
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from mindeval.cli import main
from mindeval.corrections import CorrectionRequest, correct, run_corrections
from mindeval.errors import MindEvalError
from mindeval.judging.rubric import derive_level
from mindeval.leaderboard import build_leaderboard
from mindeval.targets import load_target

ROOT = Path(__file__).resolve().parents[2]
OLD = ROOT / "tests" / "fixtures" / "main_665ffb1" / "corr_run"  # made by main 665ffb1 (run store version 2)
FAKE = ["--patient", "fake/echo", "--clinician", "fake/echo", "--judge", "fake/judge", "--limit", "2", "--turns", "2",
        "--quiet"]


def _rows(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def _sql(db: Path, q: str) -> list:
    with sqlite3.connect(db) as c:
        return c.execute(q).fetchall()


@pytest.fixture
def run(tmp_path) -> Path:
    out = tmp_path / "run"
    shutil.copytree(OLD, out)
    return out


def _target_run(tmp_path: Path, target: str) -> Path:
    out = tmp_path / target
    assert main(["run", "--target", target, *FAKE, "--out", str(out)]) == 0
    return out


def test_corrections_are_appended_with_provenance_and_the_latest_applies(run, capsys):
    j0, j1 = _rows(run / "judgments.jsonl")
    iid = j0["interaction_id"]
    judged = _sql(run / "run.db", "SELECT interaction_id, sample, scores_json, raw_text FROM judgments ORDER BY id")
    jsonl = (run / "judgments.jsonl").read_bytes()
    args = ["correct", str(run), "--interaction", iid, "--axis", "EPC"]
    assert main([*args, "--to", "5", "--reason", "warm and specific", "--who", "ana"]) == 0
    assert main([*args, "--to", "4", "--reason", "on a second reading, less specific"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("ana ") and f"EPC {j0['scores']['EPC']} → 5 (warm and specific)" in out[0]
    assert "EPC 5 → 4" in out[1]  # from: the value in force, the earlier correction's
    rows = run_corrections(run)
    assert [(c.who, c.from_value, c.to_value, c.unit, c.sample) for c in rows] == [
        ("ana", j0["scores"]["EPC"], 5, "conversation", 0), (rows[1].who, 5, 4, "conversation", 0)]
    assert rows[1].who and all(c.at is not None for c in rows)
    # the judge's record is unchanged
    assert _sql(run / "run.db", "SELECT interaction_id, sample, scores_json, raw_text FROM judgments ORDER BY id") == judged
    assert (run / "judgments.jsonl").read_bytes() == jsonl
    # judge-only by default, the latest correction with --with-corrections
    plain = build_leaderboard([run]).table.systems[0].results
    fixed = build_leaderboard([run], with_corrections=True)
    assert plain["EPC"].mean == (j0["scores"]["EPC"] + j1["scores"]["EPC"]) / 2
    assert fixed.table.systems[0].results["EPC"].mean == (4 + j1["scores"]["EPC"]) / 2
    expected_avg = (sum({**j0["scores"], "EPC": 4}.values()) / 5 + j1["average"]) / 2
    assert fixed.table.systems[0].results["average"].mean == pytest.approx(expected_avg)
    assert fixed.runs[0].corrections.model_dump() == {"corrections": 1, "scores": 1, "conversations": 1}


def test_every_leaderboard_format_says_how_many_were_corrected(run, tmp_path, capsys):
    iid = _rows(run / "judgments.jsonl")[1]["interaction_id"]
    assert main(["correct", str(run), "--interaction", iid, "--axis", "CAC", "--to", "6", "--reason", "r"]) == 0
    assert main(["leaderboard", str(run), "--out", str(tmp_path / "plain"), "--no-report"]) == 0
    assert main(["leaderboard", str(run), "--with-corrections", "--out", str(tmp_path / "fixed")]) == 0
    report = capsys.readouterr().out
    assert "WITH CORRECTIONS: 1 human correction(s) applied" in report and "1 scores in 1 conv." in report
    fixed, plain = (json.loads((tmp_path / d / "leaderboard.json").read_text()) for d in ("fixed", "plain"))
    assert fixed["with_corrections"] is True and fixed["corrections_note"].startswith("WITH CORRECTIONS")
    assert fixed["runs"][0]["corrections"] == {"corrections": 1, "scores": 1, "conversations": 1}
    assert fixed["columns"]["corrected"] == {"fake/echo": {"corrections": 1, "scores": 1, "conversations": 1}}
    assert "with_corrections" not in plain and "corrections" not in plain["runs"][0] and "columns" not in plain
    [row] = list(csv.DictReader((tmp_path / "fixed" / "leaderboard.csv").open()))
    assert (row["corrections"], row["corrected_scores"], row["corrected_conversations"]) == ("1", "1", "1")
    assert "corrections" not in next(csv.reader((tmp_path / "plain" / "leaderboard.csv").open()))
    assert "WITH CORRECTIONS" in (tmp_path / "fixed" / "leaderboard.md").read_text()
    assert "WITH CORRECTIONS" in (tmp_path / "fixed" / "leaderboard.tex").read_text()


@pytest.mark.parametrize(("extra", "message"), [
    (["--to", "5", "--reason", "  "], "error: --reason: a correction needs a reason"),
    (["--to", "9", "--reason", "r"], "error: --to: 9 is not a score from 1 to 6"),
    (["--to", "2.5", "--reason", "r"], "error: --to: 2.5 is not a whole number"),
    (["--to", "great", "--reason", "r"], "error: --to: 'great' is not a value of the scale"),
    (["--to", "not_relevant", "--reason", "r"], "error: --to: CAC cannot be rated not relevant"),
    (["--to", "5", "--reason", "r", "--reply", "1"], "error: --reply: target mindeval judges no single replies"),
    (["--to", "yes", "--reason", "r", "--question", "q1"], "error: --axis: 'CAC' has no questions"),
    (["--to", "5", "--reason", "r", "--sample", "3"], "error: --sample: interaction"),
])
def test_bad_input_is_one_line_and_nothing_is_stored(run, capsys, extra, message):
    iid = _rows(run / "judgments.jsonl")[0]["interaction_id"]
    assert main(["correct", str(run), "--interaction", iid, "--axis", "CAC", *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1 and "Traceback" not in err
    assert run_corrections(run) == []


def test_unknown_interaction_axis_and_missing_options_are_one_line(run, capsys):
    assert main(["correct", str(run), "--interaction", "nope", "--axis", "CAC", "--to", "3", "--reason", "r"]) == 2
    assert main(["correct", str(run), "--interaction", "x", "--axis", "CAC", "--to", "3"]) == 2
    iid = _rows(run / "judgments.jsonl")[0]["interaction_id"]
    assert main(["correct", str(run), "--interaction", iid, "--axis", "ZZ", "--to", "3", "--reason", "r"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == ["error: --interaction: no judgment of interaction 'nope' in this run",
                   "error: --reason: required (or --list)",
                   "error: --axis: 'ZZ' is not an axis of target mindeval (CAC, EPC, AR, TRA, ASCQ)"]


def test_a_reply_level_and_a_flag_are_corrected_and_the_conversation_follows(tmp_path):
    out = _target_run(tmp_path, "reply_safety")
    j = _rows(out / "judgments.jsonl")[0]
    iid, reply = j["interaction_id"], j["replies"][0]
    flag = next(iter(reply["flags"]))
    [c] = correct(out, CorrectionRequest(interaction_id=iid, axis="SEVERITY", to="critical", reason="missed a cue",
                                         reply=1, who="rev"))
    assert (c.unit, c.ref, c.from_value, c.to_value) == ("reply", str(reply["turn"]), reply["level"], "critical")
    was = "yes" if reply["flags"][flag] else "no"
    [f] = correct(out, CorrectionRequest(interaction_id=iid, axis=flag, to="no" if was == "yes" else "yes",
                                         reason="flag wrong", reply=1, who="rev"))
    assert f.from_value == was
    with pytest.raises(MindEvalError, match="reply 9 does not exist"):
        correct(out, CorrectionRequest(interaction_id=iid, axis="SEVERITY", to="minor", reason="r", reply=9))
    with pytest.raises(MindEvalError, match="is not a level of the scale"):
        correct(out, CorrectionRequest(interaction_id=iid, axis="SEVERITY", to="awful", reason="r", reply=1))
    [fixed] = build_leaderboard([out], allow_incomplete=True, with_corrections=True).run_data.values()
    assert fixed.samples[iid][0]["SEVERITY"] == 0.0  # critical = 0: the worst reply level
    first = next(r for r in fixed.reply_ratings if r.conversation == iid)
    assert first.level == "critical" and first.flags[flag] == (was == "no")  # what the reply figures read
    [plain] = build_leaderboard([out], allow_incomplete=True).run_data.values()
    assert plain.samples[iid][0]["SEVERITY"] == j["scores"]["SEVERITY"]


def test_a_question_answer_is_corrected_and_the_level_follows_the_rubric(tmp_path):
    out = _target_run(tmp_path, "risk_checklist")
    j = _rows(out / "judgments.jsonl")[0]
    iid, answers = j["interaction_id"], j["answers"]
    g = load_target("risk_checklist").guidelines
    axis = next(a for a in g.judge_axes if a.code == "CONTENT")
    q = axis.questions[0]
    to = next(a for a in q.answers if a != answers.get(q.id))
    [c] = correct(out, CorrectionRequest(interaction_id=iid, axis="CONTENT", question=q.id, to=to, reason="misread"))
    level, _ = derive_level(axis.questions, axis.rule, {**answers, q.id: to}, [(lv.id, lv.value) for lv in g.levels])
    want = None if level in (None, "not_relevant") else g.value_of(level)
    assert (c.unit, c.ref, c.from_value, c.to_value, c.derived) == ("question", q.id, answers.get(q.id), to, want)
    with pytest.raises(MindEvalError, match="is not a question of CONTENT"):
        correct(out, CorrectionRequest(interaction_id=iid, axis="CONTENT", question="n_cue_present", to="yes",
                                       reason="r"))
    with pytest.raises(MindEvalError, match="is answered"):
        correct(out, CorrectionRequest(interaction_id=iid, axis="CONTENT", question=q.id, to="maybe", reason="r"))
    [fixed] = build_leaderboard([out], allow_incomplete=True, with_corrections=True).run_data.values()
    got = fixed.samples[iid][0]["CONTENT"]
    assert (got != got and want is None) or got == want


def test_a_runs_corrected_conversations_are_few_shot_examples_with_their_corrected_scores(run, tmp_path):
    from mindeval.engine.prepare import prepare
    from mindeval.judging.render import render_fewshot
    from mindeval.run_options import RunOptions

    j0 = _rows(run / "judgments.jsonl")[0]
    opts = RunOptions(patient="fake/echo", clinician="fake/echo:other", judge="fake/judge", profiles="demo", limit=1,
                      turns=2, fewshot_file=str(run), fewshot_k=1, out=str(tmp_path / "new"))
    with pytest.raises(MindEvalError, match="0 corrected conversation"):
        prepare(opts)
    correct(run, CorrectionRequest(interaction_id=j0["interaction_id"], axis="TRA", to="1", reason="unsafe", who="r"))
    prep = prepare(opts)
    [ex] = prep.fewshot
    assert ex.interaction_id == j0["interaction_id"] and ex.scores == {**{k: float(v) for k, v in j0["scores"].items()},
                                                                        "TRA": 1.0}
    assert prep.config.fewshot_source == str(run) and prep.config.fewshot_k == 1 and prep.config.fewshot_sha256
    assert '"TRA": 1.0' in render_fewshot(prep.fewshot, "mindeval", prep.guidelines)
    assert main(["run", *FAKE[:6], "--limit", "1", "--turns", "2", "--quiet", "--fewshot-file", str(run),
                 "--fewshot-k", "1", "--out", str(tmp_path / "new2")]) == 0


def test_how_the_reviewer_is_known_is_stored_listed_and_exported(run, capsys):
    iid = _rows(run / "judgments.jsonl")[0]["interaction_id"]
    args = ["correct", str(run), "--interaction", iid, "--axis", "EPC", "--sample", "0"]
    assert main([*args, "--to", "5", "--reason", "r1", "--who", "ana"]) == 0  # typed: her own word
    assert main([*args, "--to", "4", "--reason", "r2"]) == 0  # no name: this computer's account
    correct(run, CorrectionRequest(interaction_id=iid, axis="EPC", to="3", reason="r3", sample=0, who="boss",
                                   who_source="signed-in"))  # what the annotation app passes for its signed-in admin
    rows = run_corrections(run)
    assert [(c.who_source, c.provenance()["who_source"]) for c in rows] == [
        ("self-declared", "self-declared"), ("os-user", "os-user"), ("signed-in", "signed-in")]
    capsys.readouterr()
    assert main(["correct", str(run), "--list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("ana (self-declared) ") and " (this computer's user) " in out[1]
    assert out[2].startswith("boss (signed in to the annotation app) ")


def test_a_store_of_schema_4_reads_its_corrections_as_not_recorded_then_upgrades(run, capsys):
    from mindeval.corrections import describe
    from mindeval.store.db import Database, sqlite_url
    from mindeval.store.migrations import HEAD, current_version

    iid = _rows(run / "judgments.jsonl")[0]["interaction_id"]
    req = dict(interaction_id=iid, axis="EPC", to="5", reason="r", sample=0)
    correct(run, CorrectionRequest(**req, who="ana"))
    with sqlite3.connect(run / "run.db") as c:  # as a release before who_source left it
        c.execute("ALTER TABLE corrections DROP COLUMN who_source")
        c.execute("UPDATE run_schema_version SET version = 4")
    [old] = run_corrections(run)  # read without upgrading (the viewer, the leaderboard)
    assert old.who_source is None and describe(old).startswith("ana (identity not recorded) ")
    correct(run, CorrectionRequest(**req, who="ben"))  # writing upgrades the store
    assert current_version(Database(sqlite_url(run / "run.db"), create=False).engine) == HEAD
    assert [(c.who, c.who_source) for c in run_corrections(run)] == [("ana", None), ("ben", "self-declared")]
