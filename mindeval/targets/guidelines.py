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
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import Field, PrivateAttr, ValidationError, ValidationInfo, field_validator

from ..errors import MindEvalError
from ..resources import guidelines_dir
from ..stats.scale_spec import ScaleSpec, quantity_names
from .axes import HumanSubAxis, IssueFlag, JudgeAxis, PointCriterion, check_axes, check_subaxes
from .scales import CategoricalScale, Level, OrdinalScale, Scale
from .schema import Frozen, Text, unique_ids
from .yaml_errors import validation_problems

DEFAULT_FILE = "guidelines.yaml"


class Guidelines(Frozen):
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
        return v if scale is None else check_axes(v, scale)

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
        return v if scale is None else check_subaxes(v, scale, codes)

    @field_validator("flags")
    @classmethod
    def _flags(cls, v: list[IssueFlag], info: ValidationInfo) -> list[IssueFlag]:
        unique_ids(v, "flag")
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
        unique_ids(v, "criterion")
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
def _parsed(path_str: str, mtime_ns: int, size: int) -> tuple[Guidelines | None, tuple[MindEvalError, ...]]:
    """One parse per file version: a run's checks and its loads read the file once."""
    g, problems = _parse(Path(path_str))
    return g, tuple(problems)


def _load_cached(path_str: str, mtime_ns: int, size: int) -> Guidelines:
    g, problems = _parsed(path_str, mtime_ns, size)
    if g is None:
        first, n = problems[0], len(problems) - 1  # a fresh error: the cached one is never raised
        more = f" (and {n} more problem{'s' if n > 1 else ''})" if n else ""
        raise MindEvalError(f"{first.message}{more}", path=first.path, line=first.line, field=first.field)
    return g


def guideline_problems(path: str | Path) -> list[MindEvalError]:
    """Every problem of a guidelines file (empty when it is valid)."""
    p = Path(path)
    try:
        st = p.stat()
    except OSError:
        return _parse(p)[1]
    return [MindEvalError(e.message, path=e.path, line=e.line, field=e.field)  # fresh: callers raise them
            for e in _parsed(str(p), st.st_mtime_ns, st.st_size)[1]]


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
