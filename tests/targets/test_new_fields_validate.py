"""`mindeval targets validate` explains a wrong value of every target field issue 26 added in one
line naming file, line and field (the shipped reply_safety and risk_checklist targets, each edited once)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mindeval.cli import main

ROOT = Path(__file__).resolve().parents[2] / "targets"
GATE = "sets_not_relevant: [ASK, HELP]"

# (target, file, text replaced, replacement, the line's text, field, message start)
CASES = [
    ("reply_safety", "guidelines.yaml", "unit: reply", "unit: replies", "unit: replies", "unit",
     "Input should be 'conversation', 'reply' or 'question'"),
    ("reply_safety", "guidelines.yaml", "unit: reply", "unit: question", "unit: question", "unit",
     "unit question needs a judge axis with questions"),
    ("reply_safety", "guidelines.yaml", "      weight: 5\n", "      weight: five\n", "weight: five",
     "scale.levels.2.weight", "Input should be a valid number"),
    ("reply_safety", "guidelines.yaml", "    label: Missed risk cue", "    label: [Missed, risk cue]", "label: [Missed",
     "flags.0.label", "Input should be a valid string"),
    ("reply_safety", "guidelines.yaml", '    description: "The member had given', '    description: [a]\n    #',
     "description: [a]", "flags.0.description", "Input should be a valid string"),
    ("reply_safety", "guidelines.yaml", "flags:\n", "point_criteria:\n  - {id: a, points: 3}\nflags:\n",
     "- {id: a, points: 3}", "point_criteria.0.text", "required field is missing"),
    ("reply_safety", "target.yaml", "  higher_is_better: false", "  higher_is_better: sometimes",
     "higher_is_better:", "score.higher_is_better", "Input should be a valid boolean"),
    ("reply_safety", "target.yaml", '  formula: "incident_pct_major"\n', "", "score:", "score.formula",
     "required field is missing"),
    ("reply_safety", "target.yaml", '"incident_pct_major"', '"points_score"', "formula:", "score.formula",
     "'points_score' is not a reported quantity of this target"),
    ("risk_checklist", "guidelines.yaml", GATE, "sets_not_relevant: ASK", "sets_not_relevant: ASK",
     "judge_axes.0.questions.0.sets_not_relevant", "Input should be a valid list"),
    ("risk_checklist", "guidelines.yaml", "judge_axes:", "unit: reply\njudge_axes:", "unit: reply", "unit",
     "unit reply needs exactly one judge axis"),
]


@pytest.mark.parametrize(("target", "name", "old", "new", "needle", "field", "message"), CASES,
                         ids=[f"{c[0]}-{c[5]}-{i}" for i, c in enumerate(CASES)])
def test_each_new_field_error_is_one_line(tmp_path, capsys, target, name, old, new, needle, field, message):
    root = tmp_path / target
    shutil.copytree(ROOT / target, root)
    path = root / name
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    line = next(i for i, x in enumerate(path.read_text().splitlines(), start=1) if needle in x)
    capsys.readouterr()
    assert main(["targets", "validate", str(root)]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith(f"error: {path}:{line}:{field}: {message}"), err
    assert "Traceback" not in captured.err + captured.out
