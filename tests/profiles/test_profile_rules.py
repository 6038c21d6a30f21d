"""Each realism rule of mindeval/profiles/rules.py, checked over 1,000 sampled profiles."""

from __future__ import annotations

from collections import defaultdict
from statistics import mean

import pytest

from mindeval.profiles import rules
from mindeval.profiles.pool import PoolValue
from mindeval.profiles.sampler import sample_profiles

N = 1000
SEED = 20251121


@pytest.fixture(scope="module")
def rows(pool):
    """Each sampled profile as {attribute: PoolValue} (age as int, profession as text)."""
    index = {name: {v.text: v for v in attr.values} for name, attr in pool.attributes.items()}
    out = []
    for p in sample_profiles(N, SEED, pool=pool):
        a = p.member_attributes.model_dump()
        row = {k: index[k][v] for k, v in a.items() if k not in ("age", "profession")}
        row["age"] = a["age"]
        row["profession"] = a["profession"]
        out.append(row)
    assert len(out) == N
    return out


def share(items, pred) -> float:
    items = list(items)
    return sum(1 for x in items if pred(x)) / len(items)


def level(v: PoolValue) -> int:
    return v.tag("level")


def test_ages_are_21_to_69_and_cover_the_range(rows):
    ages = [r["age"] for r in rows]
    assert min(ages) == 21 and max(ages) == 69
    assert len(set(ages)) == 49


def test_about_half_have_severe_depressive_and_or_anxious_symptoms(rows):
    s = share(rows, lambda r: level(r["depressive_symptoms"]) == 3 or level(r["anxious_symptoms"]) == 3)
    assert 0.45 <= s <= 0.55, s
    assert share(rows, lambda r: level(r["depressive_symptoms"]) == 3 and level(r["anxious_symptoms"]) == 3) > 0.08


def test_about_20_percent_are_not_heterosexual(rows):
    s = share(rows, lambda r: not r["sexual_orientation"].tag("heterosexual"))
    assert 0.16 <= s <= 0.25, s


def test_about_2_percent_have_a_gender_identity_different_from_sex(rows):
    s = share(rows, lambda r: r["gender_identity"].tag("gender") != r["sex"].tag("gender"))
    assert 0.005 <= s <= 0.04, s


def test_non_binary_identities_are_never_labelled_heterosexual(rows):
    neutral = [r for r in rows if r["gender_identity"].tag("gender") == "neutral"]
    assert neutral, "the sample should contain some non-binary identities"
    assert all(not r["sexual_orientation"].tag("heterosexual") for r in neutral)


def test_names_follow_gender_identity(rows):
    for r in rows:
        gender = r["gender_identity"].tag("gender")
        allowed = {"neutral"} if gender == "neutral" else {gender, "neutral"}
        assert r["name"].group in allowed, (r["name"].text, r["gender_identity"].text)
    binary = [r for r in rows if r["gender_identity"].tag("gender") != "neutral"]
    assert share(binary, lambda r: r["name"].group == "neutral") < 0.15


def test_a_person_without_a_partner_never_lives_with_a_spouse_or_partner(rows):
    for r in rows:
        partner = r["relationship_status"].tag("partner")
        household = r["living_situation"].tag("household")
        if partner == "none":
            assert household not in ("spouse", "partner"), (r["relationship_status"].text, r["living_situation"].text)
        if partner == "spouse":
            assert household == "spouse"
        if household == "coparent":
            assert r["relationship_status"].tag("ex")
    assert any(r["relationship_status"].tag("partner") == "none" for r in rows)


def test_age_limits_of_education_relationships_households_and_work(rows):
    for r in rows:
        for attr in ("education", "relationship_status", "living_situation", "employment_status", "support_system"):
            assert r[attr].fits_age(r["age"]), (attr, r[attr].text, r["age"])
    assert all(r["age"] >= 55 for r in rows if r["employment_status"].text == "retired")
    assert all(r["age"] <= 35 for r in rows if r["employment_status"].text == "full-time student")
    old = [r for r in rows if r["age"] >= rules.RETIREMENT_AGE]
    assert share(old, lambda r: r["employment_status"].text == "retired") >= 0.4


def test_stay_at_home_parents_have_children_at_home(rows):
    parents = [r for r in rows if r["employment_status"].tag("needs_children")]
    assert parents
    assert all(r["living_situation"].tag("children") for r in parents)


def test_professions_follow_education(pool, rows):
    group_of = {v.text: v.group for v in pool["profession"].values}
    for r in rows:
        if not r["employment_status"].tag("has_profession"):
            assert r["profession"] == rules.NO_PROFESSION
            continue
        assert group_of[r["profession"]] in r["education"].tag("professions"), (
            r["profession"], r["education"].text)
    doctors = [r for r in rows if r["education"].tag("level") == "doctorate" and r["profession"] != "none"]
    assert share(doctors, lambda r: group_of[r["profession"]] == "doctorate") > 0.5


def test_finances_are_capped_by_employment(rows):
    for r in rows:
        assert r["financial_situation"].tag("tier") <= rules.financial_cap(r["employment_status"],
                                                                           r["relationship_status"])
    no_income = [r for r in rows if r["employment_status"].tag("income") == "none"]
    assert no_income and all(r["financial_situation"].tag("tier") <= 3 for r in no_income)


def test_finances_follow_education(rows):
    by_band = defaultdict(list)
    for r in rows:
        if r["employment_status"].tag("income") in ("full", "pension"):
            by_band[r["education"].tag("earning")].append(r["financial_situation"].tag("tier"))
    low, mid, high = mean(by_band["low"]), mean(by_band["middle"]), mean(by_band["high"])
    assert low + 0.2 < mid < high - 0.2, (low, mid, high)


def test_severe_symptoms_shift_sleep(rows):
    severe = [r for r in rows if rules.symptom_band(r["depressive_symptoms"], r["anxious_symptoms"]) == "severe"]
    mild = [r for r in rows if rules.symptom_band(r["depressive_symptoms"], r["anxious_symptoms"]) == "mild"]
    restful = lambda r: r["sleep_quality"].tag("pattern") == "restful"  # noqa: E731
    assert share(severe, restful) <= 0.15
    assert share(mild, restful) >= 0.45
    for r in rows:
        if r["sleep_quality"].tag("pattern") == "oversleeping":
            assert level(r["depressive_symptoms"]) >= rules.OVERSLEEPING_MIN_DEPRESSION


def test_severe_symptoms_shift_exercise(rows):
    def avg(band):
        return mean(r["exercise"].tag("level") for r in rows
                    if rules.symptom_band(r["depressive_symptoms"], r["anxious_symptoms"]) == band)

    assert avg("severe") < avg("moderate") < avg("mild")
    assert avg("mild") - avg("severe") >= 0.7


def test_program_goal_is_consistent_with_symptoms(rows):
    for r in rows:
        focus = r["program_goal"].tag("focus")
        if focus == "depression":
            assert level(r["depressive_symptoms"]) >= 1
        if focus == "anxiety":
            assert level(r["anxious_symptoms"]) >= 1
    dep_dominant = [r for r in rows if level(r["depressive_symptoms"]) == 3 and level(r["anxious_symptoms"]) <= 1]
    anx_dominant = [r for r in rows if level(r["anxious_symptoms"]) == 3 and level(r["depressive_symptoms"]) <= 1]
    assert share(dep_dominant, lambda r: r["program_goal"].tag("focus") == "depression") >= 0.55
    assert share(anx_dominant, lambda r: r["program_goal"].tag("focus") == "anxiety") >= 0.55


def test_recent_mood_fits_symptoms(rows):
    for r in rows:
        if max(level(r["depressive_symptoms"]), level(r["anxious_symptoms"])) == 3:
            assert r["recent_mood"].tag("tone") != "steady"
    dep_dominant = [r for r in rows if level(r["depressive_symptoms"]) == 3 and level(r["anxious_symptoms"]) <= 1]
    assert share(dep_dominant, lambda r: r["recent_mood"].tag("tone") == "low") >= 0.5


def test_only_people_with_a_partner_name_the_partner_as_support(rows):
    for r in rows:
        if r["support_system"].tag("needs_partner"):
            assert r["relationship_status"].tag("partner") != "none"
