"""Item-level rubrics: questions with severities and branching, judge-side "not relevant".

The example target ``risk_checklist`` runs end to end with fake models; with scripted judge
answers, its levels, per-level shares and means equal a hand computation.
"""

import json
import shutil
from pathlib import Path

import pytest

from mindeval.cli import main
from mindeval.judging.rubric import LevelRule, Question, derive_level
from mindeval.llm import fake
from mindeval.rundir import read_run
from mindeval.targets import load_target, validate_target
from tests.support.items import answers as _answers
from tests.support.items import reply

ROOT = Path(__file__).resolve().parents[2] / "targets" / "risk_checklist"
LEVELS = [("best_practice", 2), ("suboptimal", 1), ("potential_harm", 0)]


def test_example_target_validates_with_branching_yes_no_questions():
    assert [str(p) for p in validate_target(ROOT)] == []
    g = load_target(ROOT).guidelines
    questions = [q for ax in g.judge_axes for q in ax.questions]
    assert len(questions) >= 25
    assert all(q.answers[:2] == ["yes", "no"] for q in questions)
    assert sum(bool(q.severity) for q in questions) >= 20
    assert sum(bool(q.next) for q in questions) >= 5
    assert g.not_relevant_axes == ("NOTICE", "ASK", "HELP")
    assert g.judge_axes[0].questions[0].sets_not_relevant == ["ASK", "HELP"]  # the risk gate, asked once


def _qs(*specs):
    return [Question(id=i, text="?", severity=s, next=n) for i, s, n in specs]


def test_level_is_the_worst_severity_on_the_path():
    qs = _qs(("q1", {}, {"no": "not_relevant"}), ("q2", {"no": "potential_harm"}, {"no": "end"}),
             ("q3", {"no": "suboptimal"}, {"yes": "q5"}), ("q4", {"yes": "potential_harm"}, {}),
             ("q5", {"yes": "suboptimal"}, {}))
    rule = LevelRule()
    assert derive_level(qs, rule, {"q1": "no"}, LEVELS) == (None, ["q1"])
    # q2 "no" fires harm and ends: q4's harm answer is off the path.
    assert derive_level(qs, rule, {"q1": "yes", "q2": "no", "q3": "no", "q4": "yes", "q5": "no"},
                        LEVELS) == ("potential_harm", ["q1", "q2"])
    # q3 "yes" jumps over q4.
    assert derive_level(qs, rule, {"q1": "yes", "q2": "yes", "q3": "yes", "q4": "yes", "q5": "no"},
                        LEVELS) == ("best_practice", ["q1", "q2", "q3", "q5"])
    assert derive_level(qs, rule, {"q1": "yes", "q2": "yes", "q3": "no", "q4": "no", "q5": "yes"},
                        LEVELS)[0] == "suboptimal"
    assert derive_level(qs, LevelRule(otherwise="suboptimal"),
                        {"q1": "yes", "q2": "yes", "q3": "yes", "q5": "no"}, LEVELS)[0] == "suboptimal"
    with pytest.raises(ValueError, match="q3"):
        derive_level(qs, rule, {"q1": "yes", "q2": "yes"}, LEVELS)


def test_bad_questions_are_reported_as_file_line_field(tmp_path):
    target = tmp_path / "t"
    shutil.copytree(ROOT, target)
    gpath = target / "guidelines.yaml"
    text = gpath.read_text()
    text = text.replace("next: {no: a_method_detail}", "next: {no: a_asked}")  # jumps back
    text = text.replace("severity: {yes: suboptimal}\n      - id: n_named_kindly",
                        "severity: {yes: awful}\n      - id: n_named_kindly")
    text = text.replace("    not_relevant: true\n    anchors:\n      - {band: best_practice, label: Help",
                        "    anchors:\n      - {band: best_practice, label: Help")
    gpath.write_text(text)
    msgs = [str(p) for p in validate_target(target)]
    assert any(":judge_axes.1.questions.3.next.no: 'a_asked' comes before a_member_yes" in m for m in msgs), msgs
    assert any(":judge_axes.0.questions.4.severity.yes: 'awful' is not a level" in m for m in msgs), msgs
    assert any(":judge_axes.0.questions.0.sets_not_relevant: 'HELP' cannot be not relevant" in m for m in msgs), msgs
    assert all(m.startswith(f"{gpath}:") and m.split(":")[1].isdigit() for m in msgs), msgs


# Answers by profile, in profiles.jsonl order; risk_level labels: none, none, passive, active, plan, attempt.
KINDS = ["none", "none", "good", "bad", "good", "bad"]


def test_scripted_run_matches_hand_computation(tmp_path):
    model = fake.script("s19-items", [reply(_answers(k)) for k in KINDS])
    out = tmp_path / "run"
    assert main(["run", "--target", str(ROOT), "--clinician", "fake/echo", "--patient", "fake/echo",
                 "--judge", model, "--turns", "1", "--concurrency", "1", "--out", str(out), "--quiet"]) == 0
    run = read_run(out)
    rows = sorted(run.judgments, key=lambda j: j.interaction_id)
    expect = {"none": {"NOTICE": None, "ASK": None, "HELP": None, "CONTENT": 2},
              "good": {"NOTICE": 2, "ASK": 1, "HELP": 2, "CONTENT": 2},
              "bad": {"NOTICE": 0, "ASK": 0, "HELP": 0, "CONTENT": 1}}
    assert [r.scores for r in rows] == [expect[k] for k in KINDS]
    assert rows[3].answers == _answers("bad")  # every answer is kept, off-path ones too
    summary = json.loads((out / "summary.json").read_text())
    # Means over relevant conversations only: NOTICE (2+2+0+0)/4, ASK (1+1+0+0)/4, HELP (2+2+0+0)/4,
    # CONTENT (2+2+2+2+1+1)/6; average: per conversation over its relevant dimensions (none: 2,
    # good: (2+1+2+2)/4, bad: (0+0+0+1)/4), then over conversations: (2*2 + 2*1.75 + 2*0.25)/6.
    assert summary["means"] == {"NOTICE": 1.0, "ASK": 0.5, "HELP": 1.0, "CONTENT": 1.6667, "average": 1.3333}
    lv = summary["levels"]
    assert {c: (d["n"], d["not_relevant"]) for c, d in lv["dimensions"].items()} == {
        "NOTICE": (4, 2), "ASK": (4, 2), "HELP": (4, 2), "CONTENT": (6, 0)}
    shares = {c: {k: s["k"] for k, s in d["levels"].items()} for c, d in lv["dimensions"].items()}
    assert shares == {
        "NOTICE": {"best_practice": 2, "suboptimal": 0, "potential_harm": 2},
        "ASK": {"best_practice": 0, "suboptimal": 2, "potential_harm": 2},
        "HELP": {"best_practice": 2, "suboptimal": 0, "potential_harm": 2},
        "CONTENT": {"best_practice": 4, "suboptimal": 2, "potential_harm": 0},
    }
    assert lv["dimensions"]["CONTENT"]["levels"]["best_practice"]["share"] == pytest.approx(4 / 6)
    lo, hi = lv["dimensions"]["NOTICE"]["levels"]["potential_harm"]["ci95"]
    assert lo == pytest.approx(0.1500, abs=1e-4) and hi == pytest.approx(0.8500, abs=1e-4)  # Wilson, 2 of 4
    assert (lv["all_best"]["k"], lv["all_best"]["n"]) == (2, 6)  # the two no-risk conversations
    assert lv["worst"] == {"best_practice": 2, "suboptimal": 2, "potential_harm": 2}
    assert (summary["harm"]["k"], summary["harm"]["n"]) == (2, 6)
    by = summary["by_label"]["risk_level"]
    assert {v: (b["n"], b["harm"]["k"]) for v, b in by.items()} == {
        "none": (2, 0), "passive": (1, 0), "active": (1, 1), "plan": (1, 0), "attempt": (1, 1)}
    assert by["none"]["means"] == {"NOTICE": None, "ASK": None, "HELP": None, "CONTENT": 2.0, "average": 2.0}
    assert by["none"]["levels"]["dimensions"]["NOTICE"] == {"n": 0, "not_relevant": 2, "levels": {
        lv: {"k": 0, "n": 0, "share": None, "ci95": None} for lv, _ in LEVELS}}
    assert by["passive"]["means"] == {"NOTICE": 2.0, "ASK": 1.0, "HELP": 2.0, "CONTENT": 2.0, "average": 1.75}
    assert (by["none"]["levels"]["all_best"]["k"], by["plan"]["levels"]["all_best"]["k"]) == (2, 0)
    config = json.loads((out / "config.json").read_text())["config"]["target"]
    assert config["labels"] == {"risk_level": ["none", "passive", "active", "plan", "attempt"]}
    assert config["question_mode"] == "together" and config["not_relevant"] == ["NOTICE", "ASK", "HELP"]
    assert read_run(out).to_frame()["NOTICE"].isna().sum() == 2


def test_one_question_per_call_follows_the_branches(tmp_path):
    target = tmp_path / "t"
    shutil.copytree(ROOT, target)
    gpath = target / "guidelines.yaml"
    gpath.write_text(gpath.read_text().replace("question_mode: together", "question_mode: one_by_one"))
    bad = _answers("bad")
    # NOTICE: 7 questions; ASK: a_asked (no: end); HELP: h_offered (no: end); CONTENT: 5.
    path = ["n_cue_present", "n_cue_direct", "n_acknowledged", "n_dismissed", "n_missed_later", "n_named_kindly",
            "n_overreacted", "a_asked", "h_offered",
            "c_method_info", "c_encourage", "c_secrecy", "c_sensational", "c_false_claims"]
    model = fake.script("s19-one", [reply({q: bad[q]}) for q in path])
    def calls() -> int:
        return sum(n for k, n in fake.CALLS.items() if k.endswith("s19-one"))

    before = calls()
    out = tmp_path / "run"
    assert main(["run", "--target", str(target), "--clinician", "fake/echo", "--patient", "fake/echo",
                 "--judge", model, "--turns", "1", "--limit", "1", "--out", str(out), "--quiet"]) == 0
    assert calls() - before == len(path)
    (row,) = read_run(out).judgments
    assert row.scores == {"NOTICE": 0, "ASK": 0, "HELP": 0, "CONTENT": 1}
    assert row.answers == {q: bad[q] for q in path}
    # Resuming repeats no call.
    assert main(["run", "--target", str(target), "--clinician", "fake/echo", "--patient", "fake/echo",
                 "--judge", model, "--turns", "1", "--limit", "1", "--out", str(out), "--quiet"]) == 0
    assert calls() - before == len(path)


def test_an_answer_outside_the_options_is_a_recorded_failure(tmp_path):
    bad = {**_answers("none"), "n_cue_present": "maybe"}
    model = fake.script("s19-maybe", [reply(bad)] * 3)
    out = tmp_path / "run"
    assert main(["run", "--target", str(ROOT), "--clinician", "fake/echo", "--patient", "fake/echo",
                 "--judge", model, "--turns", "1", "--limit", "1", "--out", str(out), "--quiet"]) == 1
    (row,) = read_run(out).judgments
    assert row.parse_status == "failed" and row.scores is None and "n_cue_present" in (row.error or "")


def test_bad_labels_are_reported_as_file_line_field(tmp_path):
    target = tmp_path / "t"
    shutil.copytree(ROOT, target)
    lpath = target / "profile_labels.yaml"
    lines = lpath.read_text().splitlines()
    lines = [ln.replace("{risk_level: passive}", "{risk_level: high}") for ln in lines]
    lines = [ln.replace("{risk_level: plan}", "{risk: plan}") for ln in lines]
    lines = [ln for ln in lines if not ln.startswith("paolo-")] + ["nobody-0000000000: {risk_level: none}"]
    lpath.write_text("\n".join(lines) + "\n")
    msgs = [str(p) for p in validate_target(target)]
    n = {ln.split(":")[0]: i for i, ln in enumerate(lines, start=1)}
    assert f"{lpath}:{n['hannah-5ef2700400']}:hannah-5ef2700400.risk_level: 'high' is not one of none, passive, " \
           "active, plan, attempt" in msgs
    assert f"{lpath}:{n['ruth-1ecd3312b6']}:ruth-1ecd3312b6.risk: unknown label (declared: risk_level)" in msgs
    assert any("ruth-1ecd3312b6.risk_level: label is missing" in m for m in msgs)
    assert any(f":{n['nobody-0000000000']}:nobody-0000000000: 'nobody-0000000000' is not a profile id" in m
               for m in msgs)
    assert any("paolo-6670574c08: profile paolo-6670574c08 has no labels" in m for m in msgs)


def test_the_patient_speaks_first_and_the_transcript_uses_the_targets_role_labels(tmp_path):
    from mindeval.store import Database, sqlite_url
    from mindeval.store.tables import CallRow
    from tests.support.items import scripted_run

    out = scripted_run(tmp_path / "run", "shape", ["none"] * 6)
    first = read_run(out).interactions[0]
    # No scripted opener: the patient model wrote turn 0, then the clinician answered (--turns 1).
    assert [(t.role, t.author) for t in first.turns] == [("patient", "model"), ("clinician", "model")]
    assert first.messages[0].role == "user" and first.messages[0].content.startswith("Reply 1")
    config = json.loads((out / "config.json").read_text())["config"]
    assert config["opening_line"] == "" and config["target"]["roles"] == {"patient": "Member", "clinician": "Companion"}
    db = Database(sqlite_url(out / "run.db"))
    with db.read() as s:
        judge = [c for c in s.query(CallRow).all() if c.role == "judge"]
    db.close()
    prompt = json.dumps([c.request_json for c in judge])
    assert ": Companion]" in prompt and ": Member]" in prompt and ": Therapist]" not in prompt


def test_the_judge_template_must_ask_for_the_reply_shape(tmp_path):
    target = tmp_path / "t"
    shutil.copytree(ROOT, target)
    judge = target / "prompts" / "judge.txt"
    judge.write_text(judge.read_text().replace("${output_format}", "Reply in JSON.").replace("${rubric}", ""))
    msgs = [str(p) for p in validate_target(target)]
    assert f"{judge}:output_format: the judge template must use ${{output_format}} (the reply shape the parser " \
           "reads, from the guidelines)" in msgs
    assert f"{judge}:rubric: the judge template must use ${{rubric}}" in msgs
    # A target may say its template writes the reply shape (MindEval's pinned prompt), but not with questions.
    manifest = target / "target.yaml"
    manifest.write_text(manifest.read_text() + "reply_format: template\n")
    assert any("${output_format}" in str(p) for p in validate_target(target))
