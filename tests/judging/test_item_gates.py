"""Cross-dimension gates: a question's answer that ends its dimension as not relevant marks the
dimensions it lists (``sets_not_relevant``) not relevant too, and they are never asked."""

import shutil
from pathlib import Path

from mindeval.cli import main
from mindeval.llm import fake
from mindeval.rundir import read_run
from mindeval.targets import validate_target
from tests.support.items import answers as _answers
from tests.support.items import reply

ROOT = Path(__file__).resolve().parents[2] / "targets" / "risk_checklist"
SHIPPED = "        sets_not_relevant: [ASK, HELP]\n"
CONTENT = ["c_method_info", "c_encourage", "c_secrecy", "c_sensational", "c_false_claims"]
# The gate questions risk_checklist repeated at the head of ASK and HELP before it had a gate.
REPEATED = {"a_asked": "a_reason", "h_offered": "h_needed"}


def one_by_one(tmp_path: Path, gate: str | None) -> Path:
    """risk_checklist asking one question per call; its gate n_cue_present lists ``gate``, or with
    ``None`` lists nothing and ASK and HELP ask their own gate questions first (its former form)."""
    target = tmp_path / f"t{gate is not None}"
    shutil.copytree(ROOT, target)
    gpath = target / "guidelines.yaml"
    text = gpath.read_text().replace("question_mode: together", "question_mode: one_by_one")
    assert SHIPPED in text
    if gate is not None:
        text = text.replace(SHIPPED, f"        sets_not_relevant: {gate}\n")
    else:
        text = text.replace(SHIPPED, "")
        for first, own in REPEATED.items():
            text = text.replace(f"      - id: {first}\n", f"      - id: {own}\n        text: \"Any sign of risk?\"\n"
                                f"        next: {{no: not_relevant}}\n      - id: {first}\n")
    gpath.write_text(text)
    return target


def judged(tmp_path: Path, target: Path, path: list[str], name: str) -> tuple[int, dict]:
    none = {**_answers("none"), "a_reason": "no", "h_needed": "no"}
    model = fake.script(name, [reply({q: none[q]}) for q in path])
    before = sum(n for k, n in fake.CALLS.items() if k.endswith(name))
    out = tmp_path / f"run-{name}"
    assert main(["run", "--target", str(target), "--clinician", "fake/echo", "--patient", "fake/echo",
                 "--judge", model, "--turns", "1", "--limit", "1", "--out", str(out), "--quiet"]) == 0
    (row,) = read_run(out).judgments
    return sum(n for k, n in fake.CALLS.items() if k.endswith(name)) - before, row.scores


def test_a_gate_is_asked_once_and_the_gated_dimensions_are_not_relevant(tmp_path):
    # Without the gate (risk_checklist before 1.2.0), each not-relevant dimension asks its own gate question.
    plain, scores = judged(tmp_path, one_by_one(tmp_path, None),
                           ["n_cue_present", "a_reason", "h_needed", *CONTENT], "gate-plain")
    assert plain == 3 + len(CONTENT) and scores == {"NOTICE": None, "ASK": None, "HELP": None, "CONTENT": 2}
    gated, scores = judged(tmp_path, one_by_one(tmp_path, "[ASK, HELP]"), ["n_cue_present", *CONTENT], "gate-once")
    assert gated == 1 + len(CONTENT)  # a_reason and h_needed are never asked
    assert scores == {"NOTICE": None, "ASK": None, "HELP": None, "CONTENT": 2}


def test_a_bad_gate_reference_is_one_line_naming_file_line_field(tmp_path):
    for gate, why in [("[NOPE]", "'NOPE' is not a dimension code (NOTICE, ASK, HELP, CONTENT)"),
                      ("[CONTENT]", "'CONTENT' cannot be not relevant: set not_relevant: true on it")]:
        target = one_by_one(tmp_path / gate.strip("[]"), gate)
        gpath = target / "guidelines.yaml"
        line = gpath.read_text().splitlines().index(f"        sets_not_relevant: {gate}") + 1
        msgs = [str(p) for p in validate_target(target)]
        assert msgs == [f"{gpath}:{line}:judge_axes.0.questions.0.sets_not_relevant: {why}"], msgs


def test_under_together_the_gate_overrules_the_gated_answers(tmp_path):
    # One call answers everything; the judge says "no risk" but answers that the companion asked and helped.
    target = ROOT  # the shipped target asks every question in one call
    contradicting = {**_answers("none"), "a_asked": "yes", "h_offered": "yes"}
    model = fake.script("gate-together", [reply(contradicting)])
    out = tmp_path / "run"
    assert main(["run", "--target", str(target), "--clinician", "fake/echo", "--patient", "fake/echo",
                 "--judge", model, "--turns", "1", "--limit", "1", "--out", str(out), "--quiet"]) == 0
    (row,) = read_run(out).judgments
    assert row.scores["ASK"] is None and row.scores["HELP"] is None and row.scores["NOTICE"] is None
    assert row.answers["a_asked"] == "yes"  # kept as answered, but it fires nothing
