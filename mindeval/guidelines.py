"""Evaluation guidelines: load, validate and render a target's ``guidelines.yaml``.

One file feeds both the LLM judge (the rating scale and the rubric of judge axes) and
the annotation app (the human sub-axes). The built-in MindEval file (paper Figs. 11-12 /
Appendix B and C) is one instance of a generic schema:

* ``scale.kind: ordinal`` (the default; the MindEval file has no ``kind``): integer
  scores ``min``..``max`` with a text per score; a judge axis's anchors are score bands
  (``"1-2"``, ``"3-4"``, ...) covering the range once, in order; a human sub-axis's
  anchors are keyed by score and include ``min`` and ``max``.
* ``scale.kind: categorical``: named levels ``{id, label, value, harm}`` mapped to
  distinct integers for statistics; a judge axis has one anchor per level
  (``band: <level id>``); each axis has exactly one human sub-axis, with anchors keyed
  by level id.

Validation errors name the file, the line and the offending field, e.g.
``guidelines.yaml:42:judge_axes.2.anchors: ...``; :func:`guideline_problems` lists
every problem at once.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal, Union

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    PrivateAttr,
    Tag,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from .errors import MindEvalError
from .judging.rubric import (
    NOT_RELEVANT,
    LevelRule,
    Question,
    check_gates,
    check_questions,
)
from .resources import guidelines_dir
from .stats.reply_scales import ScaleSpec, quantity_names

DEFAULT_FILE = "guidelines.yaml"
SCALE_KINDS: tuple[str, ...] = ("ordinal", "categorical")

_SNAKE = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")
_CODE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_BAND = re.compile(r"^(\d+)(?:-(\d+))?$")


def _nonblank(value: str, what: str) -> str:
    if not value.strip():
        raise ValueError(f"{what} must not be empty")
    return value


def _snake(value: str, what: str = "id") -> str:
    if not _SNAKE.match(value):
        raise ValueError(f"{what} '{value}' must be snake_case (a-z, 0-9, underscores)")
    return value


Text = Annotated[str, AfterValidator(lambda v: _nonblank(v, "text"))]


class _Problems(ValueError):
    """Problems found by a cross-field check: ``(sub-location, message)`` pairs."""

    def __init__(self, items: list[tuple[tuple[Any, ...], str]]) -> None:
        super().__init__(items[0][1])
        self.items = items


def _raise(items: list[tuple[tuple[Any, ...], str]]) -> None:
    if items:
        raise _Problems(items)


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _Identified(_Frozen):
    """An item named by a snake_case ``id`` (levels, flags, criteria, sub-axes)."""

    id: str

    @field_validator("id")
    @classmethod
    def _id(cls, v: str) -> str:
        return _snake(v)


class Level(_Identified):
    """One level of a scale: an id, a label for people, its number for statistics, a harm flag."""

    id: str
    label: Text
    value: int
    harm: bool = False
    description: str | None = None  # shown to the judge after the label
    weight: float | None = Field(None, ge=0, le=1e6, allow_inf_nan=False)  # e.g. severity 0 / 1 / 5 / 10


class OrdinalScale(_Frozen):
    """Integer scores ``min``..``max`` (MindEval: 1-6) and how to calibrate them."""

    kind: Literal["ordinal"] = "ordinal"
    min: int = 1
    max: int = 6
    intro: Text
    levels: dict[int, str]
    distribution_note: Text

    @field_validator("max")
    @classmethod
    def _max(cls, v: int, info: ValidationInfo) -> int:
        lo = info.data.get("min")
        if lo is not None and v <= lo:
            raise ValueError(f"max must be greater than min ({lo})")
        return v

    @field_validator("levels")
    @classmethod
    def _levels(cls, v: dict[int, str], info: ValidationInfo) -> dict[int, str]:
        lo, hi = info.data.get("min", 1), info.data.get("max", 6)
        if set(v) != set(range(lo, hi + 1)):
            raise ValueError(
                f"levels must describe every score {lo}-{hi} exactly once (got {sorted(v)})"
            )
        for k, text in v.items():
            _nonblank(text, f"level {k}")
        return dict(sorted(v.items()))

    def all_levels(self) -> list[Level]:
        return [Level.model_construct(id=str(s), label=str(s), value=s, harm=False, description=t)
                for s, t in self.levels.items()]


class CategoricalScale(_Frozen):
    """Named levels (e.g. best practice / suboptimal / potential for harm) mapped to numbers."""

    kind: Literal["categorical"]
    intro: Text
    levels: list[Level] = Field(min_length=2)
    distribution_note: str | None = None

    @field_validator("levels")
    @classmethod
    def _levels(cls, v: list[Level]) -> list[Level]:
        for attr in ("id", "value"):
            seen: dict[Any, int] = {}
            for i, lvl in enumerate(v):
                key = getattr(lvl, attr)
                if key in seen:
                    raise ValueError(f"duplicate level {attr} {key!r} (items {seen[key]} and {i})")
                seen[key] = i
        weighted = [lvl.weight is not None for lvl in v]
        if any(weighted) and not all(weighted):
            i = weighted.index(False)
            raise ValueError(f"level {v[i].id} has no weight: give every level a weight or none")
        if all(weighted):
            by_value = sorted(v, key=lambda lv: -lv.value)  # best (highest value) first
            for better, worse in zip(by_value, by_value[1:]):
                if worse.weight < better.weight:  # type: ignore[operator]
                    raise ValueError(f"level {worse.id} is worse than {better.id} (lower value) but weighs "
                                     f"less ({worse.weight} < {better.weight}): weights grow as levels get worse")
        return v

    def all_levels(self) -> list[Level]:
        return list(self.levels)


def _scale_kind(v: Any) -> str:
    return str(v.get("kind", "ordinal")) if isinstance(v, dict) else getattr(v, "kind", "ordinal")


Scale = Annotated[
    Union[Annotated[OrdinalScale, Tag("ordinal")], Annotated[CategoricalScale, Tag("categorical")]],  # noqa: UP007
    Discriminator(_scale_kind),
]


class AnchorBand(_Frozen):
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
            _nonblank(v, "rarity (use null for none)")
        return v

    @field_validator("bullets")
    @classmethod
    def _bullets(cls, v: list[str]) -> list[str]:
        for i, b in enumerate(v):
            _nonblank(b, f"bullet {i}")
        return v

    @property
    def heading(self) -> str:
        """``label`` with the rarity marker, e.g. ``Exceptional clinical work (RARE)``."""
        return f"{self.label} ({self.rarity})" if self.rarity else self.label


class JudgeAxis(_Frozen):
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


class IssueFlag(_Identified):
    """A 0/1 issue the judge marks on every rated unit (e.g. "gives a diagnosis")."""

    id: str
    label: Text
    description: str | None = None  # shown to the judge after the label


class PointCriterion(_Identified):
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


def _unique_ids(items: list[Any], what: str) -> None:
    seen: dict[str, int] = {}
    for i, x in enumerate(items):
        if x.id in seen:
            raise ValueError(f"duplicate {what} id '{x.id}' (items {seen[x.id]} and {i})")
        seen[x.id] = i


class HumanSubAxis(_Identified):
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
            _nonblank(text, f"anchor {k}")
        return dict(sorted(v.items())) if all(isinstance(k, int) for k in v) else v


def _band_range(band: str) -> tuple[int, int] | None:
    m = _BAND.match(band)
    if not m:
        return None
    lo = int(m.group(1))
    return lo, int(m.group(2) or lo)


def _check_axes(axes: list[JudgeAxis], scale: OrdinalScale | CategoricalScale) -> list[JudgeAxis]:
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
    _raise(problems)
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


def _check_subaxes(subs: list[HumanSubAxis], scale: OrdinalScale | CategoricalScale,
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
    _raise(problems)
    return out


class Guidelines(_Frozen):
    """The whole guidelines file."""

    version: Text
    scale: Scale
    judge_axes: list[JudgeAxis] = Field(min_length=1)
    human_subaxes: list[HumanSubAxis] = Field(min_length=1)
    question_mode: Literal["together", "one_by_one"] = "together"  # all questions in one call, or one per call
    flags: list[IssueFlag] = Field(default_factory=list)  # 0/1 issues marked on every rated unit
    point_criteria: list[PointCriterion] = Field(default_factory=list)  # points rubric (met / possible)
    # What one judgment rates: the whole conversation, each clinician reply (seen with the
    # conversation up to it), or the item-level questions of a question rubric.
    # Left out: question when a judge axis has questions, else conversation (:attr:`judging_unit`).
    unit: Literal["conversation", "reply", "question"] | None = None

    _source: str | None = PrivateAttr(default=None)
    _sha256: str | None = PrivateAttr(default=None)

    @field_validator("judge_axes")
    @classmethod
    def _axes(cls, v: list[JudgeAxis], info: ValidationInfo) -> list[JudgeAxis]:
        scale = info.data.get("scale")
        return v if scale is None else _check_axes(v, scale)

    @field_validator("human_subaxes")
    @classmethod
    def _subaxes(cls, v: list[HumanSubAxis], info: ValidationInfo) -> list[HumanSubAxis]:
        scale = info.data.get("scale")
        axes = info.data.get("judge_axes")
        codes = tuple(a.code for a in axes) if axes is not None else None
        if axes is not None:
            qids: dict[str, str] = {}
            for ax in axes:
                for q in ax.questions:
                    if q.id in qids or q.id in codes:
                        raise ValueError(f"question id '{q.id}' of {ax.code} is used twice "
                                         f"(question ids are unique across dimensions and differ from codes)")
                    qids[q.id] = ax.code
        return v if scale is None else _check_subaxes(v, scale, codes)

    @field_validator("flags")
    @classmethod
    def _flags(cls, v: list[IssueFlag], info: ValidationInfo) -> list[IssueFlag]:
        _unique_ids(v, "flag")
        scale = info.data.get("scale")
        clash = [f.id for f in v if scale is not None and f"flag_{f.id}" in {lv.id for lv in scale.all_levels()}]
        if clash:
            raise ValueError(f"flag {clash[0]} and level flag_{clash[0]} would report under one name")
        return v

    @field_validator("unit")
    @classmethod
    def _unit(cls, v: str | None, info: ValidationInfo) -> str | None:
        axes, scale = info.data.get("judge_axes"), info.data.get("scale")
        if v is None or axes is None or scale is None:
            return v
        has_questions = any(a.questions for a in axes)
        if v == "reply":
            if not isinstance(scale, CategoricalScale):
                raise ValueError("unit reply needs a categorical scale (each reply gets one level)")
            if len(axes) != 1 or axes[0].questions or axes[0].not_relevant:
                raise ValueError("unit reply needs exactly one judge axis, without questions or not_relevant "
                                 "(its level is the reply's level)")
            if info.data.get("point_criteria"):
                raise ValueError("point criteria are judged per conversation: unit conversation or question, "
                                 "not reply")
        elif v == "question" and not has_questions:
            raise ValueError("unit question needs a judge axis with questions")
        elif v == "conversation" and has_questions:
            raise ValueError("judge axes with questions are judged per question: set unit: question "
                             "(or leave unit out)")
        return v

    @field_validator("point_criteria")
    @classmethod
    def _point_criteria(cls, v: list[PointCriterion]) -> list[PointCriterion]:
        _unique_ids(v, "criterion")
        if v and not any(c.points > 0 for c in v):
            raise ValueError("at least one criterion needs positive points (points possible would be 0)")
        return v

    # ------------------------------------------------------------- accessors

    @property
    def axis_codes(self) -> tuple[str, ...]:
        return tuple(a.code for a in self.judge_axes)

    @property
    def scale_kind(self) -> str:
        return self.scale.kind

    @property
    def levels(self) -> list[Level]:
        """Every level of the scale in order (ordinal: one per score, id and label the number)."""
        return self.scale.all_levels()

    def score_values(self) -> tuple[int, ...]:
        """The numbers a score may take (ordinal: min..max; categorical: the level values)."""
        return tuple(lvl.value for lvl in self.levels)

    def level_of(self, value: float) -> Level:
        for lvl in self.levels:
            if lvl.value == value:
                return lvl
        raise MindEvalError(f"{value!r} is not a value of this scale "
                            f"({', '.join(map(str, self.score_values()))})", field="scale")

    def value_of(self, level_id: str) -> int:
        for lvl in self.levels:
            if lvl.id == str(level_id):
                return lvl.value
        raise MindEvalError(f"unknown level '{level_id}' (one of {', '.join(lv.id for lv in self.levels)})",
                            field="scale")

    @property
    def harm_levels(self) -> tuple[int, ...]:
        """Values flagged as potential harm (empty for ordinal scales such as MindEval's)."""
        return tuple(lvl.value for lvl in self.levels if lvl.harm)

    def is_harm(self, value: float | None) -> bool:
        return value is not None and value in self.harm_levels

    @property
    def not_relevant_axes(self) -> tuple[str, ...]:
        """Codes the judge may rate "not relevant" (stored as ``None``)."""
        return tuple(a.code for a in self.judge_axes if a.not_relevant)

    @property
    def judging_unit(self) -> str:
        """What one judgment rates: ``conversation``, ``reply`` or ``question``."""
        if self.unit is not None:
            return self.unit
        return "question" if any(a.questions for a in self.judge_axes) else "conversation"

    @property
    def has_items(self) -> bool:
        """Some dimension is scored from questions or may be "not relevant" (mindeval.judging.items)."""
        return any(a.questions or a.not_relevant for a in self.judge_axes)

    def best_level(self) -> Level:
        return max(self.levels, key=lambda lv: lv.value)

    def worst_level(self) -> Level:
        return min(self.levels, key=lambda lv: lv.value)

    def scale_spec(self) -> ScaleSpec:
        """The scale as :mod:`mindeval.stats.reply_scales` reads it: levels best to worst, weights,
        flags and points per criterion."""
        levels = sorted(self.levels, key=lambda lv: -lv.value)
        weighted = all(lv.weight is not None for lv in levels) and isinstance(self.scale, CategoricalScale)
        return ScaleSpec(levels=[lv.id for lv in levels],
                         weights={lv.id: float(lv.weight) for lv in levels} if weighted else None,  # type: ignore[arg-type]
                         flags=[f.id for f in self.flags], points={c.id: c.points for c in self.point_criteria})

    def quantity_names(self) -> list[str]:
        """The reported quantities a headline score formula may read (mindeval.stats.reply_scales)."""
        return quantity_names(self.scale_spec())

    def items_info(self) -> dict[str, Any]:
        """What a run's ``config.json`` target block records of the item rubric (empty if none)."""
        out: dict[str, Any] = {}
        if self.not_relevant_axes:
            out["not_relevant"] = list(self.not_relevant_axes)
        if any(a.questions for a in self.judge_axes):
            out["question_mode"] = self.question_mode
            out["questions"] = {a.code: [q.id for q in a.questions] for a in self.judge_axes if a.questions}
        if self.judging_unit == "reply":
            out["unit"] = "reply"
            out["reply_scale"] = self.scale_spec().model_dump()
        return out

    def scale_info(self) -> dict[str, Any]:
        """The scale as recorded in a run's ``config.json`` target block."""
        out: dict[str, Any] = {"kind": self.scale_kind}
        if isinstance(self.scale, OrdinalScale):
            out.update(min=self.scale.min, max=self.scale.max)
        out["levels"] = [{"id": lv.id, "label": lv.label, "value": lv.value, "harm": lv.harm}
                         for lv in self.levels]
        return out

    @property
    def source(self) -> str | None:
        """Path the guidelines were loaded from (``None`` if built in memory)."""
        return self._source

    @property
    def sha256(self) -> str | None:
        """SHA-256 of the file's bytes (``None`` if built in memory)."""
        return self._sha256

    def axis(self, code: str) -> JudgeAxis:
        for a in self.judge_axes:
            if a.code == code:
                return a
        raise MindEvalError(
            f"unknown axis '{code}' (one of {', '.join(self.axis_codes)})", field="axis"
        )

    def subaxes_for(self, code: str) -> list[HumanSubAxis]:
        self.axis(code)  # validates the code
        return [s for s in self.human_subaxes if s.axis == code]

    def subaxis(self, subaxis_id: str) -> HumanSubAxis:
        for s in self.human_subaxes:
            if s.id == subaxis_id:
                return s
        raise MindEvalError(f"unknown sub-axis '{subaxis_id}'", field="human_subaxes")


# ------------------------------------------------------------------ loading


def default_path() -> Path:
    return guidelines_dir() / DEFAULT_FILE


def load_guidelines(path: str | Path | None = None) -> Guidelines:
    """Load and validate a guidelines file (default: the bundled ``guidelines.yaml``).

    Files are cached (re-read if they change on disk). Problems raise
    :class:`MindEvalError` naming the file, the line when known, and the field.
    """
    p = default_path() if path is None else Path(path)
    try:
        st = p.stat()
    except OSError as exc:
        raise MindEvalError(f"cannot read guidelines file: {exc.strerror or exc}", path=p) from None
    return _load_cached(str(p.resolve()) if path is None else str(p), st.st_mtime_ns, st.st_size)


@lru_cache(maxsize=16)
def _load_cached(path_str: str, mtime_ns: int, size: int) -> Guidelines:
    g, problems = _parse(Path(path_str))
    if g is None:
        first = problems[0]
        if len(problems) > 1:
            n = len(problems) - 1
            first = MindEvalError(f"{first.message} (and {n} more problem{'s' if n > 1 else ''})",
                                  path=first.path, line=first.line, field=first.field)
        raise first
    return g


def guideline_problems(path: str | Path) -> list[MindEvalError]:
    """Every problem of a guidelines file (empty when it is valid)."""
    return _parse(Path(path))[1]


def _parse(path: Path) -> tuple[Guidelines | None, list[MindEvalError]]:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        return None, [MindEvalError(f"cannot read guidelines file: {exc.strerror or exc}", path=path)]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None, [MindEvalError("guidelines file is not valid UTF-8", path=path)]
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc)
        return None, [MindEvalError(f"invalid YAML: {problem}", path=path, line=line, field="yaml")]
    if not isinstance(data, dict):
        return None, [MindEvalError("guidelines file must be a YAML mapping", path=path, line=1)]
    try:
        g = Guidelines.model_validate(data)
    except ValidationError as exc:
        return None, validation_problems(exc, path, text)
    g._source = str(path)
    g._sha256 = hashlib.sha256(raw).hexdigest()
    return g, []


def validation_problems(exc: ValidationError, path: Path, text: str) -> list[MindEvalError]:
    """One :class:`MindEvalError` per problem of a pydantic error on a YAML file (file:line:field)."""
    out: list[MindEvalError] = []
    for err in exc.errors():
        loc = tuple(err.get("loc", ()))
        if len(loc) > 1 and loc[0] == "scale" and loc[1] in SCALE_KINDS:
            loc = loc[:1] + loc[2:]  # the discriminator's tag is not a field of the file
        cause = (err.get("ctx") or {}).get("error")
        items = cause.items if isinstance(cause, _Problems) else [((), _message(err))]
        for sub, msg in items:
            full = loc + sub
            out.append(MindEvalError(msg, path=path, line=yaml_line(text, full),
                                     field=".".join(str(p) for p in full) or None))
    return out


def _message(err: Any) -> str:
    kind = err.get("type")
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        return "unknown field (check the spelling)"
    if kind == "union_tag_invalid":
        return f"kind must be one of {', '.join(SCALE_KINDS)}"
    return str(err.get("msg", "invalid value")).removeprefix("Value error, ")


def yaml_line(text: str, loc: tuple[Any, ...]) -> int | None:
    """1-based line of the YAML node at ``loc`` (its deepest existing ancestor)."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return None
    line = node.start_mark.line + 1 if node is not None else None
    for part in loc:
        child = None
        if isinstance(node, yaml.MappingNode):
            for k, val in node.value:
                if str(k.value) == str(part):
                    child = val
                    line = k.start_mark.line + 1
                    break
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if 0 <= part < len(node.value):
                child = node.value[part]
                line = child.start_mark.line + 1
        if child is None:
            break
        node = child
    return line


# ------------------------------------------------------------------ rendering


def render_scale(g: Guidelines) -> str:
    """The rating-scale block for the judge prompt's ``${rating_scale}`` field."""
    if isinstance(g.scale, OrdinalScale):
        lines = [g.scale.intro.strip(), "", "RATING SCALE CALIBRATION:"]
        lines += [f"{score} = {text.strip()}" for score, text in g.scale.levels.items()]
    else:
        lines = [g.scale.intro.strip(), "", "RATING LEVELS:"]
        lines += [f"{lv.id} = {lv.label}" + (f": {lv.description.strip()}" if lv.description else "")
                  for lv in g.scale.levels]
    if g.scale.distribution_note:
        lines += ["", g.scale.distribution_note.strip()]
    return "\n".join(lines)


def render_axis(axis: JudgeAxis, g: Guidelines | None = None) -> str:
    """One axis as a tagged ``<criterion code="...">`` block."""
    lines = [
        f'<criterion code="{axis.code}">',
        f"NAME: {axis.name}",
        "",
        "WHAT TO EVALUATE:",
        axis.what_to_evaluate.strip(),
    ]
    labels = {lv.id: lv.label for lv in g.levels} if g is not None and g.scale_kind == "categorical" else {}
    if axis.questions:
        lines += ["", "QUESTIONS (answer each by its id):"]
        lines += [f"- {q.id}: {q.text.strip()} (answer {' | '.join(q.answers)})" for q in axis.questions]
        lines.append("</criterion>")
        return "\n".join(lines)
    for band in axis.anchors:
        if band.band in labels:
            lines += ["", f"LEVEL {band.band} ({labels[band.band]}): {band.heading}"]
        else:
            lines += ["", f"SCORE {band.band}: {band.heading}"]
        lines += [f"- {b.strip()}" for b in band.bullets]
    if axis.not_relevant:
        lines += ["", f"LEVEL {NOT_RELEVANT}: this dimension does not apply to this conversation at all."]
    lines.append("</criterion>")
    return "\n".join(lines)


def render_rubric(g: Guidelines) -> str:
    """The rubric of every judge axis for the judge prompt's ``${rubric}`` field."""
    return "\n\n".join(render_axis(a, g) for a in g.judge_axes)
