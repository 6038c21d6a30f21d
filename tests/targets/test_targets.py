"""Targets: manifests, validation (file:line:field), categorical judging and runs of a
non-MindEval target end to end with fake models (offline)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from targetkit import problems_of

from mindeval import read_run
from mindeval.cli import main
from mindeval.errors import MindEvalError
from mindeval.judging.answer import JudgeParseError, parse_scores, score_schema
from mindeval.judging.reply_format import render_output_format
from mindeval.llm import fake
from mindeval.records import AXES, JudgmentRecord, TargetInfo, check_scores, load_profiles
from mindeval.resources import targets_dir
from mindeval.rundir import legacy_target
from mindeval.targets import list_targets, load_target, validate_target
from mindeval.targets.guidelines import guideline_problems, load_guidelines
from tests.support.rundirs import set_score

TOY = Path(__file__).resolve().parents[1] / "fixtures" / "targets" / "toy"
FAKE = ["--patient", "fake/echo", "--clinician", "fake/echo", "--judge", "fake/judge", "--quiet"]


@pytest.fixture
def toy(tmp_path: Path) -> Path:
    """A writable copy of the toy categorical target."""
    return Path(shutil.copytree(TOY, tmp_path / "toy"))


# ------------------------------------------------------------------ manifests


def test_builtin_mindeval_target_points_at_the_shipped_files():
    t = load_target()
    assert t.name == "mindeval" and t.is_builtin and t.block().legacy_files
    assert t.manifest.turns == 20 and t.manifest.opening_line == "Hello." and t.profiles() is None
    assert t.guidelines.sha256 == load_guidelines().sha256
    assert t.template("judge").ref == "judge/default@v2"
    assert "mindeval" in [x.name for x in list_targets()]
    assert validate_target("mindeval") == []
    assert load_target(targets_dir() / "mindeval").sha256 == t.sha256


def test_target_by_path_and_its_record_block(toy):
    t = load_target(toy)
    assert not t.is_builtin and not t.block().legacy_files and t.name == "toy"
    assert load_target(toy / "target.yaml").sha256 == t.sha256
    info = TargetInfo.model_validate(t.info())
    assert info.axes == ["DETECT", "GUIDE"] and info.values() == (2, 1, 0) and info.harm_values == (0,)
    (toy / "guidelines.yaml").write_text((toy / "guidelines.yaml").read_text() + "\n# edited\n")
    assert load_target(toy).sha256 != t.sha256  # any named file changes the target's hash


def test_unknown_target_is_one_clear_error(tmp_path, capsys):
    with pytest.raises(MindEvalError, match="no target 'nope'.*mindeval"):
        load_target("nope")
    assert main(["run", *FAKE, "--target", str(tmp_path / "missing"), "--out", str(tmp_path / "D")]) == 2
    assert "no target" in capsys.readouterr().err


# ------------------------------------------------------------------ validation


def test_validate_reports_every_problem_with_file_line_field(toy, capsys):
    manifest = toy / "target.yaml"
    manifest.write_text(manifest.read_text().replace("turns: 2", "turns: 0\nextra_key: 1"))
    g = toy / "guidelines.yaml"
    g.write_text(g.read_text().replace("      value: 1\n", "      value: 2\n"))
    got = problems_of(toy)
    assert f"{manifest}:8:turns: Input should be greater than or equal to 1" in got
    assert f"{manifest}:9:extra_key: unknown field (check the spelling)" in got
    assert f"{g}:5:scale.levels: duplicate level value 2 (items 0 and 1)" in got  # the files are checked too
    assert main(["targets", "validate", str(toy)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and all(line.startswith("error: /") for line in err)


def test_validate_checks_guidelines_templates_and_profiles(toy):
    g = toy / "guidelines.yaml"
    g.write_text(g.read_text().replace("      - band: suboptimal\n        label: Generic guidance",
                                       "      - band: fine\n        label: Generic guidance")
                 .replace("      suboptimal: Vague.\n", ""))
    clin = toy / "prompts" / "clinician.txt"
    clin.write_text(clin.read_text() + "Backstory: ${member_narrative}\n")
    rows = (toy / "profiles.jsonl").read_text().splitlines()
    bad = json.loads(rows[1])
    bad["member_attributes"]["age"] = 300
    rows[1] = json.dumps(bad)
    (toy / "profiles.jsonl").write_text("\n".join(rows) + "\n{oops\n")
    got = problems_of(toy)
    assert any(p.startswith(f"{g}:36:judge_axes.1.anchors: anchors need one band per level") for p in got), got
    assert any(p.startswith(f"{g}:57:human_subaxes.1.anchors: anchors need exactly the level ids") for p in got), got
    assert any(p.startswith(f"{clin}:8:member_narrative: clinician templates may only use the intake fields")
               for p in got), got
    assert f"{toy / 'profiles.jsonl'}:2:member_attributes.age: age must be between 1 and 129" in got
    assert any(p.startswith(f"{toy / 'profiles.jsonl'}:4: malformed JSON") for p in got), got
    assert len(got) == 5


def test_validate_names_a_missing_file_at_its_manifest_line(toy):
    (toy / "prompts" / "judge.txt").unlink()
    assert problems_of(toy) == [f"{toy / 'target.yaml'}:13:prompts.judge: file not found: {toy / 'prompts/judge.txt'}"]


def test_targets_list_cli(capsys):
    assert main(["targets", "list"]) == 0
    out = capsys.readouterr().out
    starts = [line.split("  /")[0] for line in out.splitlines() if not line.startswith(" ")]
    assert "mindeval 1.0.0  (5 dimensions: CAC, EPC, AR, TRA, ASCQ; ordinal scale; 20 turns)" in starts
    assert starts == sorted(starts)  # listed by name


# ------------------------------------------------------------------ categorical judging


def test_categorical_replies_parse_to_level_values():
    g = load_target(TOY).guidelines
    assert parse_scores('{"DETECT": "best_practice", "GUIDE": "potential_harm"}', g) == (
        {"DETECT": 2, "GUIDE": 0}, None)
    # a label, a level's number, Markdown lines
    assert parse_scores('{"DETECT": "Suboptimal", "GUIDE": 2, "rationale": "ok"}', g) == (
        {"DETECT": 1, "GUIDE": 2}, "ok")
    assert parse_scores("**DETECT**: best_practice\n**Guides to help**: potential harm", g)[0] == {
        "DETECT": 2, "GUIDE": 0}
    for bad, why in [('{"DETECT": "great", "GUIDE": "suboptimal"}', "not one of the levels"),
                     ('{"DETECT": "best_practice"}', "missing score(s) for GUIDE"),
                     ('{"DETECT": 5, "GUIDE": 1}', "not one of the levels"),
                     ("DETECT: suboptimal or potential_harm\nGUIDE: suboptimal", "more than one level")]:
        with pytest.raises(JudgeParseError, match=why.replace("(", r"\(").replace(")", r"\)")):
            parse_scores(bad, g)


def test_grammar_and_output_format_come_from_the_target():
    g = load_target(TOY).guidelines
    enum = {"type": "string", "enum": ["best_practice", "suboptimal", "potential_harm"]}
    assert score_schema(g) == {"type": "object", "properties": {"DETECT": enum, "GUIDE": enum},
                               "required": ["DETECT", "GUIDE"]}
    assert score_schema() == {"type": "object", "required": list(AXES),
                              "properties": {ax: {"type": "integer", "enum": [1, 2, 3, 4, 5, 6]} for ax in AXES}}
    assert '"DETECT": "<best_practice|suboptimal|potential_harm>"' in render_output_format(g)


def test_scores_are_checked_against_the_target_block():
    info = TargetInfo.model_validate(load_target(TOY).info())
    assert check_scores({"DETECT": 2, "GUIDE": 0.0}, target=info) == {"DETECT": 2, "GUIDE": 0}
    with pytest.raises(ValueError, match="score 3 is not one of 2, 1, 0"):
        check_scores({"DETECT": 3, "GUIDE": 0}, target=info)
    with pytest.raises(ValueError, match="exactly the axes DETECT, GUIDE"):
        check_scores({"DETECT": 2}, target=info)
    row = {"interaction_id": "i", "profile_id": "p", "model": "m", "judge_model": "j", "target": "toy",
           "scores": {"DETECT": 2, "GUIDE": 0}}
    rec = JudgmentRecord.model_validate(row, context={"target": info})
    assert rec.model_dump()["target"] == "toy" and rec.average == 1.0
    mindeval_row = JudgmentRecord.model_validate({**row, "target": "mindeval", "scores": dict.fromkeys(AXES, 3)},
                                                 context={"target": legacy_target()})
    assert "target" not in mindeval_row.model_dump()  # MindEval's files are unchanged
    with pytest.raises(ValueError, match="a judgment of target 'toy' in a run of target 'mindeval'"):
        JudgmentRecord.model_validate(row, context={"target": legacy_target()})


# ------------------------------------------------------------------ a run of a categorical target


def test_categorical_target_runs_end_to_end_offline(toy, tmp_path, capsys):
    out = tmp_path / "run"
    args = [*FAKE, "--target", str(toy), "--out", str(out)]
    assert main(["run", *args]) == 0
    printed = capsys.readouterr().out
    assert "target=toy" in printed and "DETECT" in printed and "GUIDE" in printed
    cfg = json.loads((out / "config.json").read_text())["config"]
    assert cfg["turns"] == 2 and cfg["opening_line"] == "Hi there."
    assert cfg["prompts"]["judge"]["ref"] == "judge/toy_judge@v1"
    assert cfg["target"]["name"] == "toy" and cfg["target"]["axes"] == ["DETECT", "GUIDE"]
    assert cfg["target"]["scale"]["levels"][2] == {"id": "potential_harm", "label": "Potential for harm",
                                                   "value": 0, "harm": True}
    run = read_run(out)
    assert len(run.interactions) == 3 and run.interactions[0].messages[0].content == "Hi there."
    assert all(j.target == "toy" and set(j.scores) == {"DETECT", "GUIDE"} for j in run.judgments)
    assert all(v in (0, 1, 2) for j in run.judgments for v in j.scores.values())
    assert list(run.to_frame().columns[-3:]) == ["DETECT", "GUIDE", "average"]
    s = json.loads((out / "summary.json").read_text())
    assert set(s["means"]) == {"DETECT", "GUIDE", "average"} and s["target"] == "toy"
    k = sum(any(v == 0 for v in j.scores.values()) for j in run.judgments)
    assert s["harm"]["n"] == 3 and s["harm"]["k"] == k and s["harm"]["share"] == pytest.approx(k / 3)
    lo, hi = s["harm"]["ci95"]
    assert 0 <= lo <= k / 3 <= hi <= 1
    # the run resumes without a call; explicit flags override the target (a new configuration)
    before = sum(fake.CALLS.values())
    assert main(["run", *args]) == 0 and sum(fake.CALLS.values()) == before
    assert main(["run", *args, "--turns", "4"]) == 2
    assert "turns: 2 -> 4" in capsys.readouterr().err


def test_a_tampered_score_names_file_line_and_field(toy, tmp_path):
    out = tmp_path / "run"
    assert main(["run", *FAKE, "--target", str(toy), "--out", str(out)]) == 0
    path = out / "judgments.jsonl"
    set_score(path, 1, "GUIDE", 5)
    with pytest.raises(MindEvalError) as e:
        read_run(out)
    assert str(e.value) == f"{path}:2:scores.GUIDE: score 5 is not one of 2, 1, 0"


def test_unparseable_categorical_replies_are_retried_then_recorded_as_failed(toy, tmp_path):
    judge = fake.script("toy-judge", ['{"answer_code": "<NONCE>", "DETECT": "great", "GUIDE": "suboptimal"}',
                                      '{"answer_code": "<NONCE>", "DETECT": "suboptimal"}'])
    out = tmp_path / "run"
    rc = main(["run", "--patient", "fake/echo", "--clinician", "fake/echo", "--judge", judge, "--quiet",
               "--target", str(toy), "--limit", "1", "--judge-retries", "2", "--out", str(out)])
    assert rc == 1
    [j] = read_run(out).judgments
    assert j.parse_status == "failed" and j.scores is None and j.attempts == 2
    assert "missing score(s) for GUIDE" in j.error
    s = json.loads((out / "summary.json").read_text())
    assert s["means"]["DETECT"] is None and s["harm"] == {"n": 0, "k": 0, "share": None, "ci95": None}


def test_mindeval_only_judge_settings_are_refused_for_another_target(toy, tmp_path, capsys):
    assert main(["run", *FAKE, "--target", str(toy), "--judge-protocol", "paper", "--out", str(tmp_path / "D")]) == 2
    assert "paper is MindEval's own judge" in capsys.readouterr().err
    shots = tmp_path / "shots.jsonl"
    shots.write_text("{}\n")
    assert main(["run", *FAKE, "--target", str(toy), "--fewshot-file", str(shots), "--out", str(tmp_path / "D")]) == 2
    assert "error: --fewshot-file: few-shot examples are MindEval ratings" in capsys.readouterr().err


# ------------------------------------------------------------------ a third target from crisis


def test_third_target_copied_from_crisis_runs_without_code_changes(tmp_path, capsys):
    crisis = targets_dir() / "crisis"
    if not (crisis / "target.yaml").is_file():
        pytest.skip("targets/crisis is not in this checkout yet")
    third = Path(shutil.copytree(crisis, tmp_path / "third"))
    manifest = yaml.safe_load((third / "target.yaml").read_text())
    manifest.update(name="third", version="0.0.1", turns=2, opening_line="Hey.",
                    description="A copy of crisis with one dimension fewer, for the test.")
    (third / "target.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    g = yaml.safe_load((third / "guidelines.yaml").read_text())
    dropped = g["judge_axes"].pop()["code"]
    g["human_subaxes"] = [s for s in g["human_subaxes"] if s["axis"] != dropped]
    (third / "guidelines.yaml").write_text(yaml.safe_dump(g, sort_keys=False, allow_unicode=True))
    profiles = (third / "profiles.jsonl").read_text().splitlines()[:3]
    (third / "profiles.jsonl").write_text("\n".join(profiles) + "\n")
    kept = {p.id for p in load_profiles(third / "profiles.jsonl")}
    labels = yaml.safe_load((third / "profile_labels.yaml").read_text())
    (third / "profile_labels.yaml").write_text(yaml.safe_dump({k: v for k, v in labels.items() if k in kept},
                                                              allow_unicode=True))
    codes = [a["code"] for a in g["judge_axes"]]

    assert main(["targets", "validate", str(third)]) == 0
    out = tmp_path / "run"
    assert main(["run", *FAKE, "--target", str(third), "--out", str(out)]) == 0
    run = read_run(out)
    assert run.target.name == "third" and run.target.axes == codes and dropped not in codes
    assert len(run.interactions) == 3 and run.interactions[0].messages[0].content == "Hey."
    assert all(list(j.scores) == codes for j in run.judgments)
    s = json.loads((out / "summary.json").read_text())
    assert list(s["means"]) == [*codes, "average"] and s["harm"]["n"] == 3


def test_an_ordinal_scale_other_than_1_to_6(tmp_path):
    from mindeval.targets.guidelines import default_path

    raw = yaml.safe_load(default_path().read_text())
    raw["scale"].update(min=0, max=4, levels={i: f"level {i}" for i in range(5)})
    for axis in raw["judge_axes"]:
        for anchor, band in zip(axis["anchors"], ("0-1", "2-3", "4"), strict=True):
            anchor["band"] = band
    for sub in raw["human_subaxes"]:
        sub["anchors"] = {0: "low", 4: "high"}
    path = tmp_path / "g.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    g = load_guidelines(path)
    assert g.score_values() == (0, 1, 2, 3, 4) and g.harm_levels == ()
    assert parse_scores("\n".join(f"{ax}: {i}/4" for i, ax in enumerate(AXES)), g)[0] == dict(zip(AXES, range(5)))
    with pytest.raises(JudgeParseError, match="outside 0-4"):
        parse_scores(json.dumps(dict.fromkeys(AXES, 5)), g)
    raw["judge_axes"][0]["anchors"][1]["band"] = "1-3"  # overlaps 0-1
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    with pytest.raises(MindEvalError, match="covering 0-4 in order without gaps or overlap") as e:
        load_guidelines(path)
    assert e.value.field == "judge_axes.0.anchors" and e.value.line is not None


def test_categorical_scale_errors_name_their_field(toy):
    g = toy / "guidelines.yaml"
    text = g.read_text()
    g.write_text(text.replace("      value: 1\n", "      value: 2\n").replace("kind: categorical", "kind: nominal"))

    got = [str(p) for p in guideline_problems(g)]
    assert got == [f"{g}:2:scale: kind must be one of ordinal, categorical"]
    g.write_text(text.replace("      value: 1\n", "      value: 2\n"))
    got = [str(p) for p in guideline_problems(g)]
    assert got == [f"{g}:5:scale.levels: duplicate level value 2 (items 0 and 1)"]
