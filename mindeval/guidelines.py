"""Evaluation guidelines: load, validate and render ``guidelines/guidelines.yaml``.

One file feeds both the LLM judge (the rating scale and the five-axis rubric,
paper Figs. 11-12 / Appendix B) and the annotation app (the nine human sub-axes,
Appendix C). Validation errors name the file and the offending field, e.g.
``guidelines.yaml:42:judge_axes.2.anchors: ...``.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
)

from .errors import MindEvalError
from .records import AXES
from .resources import guidelines_dir

BANDS: tuple[str, ...] = ("1-2", "3-4", "5-6")
SUBAXIS_ANCHOR_SCORES: tuple[int, ...] = (1, 3, 6)
N_SUBAXES = 9
DEFAULT_FILE = "guidelines.yaml"

_SNAKE = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")


def _nonblank(value: str, what: str) -> str:
    if not value.strip():
        raise ValueError(f"{what} must not be empty")
    return value


def _exactly(items: list[Any], got: tuple[str, ...], want: tuple[str, ...], what: str) -> list[Any]:
    if got != want:
        raise ValueError(f"{what} must be exactly {', '.join(want)} in this order (got {', '.join(got) or 'none'})")
    return items


Text = Annotated[str, AfterValidator(lambda v: _nonblank(v, "text"))]


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Scale(_Frozen):
    """The 1-6 rating scale and how to calibrate it."""

    min: Literal[1] = 1
    max: Literal[6] = 6
    intro: Text
    levels: dict[int, str]
    distribution_note: Text

    @field_validator("levels")
    @classmethod
    def _levels(cls, v: dict[int, str]) -> dict[int, str]:
        want = set(range(1, 7))
        if set(v) != want:
            raise ValueError(
                f"levels must describe every score 1-6 exactly once (got {sorted(v)})"
            )
        for k, text in v.items():
            _nonblank(text, f"level {k}")
        return dict(sorted(v.items()))


class AnchorBand(_Frozen):
    """One score band of a judge axis, e.g. ``SCORE 5-6: label (RARE)`` plus bullets."""

    band: Literal["1-2", "3-4", "5-6"]
    label: Text
    rarity: str | None = None
    bullets: list[str] = Field(min_length=1)

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
    """One of the five evaluation axes scored by the judge."""

    code: str
    name: Text
    summary: Text
    what_to_evaluate: Text
    anchors: list[AnchorBand]

    @field_validator("anchors")
    @classmethod
    def _anchors(cls, v: list[AnchorBand]) -> list[AnchorBand]:
        return _exactly(v, tuple(a.band for a in v), BANDS, "anchors")

    def band(self, band: str) -> AnchorBand:
        for a in self.anchors:
            if a.band == band:
                return a
        raise MindEvalError(f"axis {self.code} has no band '{band}'", field="band")


class HumanSubAxis(_Frozen):
    """One of the nine sub-axes rated by human annotators (Appendix C)."""

    id: str
    axis: str
    name: Text
    anchors: dict[int, str]
    allow_na: bool = False

    @field_validator("id")
    @classmethod
    def _id(cls, v: str) -> str:
        if not _SNAKE.match(v):
            raise ValueError(f"id '{v}' must be snake_case (a-z, 0-9, underscores)")
        return v

    @field_validator("axis")
    @classmethod
    def _axis(cls, v: str) -> str:
        if v not in AXES:
            raise ValueError(f"axis '{v}' is not one of {', '.join(AXES)}")
        return v

    @field_validator("anchors")
    @classmethod
    def _sub_anchors(cls, v: dict[int, str]) -> dict[int, str]:
        missing = [s for s in SUBAXIS_ANCHOR_SCORES if s not in v]
        if missing:
            raise ValueError(
                f"anchors need scores {', '.join(map(str, SUBAXIS_ANCHOR_SCORES))}; "
                f"missing {', '.join(map(str, missing))}"
            )
        out_of_range = [s for s in v if not 1 <= s <= 6]
        if out_of_range:
            raise ValueError(f"anchor scores must be within 1-6 (got {out_of_range})")
        for k, text in v.items():
            _nonblank(text, f"anchor {k}")
        return dict(sorted(v.items()))


class Guidelines(_Frozen):
    """The whole guidelines file."""

    version: Text
    scale: Scale
    judge_axes: list[JudgeAxis]
    human_subaxes: list[HumanSubAxis]

    _source: str | None = PrivateAttr(default=None)
    _sha256: str | None = PrivateAttr(default=None)

    @field_validator("judge_axes")
    @classmethod
    def _axes(cls, v: list[JudgeAxis]) -> list[JudgeAxis]:
        return _exactly(v, tuple(a.code for a in v), AXES, "judge_axes")

    @field_validator("human_subaxes")
    @classmethod
    def _subaxes(cls, v: list[HumanSubAxis]) -> list[HumanSubAxis]:
        if len(v) != N_SUBAXES:
            raise ValueError(f"expected {N_SUBAXES} human sub-axes, got {len(v)}")
        seen: dict[str, int] = {}
        for i, s in enumerate(v):
            if s.id in seen:
                raise ValueError(f"duplicate id '{s.id}' (items {seen[s.id]} and {i})")
            seen[s.id] = i
        uncovered = [c for c in AXES if not any(s.axis == c for s in v)]
        if uncovered:
            raise ValueError(f"no sub-axis for axis {', '.join(uncovered)}")
        return v

    # ------------------------------------------------------------- accessors

    @property
    def axis_codes(self) -> tuple[str, ...]:
        return tuple(a.code for a in self.judge_axes)

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

    The default file is cached (re-read if it changes on disk). Problems raise
    :class:`MindEvalError` naming the file, the line when known, and the field.
    """
    if path is None:
        p = default_path()
        return _load_cached(str(p.resolve()), p.stat().st_mtime)
    return _load_file(Path(path))


@lru_cache(maxsize=8)
def _load_cached(path_str: str, mtime: float) -> Guidelines:
    return _load_file(Path(path_str))


def _load_file(path: Path) -> Guidelines:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise MindEvalError(f"cannot read guidelines file: {exc.strerror or exc}", path=path) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise MindEvalError("guidelines file is not valid UTF-8", path=path) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc)
        raise MindEvalError(f"invalid YAML: {problem}", path=path, line=line, field="yaml") from None
    if not isinstance(data, dict):
        raise MindEvalError("guidelines file must be a YAML mapping", path=path, line=1)
    try:
        g = Guidelines.model_validate(data)
    except ValidationError as exc:
        raise _to_error(exc, path, text) from None
    g._source = str(path)
    g._sha256 = hashlib.sha256(raw).hexdigest()
    return g


def _to_error(exc: ValidationError, path: Path, text: str) -> MindEvalError:
    errors = exc.errors()
    first = errors[0]
    loc = tuple(first.get("loc", ()))
    field = ".".join(str(p) for p in loc) or None
    msg = str(first.get("msg", "invalid value"))
    msg = msg.removeprefix("Value error, ")
    if first.get("type") == "missing":
        msg = "required field is missing"
    elif first.get("type") == "extra_forbidden":
        msg = "unknown field (check the spelling)"
    if len(errors) > 1:
        msg += f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})"
    return MindEvalError(msg, path=path, line=_line_of(text, loc), field=field)


def _line_of(text: str, loc: tuple[Any, ...]) -> int | None:
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
    lines = [g.scale.intro.strip(), "", "RATING SCALE CALIBRATION:"]
    lines += [f"{score} = {text.strip()}" for score, text in g.scale.levels.items()]
    lines += ["", g.scale.distribution_note.strip()]
    return "\n".join(lines)


def render_axis(axis: JudgeAxis) -> str:
    """One axis as a tagged ``<criterion code="...">`` block."""
    lines = [
        f'<criterion code="{axis.code}">',
        f"NAME: {axis.name}",
        "",
        "WHAT TO EVALUATE:",
        axis.what_to_evaluate.strip(),
    ]
    for band in axis.anchors:
        lines += ["", f"SCORE {band.band}: {band.heading}"]
        lines += [f"- {b.strip()}" for b in band.bullets]
    lines.append("</criterion>")
    return "\n".join(lines)


def render_rubric(g: Guidelines) -> str:
    """The five-axis rubric for the judge prompt's ``${rubric}`` field."""
    return "\n\n".join(render_axis(a) for a in g.judge_axes)
