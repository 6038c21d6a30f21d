"""Template loading: field checks at load time, clinician leakage rules, rendering."""

from pathlib import Path

import pytest

from mindeval.errors import MindEvalError
from mindeval.prompts import load_template, render_clinician, render_patient
from mindeval.records import INTAKE_FIELDS, load_profiles


def write(tmp_path: Path, name: str, kind: str, body: str, extends: str | None = None) -> Path:
    p = tmp_path / f"{name}.txt"
    ext = f"extends: {extends}\n" if extends else ""
    p.write_text(f"---\nkind: {kind}\nname: {name}\nversion: 1\n{ext}---\n{body}\n")
    return p


@pytest.mark.parametrize("ref", ["patient/default", "patient/no_format", "patient/no_profile",
                                 "patient/role_only", "clinician/default", "clinician/four_sentences",
                                 "judge/default", "judge/length_penalty", "backstory/default"])
def test_shipped_templates_load(ref):
    tpl = load_template(ref)
    assert tpl.ref.startswith(ref + "@v")
    assert len(tpl.sha256) == 64


def test_clinician_default_uses_exactly_intake_fields():
    assert load_template("clinician/default").fields == frozenset(INTAKE_FIELDS)


def test_variants_extend_their_base():
    base = load_template("clinician/default").body
    cap = load_template("clinician/four_sentences").body
    assert cap.startswith(base.rstrip("\n")) and len(cap) > len(base)
    assert load_template("judge/length_penalty").body.startswith(load_template("judge/default").body.rstrip("\n"))
    assert load_template("patient/default").body.startswith(load_template("patient/no_format").body.rstrip("\n"))


def test_patient_variants_field_use():
    assert "member_narrative" in load_template("patient/default").fields
    assert load_template("patient/no_profile").fields == frozenset()
    assert load_template("patient/role_only").fields == frozenset()


def test_clinician_template_with_backstory_is_rejected(tmp_path):
    p = write(tmp_path, "leaky", "clinician", "You know: ${member_narrative}")
    with pytest.raises(MindEvalError, match="backstory") as e:
        load_template(str(p))
    assert str(p) in str(e.value) and "member_narrative" in str(e.value)


@pytest.mark.parametrize("field", ["rubric", "conversation_style", "program_goal", "financial_situation"])
def test_clinician_template_beyond_intake_is_rejected(tmp_path, field):
    p = write(tmp_path, "leaky", "clinician", f"x ${{{field}}}")
    with pytest.raises(MindEvalError, match="intake"):
        load_template(str(p))


def test_clinician_cannot_extend_patient_instructions(tmp_path):
    p = write(tmp_path, "sneaky", "clinician", "more", extends="patient/default")
    with pytest.raises(MindEvalError, match="cannot extend"):
        load_template(str(p))


def test_unknown_field_is_rejected(tmp_path):
    p = write(tmp_path, "typo", "patient", "Hi ${nmae}")
    with pytest.raises(MindEvalError, match="unknown field") as e:
        load_template(str(p))
    assert e.value.field == "nmae"


def test_missing_profile_field_is_named(tmp_path, demo_profiles_path):
    p = write(tmp_path, "needs", "patient", "Hi ${name}, ${member_narrative}")
    tpl = load_template(str(p))
    profile = load_profiles(demo_profiles_path)[0]
    assert "Hi " + profile.name in render_patient(tpl, profile)
    with pytest.raises(MindEvalError, match="member_narrative"):
        tpl.render({"name": "x"})


def test_clinician_render_never_sees_backstory(demo_profiles_path):
    profile = load_profiles(demo_profiles_path)[0]
    text = render_clinician(load_template("clinician/default"), profile)
    assert profile.name in text
    assert profile.member_narrative[:80] not in text
    assert profile.member_attributes.conversation_style not in text


def test_bad_front_matter(tmp_path):
    p = tmp_path / "x.txt"
    p.write_text("no front matter")
    with pytest.raises(MindEvalError, match="front matter"):
        load_template(str(p))


def test_unknown_ref():
    with pytest.raises(MindEvalError, match="no prompt template"):
        load_template("judge/does_not_exist")
