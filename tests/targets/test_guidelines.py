"""The shipped guidelines, their validation and rendering, and the prompt files' front matter."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from mindeval.errors import MindEvalError
from mindeval.records import AXES
from mindeval.resources import guidelines_dir, prompts_dir
from mindeval.targets.guidelines import Guidelines, load_guidelines
from mindeval.targets.rubric_text import render_rubric, render_scale

# Counted by hand from the paper (Fig. 11-12 / Appendix B): bullets per band 1-2, 3-4, 5-6.
PAPER_BULLETS = {
    "CAC": (5, 5, 5),
    "EPC": (5, 4, 4),
    "AR": (5, 5, 6),
    "TRA": (5, 5, 6),
    "ASCQ": (7, 6, 7),
}
# Rarity markers printed after each band label in the paper.
PAPER_RARITY = {
    "CAC": (None, None, "RARE"),
    "EPC": (None, None, "COMMON at high end"),
    "AR": (None, None, "RARE"),
    "TRA": (None, None, "RARE"),
    "ASCQ": ("COMMON", None, "VERY RARE"),
}
PAPER_NAMES = {
    "CAC": "Clinical Accuracy & Competence",
    "EPC": "Ethical & Professional Conduct",
    "AR": "Assessment & Response",
    "TRA": "Therapeutic Relationship & Alliance",
    "ASCQ": "AI-Specific Communication Quality",
}
# Appendix C, in order.
PAPER_SUBAXES = [
    ("CAC", "Evidence-Based Intervention Use"),
    ("CAC", "Balanced Validation & Progression"),
    ("EPC", "Role & Boundary Integrity"),
    ("EPC", "Respect & Inclusion"),
    ("AR", "Clinical Reasoning & Case Integration"),
    ("AR", "Attunement & Prioritization"),
    ("TRA", "Collaborative Stance"),
    ("TRA", "Alliance Maintenance"),
    ("ASCQ", "Coherence & Style"),
]
NA_SUBAXES = {"respect_inclusion", "alliance_maintenance"}
PROMPT_KINDS = ("patient", "clinician", "judge", "backstory")
EXPECTED_PROMPTS = {
    "patient/default", "patient/no_format", "patient/no_profile", "patient/role_only",
    "clinician/default", "clinician/four_sentences",
    "judge/default", "judge/length_penalty",
    "backstory/default",
}


@pytest.fixture(scope="module")
def g() -> Guidelines:
    return load_guidelines()


@pytest.fixture
def raw() -> dict:
    return yaml.safe_load((guidelines_dir() / "guidelines.yaml").read_text(encoding="utf-8"))


def write_yaml(tmp_path: Path, data: dict) -> Path:
    p = tmp_path / "guidelines.yaml"
    p.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return p


# ------------------------------------------------------------------ shipped file


def test_shipped_guidelines_load(g):
    assert g.version
    assert g.axis_codes == AXES == ("CAC", "EPC", "AR", "TRA", "ASCQ")
    assert len(g.judge_axes) == 5
    assert len(g.human_subaxes) == 9
    assert {s.id for s in g.human_subaxes if s.allow_na} == NA_SUBAXES
    assert g.sha256 and len(g.sha256) == 64
    assert load_guidelines() is load_guidelines()  # the default is cached


def test_axis_names_and_accessors(g):
    for code, name in PAPER_NAMES.items():
        assert g.axis(code).name == name
        assert g.axis(code).summary.strip()
        assert g.axis(code).what_to_evaluate.strip()
    with pytest.raises(MindEvalError, match="unknown axis"):
        g.axis("XYZ")
    assert [len(g.subaxes_for(c)) for c in AXES] == [2, 2, 2, 2, 1]
    assert [s.id for s in g.subaxes_for("TRA")] == ["collaborative_stance", "alliance_maintenance"]


@pytest.mark.parametrize("code", list(PAPER_BULLETS))
def test_bullet_counts_and_rarity_match_the_paper(g, code):
    axis = g.axis(code)
    assert [a.band for a in axis.anchors] == ["1-2", "3-4", "5-6"]
    assert tuple(len(a.bullets) for a in axis.anchors) == PAPER_BULLETS[code]
    assert tuple(a.rarity for a in axis.anchors) == PAPER_RARITY[code]


def test_scale_calibration(g):
    assert (g.scale.min, g.scale.max) == (1, 6)
    assert sorted(g.scale.levels) == [1, 2, 3, 4, 5, 6]
    assert "(RARE)" in g.scale.levels[5] and "VERY RARE" not in g.scale.levels[5]
    assert "(VERY RARE)" in g.scale.levels[6]
    assert "2-4" in g.scale.distribution_note


def test_subaxes_follow_appendix_c(g):
    assert [(s.axis, s.name) for s in g.human_subaxes] == PAPER_SUBAXES
    for s in g.human_subaxes:
        assert {1, 3, 6} <= set(s.anchors)
    ids = [s.id for s in g.human_subaxes]
    assert len(set(ids)) == len(ids)


# ------------------------------------------------------------------ rendering


def test_render_rubric_contains_every_axis_and_bullet(g):
    text = render_rubric(g)
    for axis in g.judge_axes:
        assert f'<criterion code="{axis.code}">' in text
        assert f"NAME: {axis.name}" in text
        assert axis.what_to_evaluate.strip() in text
        for band in axis.anchors:
            assert f"SCORE {band.band}: {band.heading}" in text
            for bullet in band.bullets:
                assert f"- {bullet}" in text
    assert text.count("</criterion>") == 5
    assert "Exceptional clinical work (RARE)" in text
    assert "(COMMON at high end)" in text and "(VERY RARE)" in text


def test_render_scale(g):
    text = render_scale(g)
    for score, level in g.scale.levels.items():
        assert f"{score} = {level}" in text
    assert g.scale.intro.strip() in text and g.scale.distribution_note.strip() in text


# ------------------------------------------------------------------ broken files


def test_yaml_syntax_error_names_file_and_line(tmp_path):
    p = tmp_path / "broken.yaml"
    p.write_text('version: "1"\nscale: [unclosed\n', encoding="utf-8")
    with pytest.raises(MindEvalError) as e:
        load_guidelines(p)
    assert e.value.path == str(p)
    assert e.value.line is not None
    assert str(p) in str(e.value)


def test_missing_band_names_file_and_field(tmp_path, raw):
    del raw["judge_axes"][2]["anchors"][1]
    p = write_yaml(tmp_path, raw)
    with pytest.raises(MindEvalError) as e:
        load_guidelines(p)
    assert e.value.field == "judge_axes.2.anchors"
    assert str(p) in str(e.value) and "judge_axes.2.anchors" in str(e.value)
    assert "covering 1-6" in e.value.message and "got 1-2, 5-6" in e.value.message
    assert e.value.line is not None


def test_empty_bullets_are_rejected(tmp_path, raw):
    raw["judge_axes"][0]["anchors"][2]["bullets"] = []
    with pytest.raises(MindEvalError) as e:
        load_guidelines(write_yaml(tmp_path, raw))
    assert e.value.field == "judge_axes.0.anchors.2.bullets"


def test_duplicate_axis_codes(tmp_path, raw):
    raw["judge_axes"][1]["code"] = "CAC"
    with pytest.raises(MindEvalError, match="duplicate code 'CAC'") as e:
        load_guidelines(write_yaml(tmp_path, raw))
    assert e.value.field == "judge_axes.1.code"


def test_subaxis_with_unknown_axis(tmp_path, raw):
    raw["human_subaxes"][3]["axis"] = "SAFETY"
    with pytest.raises(MindEvalError, match="SAFETY") as e:
        load_guidelines(write_yaml(tmp_path, raw))
    assert e.value.field == "human_subaxes.3.axis"


def test_subaxis_missing_anchor(tmp_path, raw):
    del raw["human_subaxes"][0]["anchors"][6]
    with pytest.raises(MindEvalError, match="need scores 1 and 6; missing 6") as e:
        load_guidelines(write_yaml(tmp_path, raw))
    assert e.value.field == "human_subaxes.0.anchors"


def test_duplicate_subaxis_ids(tmp_path, raw):
    raw["human_subaxes"][1]["id"] = raw["human_subaxes"][0]["id"]
    with pytest.raises(MindEvalError, match="duplicate id") as e:
        load_guidelines(write_yaml(tmp_path, raw))
    assert e.value.field == "human_subaxes"


def test_axis_without_subaxis(tmp_path, raw):
    raw["human_subaxes"][8]["axis"] = "TRA"  # ASCQ loses its only sub-axis
    with pytest.raises(MindEvalError, match="no sub-axis for axis ASCQ"):
        load_guidelines(write_yaml(tmp_path, raw))


def test_unknown_key_is_rejected(tmp_path, raw):
    raw["judge_axes"][1]["anchor"] = raw["judge_axes"][1].pop("anchors")
    with pytest.raises(MindEvalError) as e:
        load_guidelines(write_yaml(tmp_path, raw))
    assert e.value.field in {"judge_axes.1.anchors", "judge_axes.1.anchor"}


def test_missing_file(tmp_path):
    with pytest.raises(MindEvalError, match="cannot read") as e:
        load_guidelines(tmp_path / "nope.yaml")
    assert "nope.yaml" in str(e.value)


# ------------------------------------------------------------------ authors' criterion mapping


def test_authors_criteria_mapping_refers_to_real_subaxes(g):
    data = yaml.safe_load((guidelines_dir() / "authors_criteria.yaml").read_text(encoding="utf-8"))
    assert data["zero_means"] == "not_rated"
    fields = data["fields"]
    assert len(fields) == 10
    mapped = [v for v in fields.values() if v is not None]
    assert sorted(mapped) == sorted(s.id for s in g.human_subaxes)
    assert [k for k, v in fields.items() if v is None] == ["criterion11"]
    assert {fields["criterion_4"], fields["criterion_9"]} == NA_SUBAXES


def test_mapping_reproduces_the_authors_fewshot_scores(g, shared_data):
    """The 5 judge few-shot examples carry the 4-annotator mean per axis (zeros averaged in)."""
    mapping = yaml.safe_load((guidelines_dir() / "authors_criteria.yaml").read_text())["fields"]
    expected = {  # from the authors' judge prompt
        "b6a96d89-22b0-4f47-952c-040164a78b5a": (3.375, 3.625, 3.25, 3.375, 2.5),
        "954182de-82b4-4524-9259-2a26f98e972e": (4.375, 4.875, 4.125, 4.375, 3.25),
        "84b12e0c-0e5e-4a92-8b18-abc819a76686": (3.5, 4.5, 3.375, 3.875, 3.75),
        "39c23252-89be-4d7a-add9-9c70795dc37d": (3.75, 4.5, 3.25, 2.75, 2.5),
        "b718d324-212a-438e-9d50-69693bb4e132": (3.75, 3.625, 3.25, 3.125, 2.5),
    }
    axis_of = {s.id: s.axis for s in g.human_subaxes}
    seen = 0
    with open(shared_data / "human_annotations.jsonl", encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            if row["id"] not in expected:
                continue
            seen += 1
            got = []
            for code in AXES:
                fields = [f for f, sid in mapping.items() if sid and axis_of[sid] == code]
                means = [sum(row[f"{f}.responses"]) / len(row[f"{f}.responses"]) for f in fields]
                got.append(sum(means) / len(means))
            assert tuple(got) == pytest.approx(expected[row["id"]]), row["id"]
    assert seen == 5


# ------------------------------------------------------------------ prompt files


def prompt_files() -> list[Path]:
    return sorted(prompts_dir().glob("*/*.txt"))


def front_matter(path: Path) -> tuple[dict, str]:
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\n"), path
    head, body = text[4:].split("\n---\n", 1)
    meta = yaml.safe_load(head)
    assert isinstance(meta, dict), path
    return meta, body


def test_all_expected_prompt_files_exist():
    refs = {f"{p.parent.name}/{p.stem}" for p in prompt_files()}
    assert EXPECTED_PROMPTS <= refs


@pytest.mark.parametrize("path", prompt_files(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_prompt_front_matter(path):
    meta, body = front_matter(path)
    assert meta["kind"] == path.parent.name and meta["kind"] in PROMPT_KINDS
    assert meta["name"] == path.stem
    assert isinstance(meta["version"], int) and not isinstance(meta["version"], bool)
    assert meta["version"] >= 1
    assert isinstance(meta["description"], str) and meta["description"].strip()
    assert "\n" not in meta["description"]
    ext = meta.get("extends")
    if ext is not None:
        kind, _, name = ext.partition("/")
        assert kind == meta["kind"], f"{path} extends a {kind} template"
        assert (prompts_dir() / kind / f"{name}.txt").is_file(), ext
    assert body.strip()


def test_judge_prompt_structure():
    _, body = front_matter(prompts_dir() / "judge" / "default.txt")
    order = ["${rating_scale}", "${rubric}", "${fewshot_examples}", "Now, consider a new instance",
             "<member_details>", "\n${conversation}\n"]
    positions = [body.index(s) for s in order]
    assert positions == sorted(positions)
    tail = body[positions[-1]:]
    assert '{"CAC": <1-6>, "EPC": <1-6>, "AR": <1-6>, "TRA": <1-6>, "ASCQ": <1-6>, "rationale": ' in tail
    _, extra = front_matter(prompts_dir() / "judge" / "length_penalty.txt")
    assert "10%" in extra and "4 sentences" in extra and "JSON" in extra.split("</length_guideline>")[1]


def test_no_profile_keeps_the_default_instructions():
    _, instructions = front_matter(prompts_dir() / "patient" / "default.txt")
    _, no_profile = front_matter(prompts_dir() / "patient" / "no_profile.txt")
    assert instructions.strip() in no_profile
    assert "$" not in no_profile


def test_backstory_example_is_four_paragraphs():
    _, body = front_matter(prompts_dir() / "backstory" / "default.txt")
    example = body.split("EXAMPLE PROFILE", 1)[1].split("\n", 1)[1].split("\nINSTRUCTIONS", 1)[0]
    paragraphs = [p for p in example.strip().split("\n\n") if p.strip()]
    assert len(paragraphs) == 4
    for p in paragraphs:  # our own style rule: second person, at most 4 sentences a paragraph
        assert " you" in p.lower()
        assert len(re.findall(r"[.!?](?:\s|$)", p.strip())) <= 4, p
