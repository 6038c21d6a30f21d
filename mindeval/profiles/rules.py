"""Every realism rule of the profile sampler, in the order the sampler applies them.

The pool (``data/attribute_pool/*.yaml``) says *what* values exist and tags them;
this module says *how* they are combined. Read it top to bottom: the rates first,
then one ``rule_*`` function per attribute. All randomness goes through :class:`Draw`,
which only ever asks the profile's numpy ``Generator`` for uniform doubles, so the
same seed gives the same profiles on any machine.

Stated targets (checked by ``mindeval profiles stats`` and the tests):
  * about half of the profiles have severe depressive and/or anxious symptoms
    (paper, Table 1: "Severe symptoms ~50%");
  * about 20% are not heterosexual, about 2% have a gender identity different from
    their sex, ages are 21-69;
  * conditional realism: a single person does not live with a spouse (paper,
    footnote 3); professions follow education, finances follow education and
    employment, severe symptoms shift sleep and exercise, names follow gender
    identity, the program goal is consistent with the symptoms. The
    remaining rules (mood, age limits, households, support) are ours.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import MindEvalError
from .pool import AttributePool, PoolValue

# ------------------------------------------------------------------ rates and tables

SEVERE_SHARE = 0.50  # paper Table 1: ~50% severe depressive and/or anxious symptoms
NON_HETEROSEXUAL_SHARE = 0.20  # design target (binary gender identities; see rule_sexual_orientation)
GENDER_DIFFERS_FROM_SEX = 0.02  # design target
NEUTRAL_NAME_SHARE = 0.08  # people with a binary identity who have a gender-neutral name

# When one symptom is severe: which one(s).
SEVERE_WHICH = {"depressive": 0.40, "anxious": 0.30, "both": 0.30}
# Level (minimal, mild, moderate) of a symptom that is not severe ...
OTHER_LEVEL_WEIGHTS = (0.20, 0.35, 0.45)  # ... beside a severe one
NON_SEVERE_LEVEL_WEIGHTS = (0.35, 0.35, 0.30)  # ... in a profile with nothing severe

# Mood tone weights by symptom level (0 minimal .. 3 severe); steady never with a severe symptom.
MOOD_TONE_BY_LEVEL = {"low": (0.1, 0.6, 1.5, 3.0), "anxious": (0.1, 0.6, 1.5, 3.0)}
MOOD_IRRITABLE_WEIGHT = 0.5
MOOD_STEADY_BY_MAX_LEVEL = (2.0, 1.0, 0.2, 0.0)

RETIREMENT_AGE = 63
RETIRED_SHARE_FROM_RETIREMENT_AGE = 0.5

# Financial tier (1 struggling .. 5 affluent) weights by the education's earning band ...
TIER_WEIGHTS_BY_EARNING = {
    "low": (0.12, 0.28, 0.40, 0.16, 0.04),
    "middle": (0.05, 0.17, 0.42, 0.28, 0.08),
    "high": (0.03, 0.08, 0.32, 0.35, 0.22),
}
# ... and clipped to the cap of the income that the employment status brings.
MAX_TIER_BY_INCOME = {"none": 3, "partial": 4, "full": 5, "pension": 5, "household": 5}
MAX_TIER_HOUSEHOLD_WITHOUT_PARTNER = 2

# Symptom band: the higher of the two symptom levels, 0-1 → "mild", 2 → "moderate", 3 → "severe".
EXERCISE_LEVEL_WEIGHTS = {  # inactive .. very active
    "mild": (0.12, 0.22, 0.30, 0.22, 0.14),
    "moderate": (0.22, 0.30, 0.26, 0.14, 0.08),
    "severe": (0.38, 0.32, 0.18, 0.08, 0.04),
}
SLEEP_PATTERN_WEIGHTS = {  # restful, disturbed, oversleeping (oversleeping needs depression >= 2)
    "mild": (0.60, 0.40, 0.00),
    "moderate": (0.30, 0.62, 0.08),
    "severe": (0.08, 0.74, 0.18),
}
OVERSLEEPING_MIN_DEPRESSION = 2

# Program goal focus weights: a symptom-focused goal needs at least mild symptoms.
GOAL_FOCUS_BY_LEVEL = (0.0, 0.5, 1.5, 3.0)
GOAL_GENERAL_WEIGHT = 1.0


# ------------------------------------------------------------------ the random source


class Draw:
    """All random decisions of one profile (uniform doubles from a numpy Generator only)."""

    def __init__(self, rng: np.random.Generator) -> None:
        self._rng = rng

    def uniform(self) -> float:
        return float(self._rng.random())

    def chance(self, p: float) -> bool:
        return self.uniform() < p

    def index(self, weights: Sequence[float]) -> int:
        total = 0.0
        for w in weights:
            total += w
        if total <= 0:
            raise ValueError("all weights are zero")
        u = self.uniform() * total
        acc = 0.0
        last = 0
        for i, w in enumerate(weights):
            if w <= 0:
                continue
            acc += w
            last = i
            if u < acc:
                return i
        return last  # u rounded up to the total

    def integer(self, lo: int, hi: int) -> int:
        """A uniform integer in ``[lo, hi]``."""
        span = hi - lo + 1
        return lo + min(int(self.uniform() * span), span - 1)

    def pick(self, values: Sequence[PoolValue], weights: Sequence[float] | None = None) -> PoolValue:
        if weights is None:
            weights = [v.weight for v in values]
        return values[self.index(weights)]


def candidates(
    pool: AttributePool, name: str, age: int | None, where: Callable[[PoolValue], bool] = lambda v: True,
    why: str = "",
) -> list[PoolValue]:
    """Values of ``name`` that fit ``age`` and ``where``; an empty result is a pool error."""
    attr = pool[name]
    out = [v for v in attr.values if (age is None or v.fits_age(age)) and where(v)]
    if not out:
        cond = f" for age {age}" if age is not None else ""
        raise MindEvalError(
            f"the pool has no '{name}' value{cond}{' ' + why if why else ''}",
            path=attr.source, line=attr.line, field=name,
        )
    return out


# ------------------------------------------------------------------ identity


def rule_sex(d: Draw, pool: AttributePool) -> PoolValue:
    return d.pick(pool["sex"].values)


def rule_gender_identity(d: Draw, pool: AttributePool, sex: PoolValue) -> PoolValue:
    """The identity matching the sex, except for GENDER_DIFFERS_FROM_SEX of profiles."""
    same = candidates(pool, "gender_identity", None, lambda v: v.tag("gender") == sex.tag("gender"))
    other = candidates(pool, "gender_identity", None, lambda v: v.tag("gender") != sex.tag("gender"))
    return d.pick(other) if d.chance(GENDER_DIFFERS_FROM_SEX) else d.pick(same)


def rule_name(d: Draw, pool: AttributePool, identity: PoolValue) -> PoolValue:
    """Names follow gender identity; neutral identities always get a gender-neutral name."""
    gender = identity.tag("gender")
    if gender == "neutral" or d.chance(NEUTRAL_NAME_SHARE):
        return d.pick(pool["name"].group("neutral"))
    return d.pick(pool["name"].group(gender))


def rule_sexual_orientation(d: Draw, pool: AttributePool, identity: PoolValue) -> PoolValue:
    """NON_HETEROSEXUAL_SHARE for binary identities; "heterosexual" is never used for neutral ones."""
    non = candidates(pool, "sexual_orientation", None, lambda v: not v.tag("heterosexual"))
    if identity.tag("gender") == "neutral" or d.chance(NON_HETEROSEXUAL_SHARE):
        return d.pick(non)
    return d.pick(candidates(pool, "sexual_orientation", None, lambda v: v.tag("heterosexual")))


def rule_age(d: Draw, pool: AttributePool) -> int:
    lo, hi = pool.age_range
    return d.integer(lo, hi)


def rule_plain(d: Draw, pool: AttributePool, name: str) -> PoolValue:
    """Attributes without conditions: a weighted draw from the whole pool."""
    return d.pick(pool[name].values)


# ------------------------------------------------------------------ symptoms and mood


def rule_symptoms(d: Draw, pool: AttributePool) -> tuple[PoolValue, PoolValue]:
    """SEVERE_SHARE of profiles have a severe depressive and/or anxious symptom level."""
    if d.chance(SEVERE_SHARE):
        which = list(SEVERE_WHICH)[d.index(list(SEVERE_WHICH.values()))]
        dep = 3 if which in ("depressive", "both") else d.index(OTHER_LEVEL_WEIGHTS)
        anx = 3 if which in ("anxious", "both") else d.index(OTHER_LEVEL_WEIGHTS)
    else:
        dep = d.index(NON_SEVERE_LEVEL_WEIGHTS)
        anx = d.index(NON_SEVERE_LEVEL_WEIGHTS)
    return _level_value(pool, "depressive_symptoms", dep), _level_value(pool, "anxious_symptoms", anx)


def _level_value(pool: AttributePool, name: str, level: int) -> PoolValue:
    return candidates(pool, name, None, lambda v: v.tag("level") == level)[0]


def symptom_band(dep: PoolValue, anx: PoolValue) -> str:
    top = max(dep.tag("level"), anx.tag("level"))
    return "severe" if top == 3 else "moderate" if top == 2 else "mild"


def rule_recent_mood(d: Draw, pool: AttributePool, dep: PoolValue, anx: PoolValue) -> PoolValue:
    """Mood tone follows the symptoms; a steady mood never comes with a severe symptom."""
    dl, al = dep.tag("level"), anx.tag("level")
    tone_weights = {
        "low": MOOD_TONE_BY_LEVEL["low"][dl],
        "anxious": MOOD_TONE_BY_LEVEL["anxious"][al],
        "irritable": MOOD_IRRITABLE_WEIGHT,
        "steady": MOOD_STEADY_BY_MAX_LEVEL[max(dl, al)],
    }
    tone = list(tone_weights)[d.index(list(tone_weights.values()))]
    return d.pick(candidates(pool, "recent_mood", None, lambda v: v.tag("tone") == tone))


# ------------------------------------------------------------------ education, home, work, money


def rule_education(d: Draw, pool: AttributePool, age: int) -> PoolValue:
    """Degrees only from their usual minimum age (min_age tag)."""
    return d.pick(candidates(pool, "education", age))


def rule_relationship(d: Draw, pool: AttributePool, age: int) -> PoolValue:
    return d.pick(candidates(pool, "relationship_status", age))


_NO_PARTNER_HOUSEHOLDS = ("alone", "shared", "family")


def rule_living(d: Draw, pool: AttributePool, rel: PoolValue, age: int) -> PoolValue:
    """Who lives with whom follows the relationship status.

    Married people live with their spouse; people with a partner live with them with
    the status's ``cohabit`` chance; people without a partner never live with a spouse
    or partner (single parents do), and only separated or divorced people share custody.
    """
    partner = rel.tag("partner")
    if partner == "spouse":
        allowed: tuple[str, ...] = ("spouse",)
    elif partner == "partner":
        allowed = ("partner",) if d.chance(float(rel.tag("cohabit"))) else _NO_PARTNER_HOUSEHOLDS
    else:
        allowed = _NO_PARTNER_HOUSEHOLDS + ("single_parent",) + (("coparent",) if rel.tag("ex") else ())
    return d.pick(candidates(pool, "living_situation", age, lambda v: v.tag("household") in allowed,
                             why=f"for a '{rel.text}' person"))


def rule_employment(d: Draw, pool: AttributePool, age: int, living: PoolValue) -> PoolValue:
    """Age limits (students, retirement); stay-at-home parents have children at home.

    From RETIREMENT_AGE on, RETIRED_SHARE_FROM_RETIREMENT_AGE of people are retired.
    """
    has_children = bool(living.tag("children"))
    fits = candidates(pool, "employment_status", age,
                      lambda v: has_children or not v.tag("needs_children"))
    retired = [v for v in fits if v.tag("income") == "pension"]
    if age >= RETIREMENT_AGE and retired and d.chance(RETIRED_SHARE_FROM_RETIREMENT_AGE):
        return d.pick(retired)
    return d.pick(fits)


NO_PROFESSION = "none"


def rule_profession(d: Draw, pool: AttributePool, edu: PoolValue, emp: PoolValue) -> str:
    """Professions follow education: drawn from the groups the education level lists."""
    if not emp.tag("has_profession"):
        return NO_PROFESSION
    group_weights: dict[str, float] = edu.tag("professions")
    group = list(group_weights)[d.index([float(w) for w in group_weights.values()])]
    return d.pick(pool["profession"].group(group)).text


def financial_cap(emp: PoolValue, rel: PoolValue) -> int:
    """The highest financial tier the employment status allows."""
    income = emp.tag("income")
    if income == "household" and rel.tag("partner") == "none":
        return MAX_TIER_HOUSEHOLD_WITHOUT_PARTNER
    return MAX_TIER_BY_INCOME[income]


def rule_finances(d: Draw, pool: AttributePool, edu: PoolValue, emp: PoolValue, rel: PoolValue) -> PoolValue:
    """Finances follow education (earning band); employment caps them (a higher draw is clipped)."""
    tier = min(d.index(TIER_WEIGHTS_BY_EARNING[edu.tag("earning")]) + 1, financial_cap(emp, rel))
    return d.pick(candidates(pool, "financial_situation", None, lambda v: v.tag("tier") == tier))


def rule_support(d: Draw, pool: AttributePool, rel: PoolValue, age: int) -> PoolValue:
    """A partner can only be the support of someone who has one."""
    has_partner = rel.tag("partner") != "none"
    return d.pick(candidates(pool, "support_system", age,
                             lambda v: has_partner or not v.tag("needs_partner")))


# ------------------------------------------------------------------ body and goal


def rule_exercise(d: Draw, pool: AttributePool, dep: PoolValue, anx: PoolValue) -> PoolValue:
    """More severe symptoms shift exercise towards inactivity."""
    level = d.index(EXERCISE_LEVEL_WEIGHTS[symptom_band(dep, anx)])
    return d.pick(candidates(pool, "exercise", None, lambda v: v.tag("level") == level))


def rule_sleep(d: Draw, pool: AttributePool, dep: PoolValue, anx: PoolValue) -> PoolValue:
    """More severe symptoms shift sleep towards disturbed; oversleeping only with depression."""
    weights = list(SLEEP_PATTERN_WEIGHTS[symptom_band(dep, anx)])
    if dep.tag("level") < OVERSLEEPING_MIN_DEPRESSION:
        weights[2] = 0.0
    pattern = ("restful", "disturbed", "oversleeping")[d.index(weights)]
    return d.pick(candidates(pool, "sleep_quality", None, lambda v: v.tag("pattern") == pattern))


def rule_program_goal(d: Draw, pool: AttributePool, dep: PoolValue, anx: PoolValue) -> PoolValue:
    """Goals target a symptom only if it is at least mild, more often the more severe it is."""
    focus_weights = {
        "depression": GOAL_FOCUS_BY_LEVEL[dep.tag("level")],
        "anxiety": GOAL_FOCUS_BY_LEVEL[anx.tag("level")],
        "general": GOAL_GENERAL_WEIGHT,
    }
    focus = list(focus_weights)[d.index(list(focus_weights.values()))]
    return d.pick(candidates(pool, "program_goal", None, lambda v: v.tag("focus") == focus))


# ------------------------------------------------------------------ one whole profile


def sample_attributes(rng: np.random.Generator, pool: AttributePool) -> dict[str, Any]:
    """Draw the 25 attributes of one profile. The order of draws is part of the format."""
    d = Draw(rng)
    sex = rule_sex(d, pool)
    identity = rule_gender_identity(d, pool, sex)
    name = rule_name(d, pool, identity)
    orientation = rule_sexual_orientation(d, pool, identity)
    age = rule_age(d, pool)
    race = rule_plain(d, pool, "race")
    thought = rule_plain(d, pool, "thought_process")
    outlook = rule_plain(d, pool, "general_outlook")
    style = rule_plain(d, pool, "conversation_style")
    dep, anx = rule_symptoms(d, pool)
    mood = rule_recent_mood(d, pool, dep, anx)
    edu = rule_education(d, pool, age)
    rel = rule_relationship(d, pool, age)
    living = rule_living(d, pool, rel, age)
    emp = rule_employment(d, pool, age, living)
    profession = rule_profession(d, pool, edu, emp)
    money = rule_finances(d, pool, edu, emp, rel)
    support = rule_support(d, pool, rel, age)
    siblings = rule_plain(d, pool, "siblings")
    exercise = rule_exercise(d, pool, dep, anx)
    sleep = rule_sleep(d, pool, dep, anx)
    mindfulness = rule_plain(d, pool, "attitude_towards_mindfulness")
    region = rule_plain(d, pool, "region")
    goal = rule_program_goal(d, pool, dep, anx)
    return {
        "name": name.text,
        "sex": sex.text,
        "gender_identity": identity.text,
        "sexual_orientation": orientation.text,
        "age": age,
        "race": race.text,
        "thought_process": thought.text,
        "general_outlook": outlook.text,
        "conversation_style": style.text,
        "recent_mood": mood.text,
        "education": edu.text,
        "profession": profession,
        "employment_status": emp.text,
        "financial_situation": money.text,
        "support_system": support.text,
        "siblings": siblings.text,
        "relationship_status": rel.text,
        "living_situation": living.text,
        "exercise": exercise.text,
        "sleep_quality": sleep.text,
        "attitude_towards_mindfulness": mindfulness.text,
        "region": region.text,
        "depressive_symptoms": dep.text,
        "anxious_symptoms": anx.text,
        "program_goal": goal.text,
    }
