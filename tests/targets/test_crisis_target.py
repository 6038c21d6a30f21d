"""The shipped crisis target's content: profiles, risk-level sidecar, prompts, guidelines."""

import re
from collections import Counter
from pathlib import Path

import pytest
import yaml

from mindeval.profiles.validate import validate_file
from mindeval.prompts import load_template
from mindeval.records import INTAKE_FIELDS, load_profiles
from mindeval.targets import load_target, validate_target

ROOT = Path(__file__).resolve().parents[2] / "targets" / "crisis"
LEVELS = ("none", "passive_ideation", "active_ideation", "plan_or_intent", "recent_self_harm")
# Words that would put a method, a means or lethality into the patient's mouth. Access to
# firearms appears once on purpose (the means-safety scenario) and is not listed.
METHOD_WORDS = re.compile(
    r"\b(overdos\w*|pills?|hang(ing|ed)?|noose|rope|bridge|razors?|blades?|poison\w*|knife|knives|"
    r"lethal\w*|doses?|jump(ing)? off|slit\w*|suffocat\w*|carbon monoxide)\b",
    re.I,
)


def test_profiles_follow_the_authors_schema_and_backstory_rules():
    valid, problems = validate_file(ROOT / "profiles.jsonl", backstory=True)
    assert [str(p) for p in problems] == []
    assert valid >= 12


def test_every_profile_has_a_risk_level_and_each_level_has_two_or_more():
    ids = [p.id for p in load_profiles(ROOT / "profiles.jsonl")]
    labels = yaml.safe_load((ROOT / "profile_labels.yaml").read_text(encoding="utf-8"))
    assert sorted(labels) == sorted(ids), "profile_labels.yaml keys must be the profile ids (an edited profile changes its id)"
    meta = {pid: row["risk_level"] for pid, row in labels.items()}
    assert load_target(ROOT).profile_labels() == labels
    assert set(meta.values()) <= set(LEVELS)
    counts = Counter(meta.values())
    # The judge may rate ASK and CARE "not relevant" (no sign of risk); the human form offers N/A there.
    g = load_target(ROOT).guidelines
    assert g.not_relevant_axes == ("ASK", "CARE") == tuple(s.axis for s in g.human_subaxes if s.allow_na)
    assert all(counts[level] >= 2 for level in LEVELS), counts


def test_no_method_details_in_profiles_or_patient_prompt():
    for path in (ROOT / "profiles.jsonl", ROOT / "prompts" / "patient.txt"):
        hits = METHOD_WORDS.findall(path.read_text(encoding="utf-8"))
        assert not hits, f"{path.name}: {hits}"


def test_risk_is_hidden_from_the_clinician():
    clinician = load_template(str(ROOT / "prompts" / "clinician.txt"), kind="clinician")
    assert clinician.fields == frozenset(INTAKE_FIELDS)
    body = clinician.body.lower()
    assert not any(w in body for w in ("suicid", "self-harm", "crisis", "risk"))
    # Intake fields never carry the level: the clinician must find it in the conversation.
    for p in load_profiles(ROOT / "profiles.jsonl"):
        intake = " ".join(p.intake().values()).lower()
        assert not any(w in intake for w in ("suicid", "self-harm", "ideation", "attempt")), p.name


@pytest.mark.parametrize("role", ["patient", "judge"])
def test_prompts_load_with_their_kind(role):
    tpl = load_template(str(ROOT / "prompts" / f"{role}.txt"), kind=role)
    assert tpl.ref == {"patient": "patient/crisis@v1", "judge": "judge/crisis@v2"}[role]
    if role == "judge":
        assert {"rating_scale", "rubric", "conversation", "output_format"} <= tpl.fields
        assert "member_narrative" not in tpl.fields


def test_the_target_validates_and_its_guidelines_cover_every_level():
    assert [str(e) for e in validate_target(ROOT)] == []
    target = load_target("crisis")
    assert target.root == ROOT and not target.block().legacy_files
    g = target.guidelines
    assert g.scale_kind == "categorical" and g.harm_levels == (0,)
    levels = [lv.id for lv in g.levels]
    assert levels == ["best_practice", "suboptimal", "potential_harm"]
    assert g.axis_codes == ("DET", "ASK", "CARE", "COLLAB", "SAFE")
    for axis in g.judge_axes:
        assert [a.band for a in axis.anchors] == levels and all(a.bullets for a in axis.anchors)
        (sub,) = g.subaxes_for(axis.code)
        assert list(sub.anchors) == levels
    assert {s.axis for s in g.human_subaxes if s.allow_na} == {"ASK", "CARE"}
    assert {p.id for p in target.profiles()} == {p.id for p in load_profiles(ROOT / "profiles.jsonl")}
