"""Loaders: the authors' annotation schema, the mapping file, judge run directories."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from metaeval_builders import authors_row, write_judgments

from metaeval.sources import load_authors_annotations, load_judge_run
from mindeval.errors import MindEvalError
from mindeval.judging.authors import load_mapping, profile_key


def axis_score(raters, label: str, iid: str, axis: str) -> float:
    r = next(r for r in raters if r.label == label)
    f = r.frame
    return float(f[(f["interaction_id"] == iid) & (f["axis"] == axis)]["score"].iloc[0])


def test_tiny_authors_file_loads_with_mapping(tiny_authors):
    src = load_authors_annotations(tiny_authors)
    assert [r.label for r in src.raters] == ["P1", "P2", "P3"]
    assert src.rater_ids == {"P1": "ann-a", "P2": "ann-b", "P3": "ann-c"}
    assert len(src.interactions) == 12
    assert len({it.profile_id for it in src.interactions.values()}) == 4
    rows = [json.loads(line) for line in tiny_authors.read_text().splitlines()]
    first = rows[0]
    # CAC = mean(criterion_1, criterion_2) of annotator ann-a; ASCQ = criterion_10 only
    assert axis_score(src.raters, "P1", "int-00", "CAC") == np.mean(
        [first["criterion_1.responses"][0], first["criterion_2.responses"][0]])
    assert axis_score(src.raters, "P1", "int-00", "ASCQ") == first["criterion_10.responses"][0]
    # ann-c left criterion_4 unrated (0) on int-00: EPC is criterion_3 alone
    assert axis_score(src.raters, "P3", "int-00", "EPC") == first["criterion_3.responses"][2]
    zero = load_authors_annotations(tiny_authors, zeros="zero")
    assert axis_score(zero.raters, "P3", "int-00", "EPC") == first["criterion_3.responses"][2] / 2


def test_annotators_are_matched_by_id_not_position(write_authors):
    scores = {f: [2, 6] for f in ("criterion_1", "criterion_2", "criterion_3", "criterion_4", "criterion_6",
                                  "criterion_7", "criterion_8", "criterion_9", "criterion_10", "criterion11")}
    r1 = authors_row("i1", "Ana", "s1", scores, ["x", "y"])
    r2 = authors_row("i2", "Ana", "s2", scores, ["y", "x"])  # order swapped
    src = load_authors_annotations(write_authors([r1, r2]))
    assert axis_score(src.raters, "P1", "i1", "average") == 2.0
    assert axis_score(src.raters, "P1", "i2", "average") == 6.0


def test_profile_key_ignores_goal_and_attribute_spelling():
    a = {"name": "Ana", "age": 3, "mood": "low", "interaction_goal": "x"}
    b = {"name": "Ana", "age": 3, "recent_mood": "low", "program_goal": "y"}
    assert profile_key(a) == profile_key(b)
    assert profile_key(a) != profile_key({**a, "age": 4})


@pytest.mark.parametrize("mutate, field, message", [
    (lambda r: r.__setitem__("criterion_2.responses", [1, 9, 3]), "criterion_2.responses", "integer from 0"),
    (lambda r: r.__setitem__("criterion_6.responses.users", ["ann-a"]), "criterion_6.responses", "annotator ids"),
    (lambda r: r.pop("model"), "model", "missing required field"),
    (lambda r: r.__setitem__("criterion_12.responses", [1, 1, 1]), "criterion_12", "not in the mapping"),
    (lambda r: r["member_attributes"].__setitem__("age", "old"), "member_attributes.age", "integer"),
])
def test_bad_rows_name_file_line_and_field(tiny_authors, write_authors, mutate, field, message):
    rows = [json.loads(line) for line in tiny_authors.read_text().splitlines()]
    mutate(rows[2])
    bad = write_authors(rows, "bad.jsonl")
    with pytest.raises(MindEvalError, match=message) as e:
        load_authors_annotations(bad)
    assert e.value.path == str(bad) and e.value.line == 3 and e.value.field == field


def test_mapping_file_is_configurable_and_validated(tmp_path, tiny_authors):
    alt = tmp_path / "alt.yaml"
    alt.write_text(
        "version: '2'\nfields:\n  criterion_1: evidence_based_intervention\n  criterion_2: null\n"
        "  criterion_3: role_boundary_integrity\n  criterion_4: null\n  criterion_6: clinical_reasoning_integration\n"
        "  criterion_7: null\n  criterion_8: collaborative_stance\n  criterion_9: null\n"
        "  criterion_10: null\n  criterion11: coherence_style\n", encoding="utf-8")
    m = load_mapping(alt)
    src = load_authors_annotations(tiny_authors, m)
    first = json.loads(tiny_authors.read_text().splitlines()[0])
    assert axis_score(src.raters, "P1", "int-00", "CAC") == first["criterion_1.responses"][0]
    assert axis_score(src.raters, "P1", "int-00", "ASCQ") == first["criterion11.responses"][0]
    bad = tmp_path / "bad.yaml"
    bad.write_text("fields:\n  criterion_1: no_such_subaxis\n", encoding="utf-8")
    with pytest.raises(MindEvalError, match="not a human sub-axis") as e:
        load_mapping(bad)
    assert e.value.field == "fields.criterion_1"
    dup = tmp_path / "dup.yaml"
    dup.write_text("fields:\n  a: coherence_style\n  b: coherence_style\n", encoding="utf-8")
    with pytest.raises(MindEvalError, match="mapped twice"):
        load_mapping(dup)


def test_default_mapping_matches_documented_decision():
    m = load_mapping()
    assert m.fields["criterion_4"] == "respect_inclusion"
    assert m.fields["criterion_9"] == "alliance_maintenance"
    assert m.fields["criterion11"] is None
    assert {m.subaxis_axis[s] for s in m.field_subaxis.values()} == {"CAC", "EPC", "AR", "TRA", "ASCQ"}


def test_judge_run_loader_reads_samples_and_failures(tmp_path):
    rows = [
        {"interaction_id": "i1", "profile_id": "p", "model": "s1", "judge_model": "j/x", "sample": 0,
         "scores": {"CAC": 1, "EPC": 2, "AR": 3, "TRA": 4, "ASCQ": 5}},
        {"interaction_id": "i1", "profile_id": "p", "model": "s1", "judge_model": "j/x", "sample": 1, "scores": None},
        {"interaction_id": "i2", "profile_id": "p", "model": "s2", "judge_model": "j/x", "sample": 0,
         "scores": {"CAC": 6, "EPC": 6, "AR": 6, "TRA": 6, "ASCQ": 6}},
    ]
    run = write_judgments(tmp_path / "run", rows, {"fewshot_interaction_ids": ["i9"], "label": "my judge"})
    [judge] = load_judge_run(run)
    assert judge.label == "my judge" and judge.runs == 2 and judge.meta["n_failed"] == 1
    assert judge.meta["fewshot_interaction_ids"] == ["i9"]
    f = judge.frame
    avg = f[(f["interaction_id"] == "i1") & (f["axis"] == "average")].sort_values("run")["score"].tolist()
    assert avg[0] == 3.0 and math.isnan(avg[1])


def test_judge_run_errors(tmp_path):
    with pytest.raises(MindEvalError, match="no judgments.jsonl"):
        load_judge_run(tmp_path)
    run = write_judgments(tmp_path / "r", [{"interaction_id": "i", "profile_id": "p", "model": "s",
                                            "judge_model": "j", "scores": {"CAC": 9, "EPC": 1, "AR": 1,
                                                                            "TRA": 1, "ASCQ": 1}}])
    with pytest.raises(MindEvalError) as e:
        load_judge_run(run)
    assert e.value.line == 1 and e.value.field == "scores.CAC"
    dup = write_judgments(tmp_path / "d", [
        {"interaction_id": "i", "profile_id": "p", "model": "s", "judge_model": "j", "scores": None},
        {"interaction_id": "k", "profile_id": "p", "model": "s", "judge_model": "j", "scores": None},
    ])
    with pytest.raises(MindEvalError, match="more than once"):
        load_judge_run(dup)


def test_missing_file_is_an_error(tmp_path: Path):
    with pytest.raises(MindEvalError, match="not found"):
        load_authors_annotations(tmp_path / "nope.jsonl")


@pytest.mark.parametrize("bad, field", [(7, "criterion_3.responses"), ("5", "criterion_3.responses")])
def test_fewshot_and_metaeval_read_the_authors_file_alike(tiny_authors, bad, field):
    """`mindeval run --judge-fewshot` and metaeval read the file through the one reader: same error."""
    from mindeval.judging.fewshot import load_fewshot

    rows = [json.loads(line) for line in tiny_authors.read_text().splitlines()]
    rows[2]["criterion_3.responses"][1] = bad
    tiny_authors.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(MindEvalError) as meta_err:
        load_authors_annotations(tiny_authors)
    with pytest.raises(MindEvalError) as shot_err:
        load_fewshot(tiny_authors, 2, seed=0)
    assert str(shot_err.value) == str(meta_err.value)
    assert str(shot_err.value).startswith(f"{tiny_authors}:3:{field}: score {bad!r} is not an integer")


def test_a_repeated_id_is_refused_by_both_readers(tiny_authors):
    from mindeval.judging.fewshot import load_fewshot

    lines = tiny_authors.read_text().splitlines()
    tiny_authors.write_text("\n".join([*lines, lines[0]]) + "\n")
    for read in (load_authors_annotations, lambda p: load_fewshot(p, 1, seed=0)):
        with pytest.raises(MindEvalError, match=rf":{len(lines) + 1}:id: interaction id 'int-00' appears twice"):
            read(tiny_authors)
