"""A guidelines file's dimensions: the judge axes with their anchors (and item-level
questions), issue flags, point criteria and the human rating form's sub-axes, with the
checks that tie them to the scale."""

from __future__ import annotations

import re
from typing import Any, Union

from pydantic import Field, field_validator

from ..errors import MindEvalError
from ..judging.rubric import NOT_RELEVANT, LevelRule, Question, check_gates, check_questions
from .scales import CategoricalScale, OrdinalScale
from .schema import Frozen, Identified, Text, nonblank, raise_problems

_CODE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_BAND = re.compile(r"^(\d+)(?:-(\d+))?$")


class AnchorBand(Frozen):
    """One anchor of a judge axis: a score band (``"5-6"``) or a level id, a label and bullets."""

    band: str
    label: Text
    rarity: str | None = None
    bullets: list[str] = Field(min_length=1)

    @field_validator("band", mode="before")
    @classmethod
    def _band(cls, v: Any) -> str:
        return str(v) if isinstance(v, int) and not isinstance(v, bool) else v

    @field_validator("rarity")
    @classmethod
    def _rarity(cls, v: str | None) -> str | None:
        if v is not None:
            nonblank(v, "rarity (use null for none)")
        return v

    @field_validator("bullets")
    @classmethod
    def _bullets(cls, v: list[str]) -> list[str]:
        for i, b in enumerate(v):
            nonblank(b, f"bullet {i}")
        return v

    @property
    def heading(self) -> str:
        """``label`` with the rarity marker, e.g. ``Exceptional clinical work (RARE)``."""
        return f"{self.label} ({self.rarity})" if self.rarity else self.label


class JudgeAxis(Frozen):
    """One dimension scored by the judge."""

    code: str
    name: Text
    summary: Text
    what_to_evaluate: Text
    anchors: list[AnchorBand] = Field(min_length=1)
    not_relevant: bool = False  # the judge may answer "not_relevant" (no level; out of the denominators)
    questions: list[Question] = Field(default_factory=list)  # item-level rubric (mindeval.judging.rubric)
    rule: LevelRule = Field(default_factory=LevelRule)  # how the level follows from the answers

    @field_validator("code")
    @classmethod
    def _code(cls, v: str) -> str:
        if not _CODE.match(v):
            raise ValueError(f"code '{v}' must be a letter followed by letters, digits or underscores")
        return v

    def band(self, band: str) -> AnchorBand:
        for a in self.anchors:
            if a.band == band:
                return a
        raise MindEvalError(f"axis {self.code} has no band '{band}'", field="band")


class IssueFlag(Identified):
    """A 0/1 issue the judge marks on every rated unit (e.g. "gives a diagnosis")."""

    id: str
    label: Text
    description: str | None = None  # shown to the judge after the label


class PointCriterion(Identified):
    """A criterion worth ``points`` when met (negative: a penalty), HealthBench-style."""

    id: str
    text: Text
    points: float = Field(allow_inf_nan=False, ge=-1000, le=1000)

    @field_validator("points")
    @classmethod
    def _points(cls, v: float) -> float:
        if v == 0:
            raise ValueError("points must not be 0 (positive: earned when met; negative: a penalty)")
        return v


class HumanSubAxis(Identified):
    """One item of the human rating form, belonging to a judge axis."""

    id: str
    axis: str
    name: Text
    anchors: dict[Union[int, str], str]  # noqa: UP007 - scores (ordinal) or level ids (categorical)
    allow_na: bool = False

    @field_validator("anchors")
    @classmethod
    def _sub_anchors(cls, v: dict[int | str, str]) -> dict[int | str, str]:
        if not v:
            raise ValueError("anchors must not be empty")
        for k, text in v.items():
            nonblank(text, f"anchor {k}")
        return dict(sorted(v.items())) if all(isinstance(k, int) for k in v) else v


def _band_range(band: str) -> tuple[int, int] | None:
    m = _BAND.match(band)
    if not m:
        return None
    lo = int(m.group(1))
    return lo, int(m.group(2) or lo)


def check_axes(axes: list[JudgeAxis], scale: OrdinalScale | CategoricalScale) -> list[JudgeAxis]:
    problems: list[tuple[tuple[Any, ...], str]] = check_gates(
        [a.code for a in axes], [bool(a.questions) for a in axes], [a.not_relevant for a in axes],
        [a.questions for a in axes])
    seen: dict[str, int] = {}
    for i, ax in enumerate(axes):
        if ax.code in seen:
            problems.append(((i, "code"), f"duplicate code '{ax.code}' (items {seen[ax.code]} and {i})"))
        seen.setdefault(ax.code, i)
        bands = [a.band for a in ax.anchors]
        problems += _check_items(i, ax, scale)
        if isinstance(scale, CategoricalScale):
            ids = [lvl.id for lvl in scale.levels]
            if sorted(bands) != sorted(ids):
                problems.append(((i, "anchors"), f"anchors need one band per level ({', '.join(ids)}); "
                                 f"got {', '.join(bands) or 'none'}"))
            continue
        expect, ok = scale.min, True
        for b in bands:
            r = _band_range(b)
            if r is None or r[0] != expect or r[1] < r[0] or r[1] > scale.max:
                ok = False
                break
            expect = r[1] + 1
        if not ok or expect != scale.max + 1:
            problems.append(((i, "anchors"), f"anchors must be score bands covering {scale.min}-{scale.max} "
                             f"in order without gaps or overlap (got {', '.join(bands)})"))
    raise_problems(problems)
    return axes


def _check_items(i: int, ax: JudgeAxis, scale: OrdinalScale | CategoricalScale) -> list[tuple[tuple[Any, ...], str]]:
    """Problems of an axis's questions, level rule and not-relevant flag."""
    out: list[tuple[tuple[Any, ...], str]] = []
    if not ax.questions:
        if ax.rule.otherwise is not None:
            out.append(((i, "rule"), "a level rule needs questions"))
        return out
    if not isinstance(scale, CategoricalScale):
        return [((i, "questions"), "questions need a categorical scale (their severities are level ids)")]
    ids = [lvl.id for lvl in scale.levels]
    out += [((i, "questions") + sub, msg) for sub, msg in check_questions(ax.questions, ids)]
    if ax.rule.otherwise is not None and ax.rule.otherwise not in ids:
        out.append(((i, "rule", "otherwise"), f"'{ax.rule.otherwise}' is not a level ({', '.join(ids)})"))
    ends_nr = [q.id for q in ax.questions if NOT_RELEVANT in q.next.values()]
    if ends_nr and not ax.not_relevant:
        out.append(((i, "not_relevant"), f"question {ends_nr[0]} can end in not_relevant: set not_relevant: true"))
    return out


def check_subaxes(subs: list[HumanSubAxis], scale: OrdinalScale | CategoricalScale,
                   codes: tuple[str, ...] | None) -> list[HumanSubAxis]:
    problems: list[tuple[tuple[Any, ...], str]] = []
    seen: dict[str, int] = {}
    out = []
    for i, s in enumerate(subs):
        if s.id in seen:
            problems.append(((), f"duplicate id '{s.id}' (items {seen[s.id]} and {i})"))
        seen.setdefault(s.id, i)
        if codes is not None and s.axis not in codes:
            problems.append(((i, "axis"), f"axis '{s.axis}' is not one of {', '.join(codes)}"))
        if isinstance(scale, CategoricalScale):
            ids = [lvl.id for lvl in scale.levels]
            if set(map(str, s.anchors)) != set(ids) or len(s.anchors) != len(ids):
                problems.append(((i, "anchors"), f"anchors need exactly the level ids {', '.join(ids)} "
                                 f"(got {', '.join(map(str, s.anchors))})"))
            else:
                s = s.model_copy(update={"anchors": {k: s.anchors[k] for k in ids}})
        else:
            wrong = [k for k in s.anchors if not isinstance(k, int) or not scale.min <= k <= scale.max]
            missing = [k for k in (scale.min, scale.max) if k not in s.anchors]
            if wrong:
                problems.append(((i, "anchors"), f"anchor scores must be within {scale.min}-{scale.max} "
                                 f"(got {', '.join(map(repr, wrong))})"))
            elif missing:
                problems.append(((i, "anchors"), f"anchors need scores {scale.min} and {scale.max}; "
                                 f"missing {', '.join(map(str, missing))}"))
        out.append(s)
    if codes is not None:
        uncovered = [c for c in codes if not any(s.axis == c for s in subs)]
        if uncovered:
            problems.append(((), f"no sub-axis for axis {', '.join(uncovered)}"))
        if isinstance(scale, CategoricalScale):
            doubled = sorted({s.axis for s in subs if sum(t.axis == s.axis for t in subs) > 1})
            if doubled:
                problems.append(((), "a categorical scale needs exactly one sub-axis per axis; "
                                 f"{', '.join(doubled)} has more"))
    raise_problems(problems)
    return out
