"""A target's manifest (``target.yaml``): its fields, where it is found, and reading it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from ..config import DEFAULT_TURNS, MAX_SESSIONS, OPENING_LINE, SNAKE_CASE
from ..errors import MindEvalError
from ..formula import FormulaError, parse_formula
from ..prompts import ALLOWED_FIELDS, LabelScope
from ..records import DEFAULT_ROLES, MemorySpec
from ..resources import targets_dir
from ..schedule import Schedule
from .first_session import FirstSession
from .schema import Problems, raise_problems, snake
from .yaml_errors import validation_problems

MANIFEST = "target.yaml"
BUILTIN_PREFIX = "builtin:"
TARGET_ROLES: tuple[str, ...] = ("patient", "clinician", "judge")
SESSION_ROLES: tuple[str, ...] = ("memory", "next_session")  # the session step's templates (sessions > 1)


def _name(v: str) -> str:
    return snake(v, "name")


def _text(v: str) -> str:
    if not v.strip():
        raise ValueError("must not be empty")
    return v


class TargetPrompts(BaseModel):
    """The template of each model role: a path relative to the manifest or a built-in ref."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    patient: str
    clinician: str
    judge: str
    memory: str | None = None  # sessions > 1: the clinician writes its notes after a session
    next_session: str | None = None  # sessions > 1: the patient's situation for the next session


Role = Literal["patient", "clinician", "judge"]
LABELS_SEEN_BY: tuple[Role, ...] = ("judge",)  # who may name a label in a template unless visible_to says


class TargetLabels(BaseModel):
    """Profile labels: fields with their allowed values, held in a file beside the profiles
    (``{profile id: {field: value}}``), for breakdowns. A label reaches a prompt only where a
    template names it (``${risk_level}``), and only a template of a role it is visible to:
    ``visible_to: {label: [roles]}``, the judge alone for a label not listed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    file: str  # relative to the manifest
    fields: dict[str, list[str]] = Field(min_length=1)
    visible_to: dict[str, list[Role]] = Field(default_factory=dict)

    @field_validator("fields")
    @classmethod
    def _fields(cls, v: dict[str, list[str]]) -> dict[str, list[str]]:
        taken = frozenset().union(*ALLOWED_FIELDS.values())
        for name, values in v.items():
            _name(name)
            if name in taken:
                raise ValueError(f"label {name} has the name of a template field; choose another name")
            if not values:
                raise ValueError(f"label {name} needs at least one value")
            if len(set(map(str, values))) != len(values):
                raise ValueError(f"label {name} lists a value twice")
        return {k: [str(x) for x in vals] for k, vals in v.items()}

    @model_validator(mode="after")
    def _visible(self) -> TargetLabels:
        unknown = sorted(self.visible_to.keys() - self.fields.keys())
        if unknown:
            raise ValueError(f"visible_to names {unknown[0]}, which is not a declared label "
                             f"({', '.join(self.fields)})")
        return self

    def scope(self, role: str) -> LabelScope:
        """The labels a template of ``role`` may name, and those it may not."""
        seen = {n for n in self.fields if role in self.visible_to.get(n, LABELS_SEEN_BY)}
        return LabelScope(visible=frozenset(seen), hidden=frozenset(self.fields.keys() - seen))


class TargetRoles(BaseModel):
    """How the transcript shown to the judge names the two sides."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    patient: Annotated[str, AfterValidator(_text)] = DEFAULT_ROLES["patient"]
    clinician: Annotated[str, AfterValidator(_text)] = DEFAULT_ROLES["clinician"]


class TargetScore(BaseModel):
    """A declared headline score: a formula over the reported quantities (mindeval.formula),
    e.g. VERA-MH's ``max(0, (50 + pct_best_practice / 2) * (1 - pct_high_harm / 100) ** 2)``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    formula: str
    label: Annotated[str, AfterValidator(_text)] = "Score"
    higher_is_better: bool = True

    @field_validator("formula")
    @classmethod
    def _formula(cls, v: str) -> str:
        try:
            parse_formula(v)  # the language; its names are checked against the guidelines by validate
        except FormulaError as exc:
            raise ValueError(str(exc)) from None
        return v


class NamedScore(TargetScore):
    """One of several declared scores (target.yaml ``scores``): a name, and whether it is the
    headline the leaderboard ranks by (exactly one is); its label defaults to its name."""

    name: Annotated[str, AfterValidator(lambda v: snake(v, "score name"))]
    headline: bool = False

    @model_validator(mode="before")
    @classmethod
    def _label(cls, data: Any) -> Any:
        if isinstance(data, dict) and "label" not in data and isinstance(data.get("name"), str):
            return {**data, "label": data["name"]}
        return data

    def headline_score(self) -> TargetScore:
        return TargetScore(formula=self.formula, label=self.label, higher_is_better=self.higher_is_better)


def _named_scores(v: list[NamedScore] | None) -> list[NamedScore] | None:
    """Several scores: at least one, names unique, exactly one headline."""
    if v is None:
        return v
    if not v:
        raise ValueError("scores must list at least one score (or leave scores out)")
    problems: list[tuple[tuple[Any, ...], str]] = []
    first: dict[str, int] = {}
    for i, sc in enumerate(v):
        if sc.name in first:
            problems.append(((i, "name"), f"duplicate score name '{sc.name}' (scores {first[sc.name]} and {i})"))
        first.setdefault(sc.name, i)
    heads = [i for i, sc in enumerate(v) if sc.headline]
    if len(heads) != 1:
        where: tuple[Any, ...] = (heads[1], "headline") if heads else ()
        problems.append((where, f"exactly one score must be the headline (headline: true), not {len(heads)}"))
    raise_problems(problems)
    return v


class TargetManifest(BaseModel):
    """``target.yaml``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: Annotated[str, AfterValidator(_name)]
    version: Annotated[str, AfterValidator(_text)]
    description: Annotated[str, AfterValidator(_text)]
    profiles: str | None = None
    turns: int = Field(DEFAULT_TURNS, ge=1)
    sessions: int = Field(1, ge=1, le=MAX_SESSIONS)  # per conversation; > 1 needs prompts.memory, prompts.next_session
    opening_line: str = OPENING_LINE  # "": the patient model writes the first message
    patient_can_end: str | None = Field(None, min_length=1)  # a patient turn holding it ends the session
    # True: a member counts with the units (replies, judge samples, sessions) that were judged, the
    # others left out; coverage and the refusal rate are reported beside every figure (docs/judging.md)
    partial_judging: bool = False
    first_session: FirstSession = Field(default_factory=lambda: FirstSession())  # sessions > 1: session 1's texts
    # sessions > 1: the next-session step answers JSON with these fields (each ${situation_<name>});
    # situation_opening: the field whose text is the patient's first turn of the next session, verbatim
    situation_fields: list[Annotated[str, AfterValidator(_name)]] | None = Field(None, min_length=1)
    situation_opening: str | None = None
    schedule: Schedule | None = None  # seeded per-member, per-session draws: ${schedule_<name>} (mindeval.schedule)
    memory: MemorySpec | None = None  # sessions > 1: who writes the memory, who reads it, its bound (records.memory)
    roles: TargetRoles = Field(default_factory=lambda: TargetRoles())
    reply_format: Literal["output_format", "template"] = "output_format"  # template: the judge prompt writes it
    prompts: TargetPrompts
    guidelines: str
    labels: TargetLabels | None = None
    rank_by: Literal["average", "harm_share", "all_best"] = "average"  # the leaderboard's ranking metric
    score: TargetScore | None = None  # a declared headline score over the reported quantities
    # Several named scores (instead of score): one headline ranks, the others are reported beside it.
    scores: Annotated[list[NamedScore] | None, AfterValidator(_named_scores)] = None
    # Pinned compatibility (the built-in mindeval target only): its runs' files carry no target
    # fields (no config.json block, no summary "target"), its leaderboard has MindEval's own
    # title, so they stay byte-identical to those of the code before targets.
    legacy_files: bool = False
    # The authors' data release is in this target's form (MindEval's five axes and nine human
    # sub-axes): their judge (--judge-protocol paper, --transcript-format authors), few-shot
    # examples from their ratings, and their criterion mapping for human ratings apply.
    authors_release: bool = False

    @model_validator(mode="after")
    def _situation_opening(self) -> TargetManifest:
        fields = self.situation_fields or []
        if len(set(fields)) != len(fields):
            raise Problems([(("situation_fields",), "each situation field may be listed once")])
        if self.situation_opening is not None and self.situation_opening not in fields:
            raise Problems([(("situation_opening",), f"must be one of situation_fields ({', '.join(fields) or 'none'})")])
        return self

    @model_validator(mode="after")
    def _one_score_field(self) -> TargetManifest:
        if self.score is not None and self.scores is not None:
            raise Problems([(("scores",), "give either score (the single headline) or scores (several, "
                                          "one with headline: true), not both")])
        return self

    def headline(self) -> TargetScore | None:
        """The declared headline score: ``score``, or the one of ``scores`` marked headline."""
        if self.scores:
            return next(sc for sc in self.scores if sc.headline).headline_score()
        return self.score

    def declared(self) -> list[tuple[str, TargetScore]]:
        """Every declared formula with its target.yaml location (``score`` or ``scores.N``)."""
        if self.scores:
            return [(f"scores.{i}", sc) for i, sc in enumerate(self.scores)]
        return [("score", self.score)] if self.score is not None else []


def builtin_names() -> list[str]:
    return sorted(p.parent.name for p in targets_dir().glob(f"*/{MANIFEST}"))


def manifest_path(ref: str | Path) -> Path:
    """``NAME`` of a built-in target, else a folder or its ``target.yaml``."""
    text = str(ref)
    if SNAKE_CASE.match(text):
        builtin = targets_dir() / text / MANIFEST
        if builtin.is_file():
            return builtin
    p = Path(ref)
    if p.is_dir():
        p = p / MANIFEST
    if not p.is_file():
        raise MindEvalError(
            f"no target '{text}': not a built-in target ({', '.join(builtin_names())}) "
            f"nor a folder holding {MANIFEST}", field="--target")
    return p


def read_manifest(path: Path) -> tuple[dict[str, Any] | None, str, list[MindEvalError]]:
    """The manifest's YAML mapping and text, or the problem reading it."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return None, "", [MindEvalError(f"cannot read the manifest: {exc}", path=path)]
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        return None, text, [MindEvalError(f"invalid YAML: {getattr(exc, 'problem', None) or exc}", path=path,
                                          line=mark.line + 1 if mark is not None else None, field="yaml")]
    if not isinstance(data, dict):
        return None, text, [MindEvalError("the manifest must be a YAML mapping", path=path, line=1)]
    return data, text, []


def parse_manifest(path: Path) -> tuple[TargetManifest | None, list[MindEvalError]]:
    data, text, problems = read_manifest(path)
    if data is None:
        return None, problems
    try:
        return TargetManifest.model_validate(data), []
    except ValidationError as exc:
        return None, validation_problems(exc, path, text)


def files_only(path: Path, problems: list[MindEvalError]) -> TargetManifest | None:
    """A manifest with problems elsewhere whose file fields are valid: enough to check the files too."""
    files = {"prompts", "guidelines", "profiles"}
    if any((p.field or "yaml").split(".")[0] in files | {"yaml"} for p in problems):
        return None
    data, _, _ = read_manifest(path)
    if data is None:
        return None
    bad = {(p.field or "").split(".")[0] for p in problems} - {"labels", "score", "scores"}
    data = {k: v for k, v in data.items() if k not in bad}  # a field with its own problem keeps its default
    labels = data.get("labels")
    if labels is not None and not labels_bad(problems):
        labels = TargetLabels.model_validate(labels)
    elif isinstance(labels, dict) and isinstance(labels.get("fields"), dict):
        # Its own problems are reported: the templates' other fields are still checked.
        names = [str(k) for k in labels["fields"]]
        labels = TargetLabels.model_construct(file="", fields=dict.fromkeys(names, []),
                                              visible_to=dict.fromkeys(names, list(TARGET_ROLES)))
    else:
        labels = None
    try:  # its own problems are reported: the formula's names are checked only when it parses
        score = TargetScore.model_validate(data["score"]) if data.get("score") is not None else None
    except ValidationError:
        score = None
    try:
        scores = _named_scores([NamedScore.model_validate(x) for x in data["scores"]]) if data.get("scores") else None
    except (ValidationError, ValueError, TypeError):
        scores = None
    first = FirstSession.model_validate(data.get("first_session") or {})  # a bad one was dropped above
    return TargetManifest.model_construct(**{**data, "prompts": TargetPrompts(**data["prompts"]), "labels": labels,
                                             "score": None if scores else score, "scores": scores,
                                             "first_session": first})


def labels_bad(problems: list[MindEvalError]) -> bool:
    return any((p.field or "").split(".")[0] == "labels" for p in problems)
