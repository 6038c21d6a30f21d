"""A run's target as its files record it (the ``target`` block of ``config.json``: axes, scale,
levels, declared score) and the one rule for judge scores against it (:func:`check_scores`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, model_serializer

from .io import _FieldError
from .memory import MemorySpec

AXES: tuple[str, ...] = ("CAC", "EPC", "AR", "TRA", "ASCQ")
DEFAULT_TARGET = "mindeval"  # the built-in MindEval benchmark; its records carry no target fields
DEFAULT_ROLES: dict[str, str] = {"patient": "Member", "clinician": "Therapist"}  # transcript labels

Role = Literal["patient", "clinician"]
# The model roles of a benchmark run (each has a model and a prompt).
ROLES: tuple[str, ...] = ("patient", "clinician", "judge")

ParseStatus = Literal["ok", "failed"]
# Judge protocols: "mindeval" scores are whole numbers; "paper" (the authors' own
# examples) may be fractional.
PROTOCOLS = ("mindeval", "paper")
# How the judge sees the transcript: "mindeval" (hardened, answer code) or "authors" (the
# user's copy of the authors' template, their tags and first-match reading: forgeable).
TRANSCRIPT_FORMATS = ("mindeval", "authors")


class LevelInfo(BaseModel):
    """One level of a target's scale as recorded in ``config.json``."""

    id: str
    label: str
    value: int
    harm: bool = False


class ScaleInfo(BaseModel):
    """A target's scale as recorded in ``config.json`` (``min``/``max`` for ordinal scales)."""

    kind: Literal["ordinal", "categorical"] = "ordinal"
    min: int | None = None
    max: int | None = None
    levels: list[LevelInfo] = Field(default_factory=list)

    @model_serializer(mode="wrap")
    def _serialize(self, handler: Any) -> dict[str, Any]:
        return {k: v for k, v in handler(self).items() if v is not None}


class ScoreInfo(BaseModel):
    """A target's declared headline score as recorded in ``config.json`` (target.yaml ``score``)."""

    formula: str
    label: str = "Score"
    higher_is_better: bool = True
    weights: dict[str, float] | None = None  # per level id, when the scale has weights


class NamedScoreInfo(BaseModel):
    """One of a target's several declared scores (target.yaml ``scores``) as recorded in ``config.json``."""

    name: str
    formula: str
    label: str = "Score"
    higher_is_better: bool = True
    headline: bool = False


class TargetInfo(BaseModel):
    """The ``target`` block of a run's ``config.json``: what every reader needs to know of the
    target from the run directory alone (older MindEval files have none: mindeval.rundir adds it)."""

    name: str
    version: str = ""
    sha256: str = ""
    axes: list[str]
    scale: ScaleInfo = Field(default_factory=ScaleInfo)
    not_relevant: list[str] = Field(default_factory=list)  # axes the judge may rate "not relevant" (None)
    question_mode: str | None = None  # item-level rubric: "together" | "one_by_one"
    questions: dict[str, list[str]] = Field(default_factory=dict)  # question ids per question axis
    unit: str = "conversation"  # what one judgment rates: conversation | reply | question
    reply_scale: dict[str, Any] | None = None  # unit reply: ScaleSpec (levels best to worst, weights, flags)
    points: dict[str, float] = Field(default_factory=dict)  # point_criteria: points per criterion id
    labels: dict[str, list[str]] = Field(default_factory=dict)  # profile label fields and their values
    profile_labels: dict[str, dict[str, str]] = Field(default_factory=dict)  # profile id -> label -> value
    rank_by: str = "average"  # the leaderboard's ranking metric (average | harm_share | all_best)
    roles: dict[str, str] = Field(default_factory=lambda: dict(DEFAULT_ROLES))  # transcript labels
    legacy_files: bool = False  # rows and summary carry no target fields (MindEval's, pinned: identity_view)
    score: ScoreInfo | None = None  # the declared headline score (the leaderboard ranks by it)
    scores: list[NamedScoreInfo] = Field(default_factory=list)  # several named scores (one is the headline)
    sessions: int = 1  # sessions per conversation (> 1: a memory step between them)
    patient_can_end: str | None = None  # a patient turn holding this marker ends its session (conversation)
    partial_judging: bool = False  # every judged unit counts (mindeval.scoring.scorer); recorded only when True
    # sessions > 1: session 1's situation and notes as used, each a text or {"field": profile field}
    first_session: dict[str, Any] | None = None
    situation_fields: list[str] | None = None  # sessions > 1: the next-session step's JSON fields
    situation_opening: str | None = None  # the field that opens the next session, verbatim
    schedule: dict[str, dict[str, Any]] | None = None  # target.yaml schedule: the declared draws (mindeval.schedule)
    memory: MemorySpec | None = None  # sessions > 1, declared only: who writes and reads the memory, its bound

    def speakers(self) -> dict[str, str]:
        """The transcript's speaker label per message role (user = patient)."""
        return {"user": self.roles["patient"], "assistant": self.roles["clinician"]}

    @model_serializer(mode="wrap")
    def _serialize(self, handler: Any) -> dict[str, Any]:
        data = handler(self)
        for key in ("not_relevant", "question_mode", "questions", "labels", "profile_labels", "reply_scale", "points",
                    "scores"):
            if not data.get(key):
                data.pop(key, None)
        if data.get("unit") == "conversation":
            data.pop("unit")
        if data.get("rank_by") == "average":
            data.pop("rank_by")
        if data.get("roles") == DEFAULT_ROLES:
            data.pop("roles")
        if not data.get("legacy_files"):
            data.pop("legacy_files", None)
        if data.get("sessions") == 1:
            data.pop("sessions")
        if data.get("patient_can_end") is None:
            data.pop("patient_can_end", None)
        if not data.get("partial_judging"):
            data.pop("partial_judging", None)
        for key in ("first_session", "situation_fields", "situation_opening", "schedule", "memory"):
            if data.get(key) is None:
                data.pop(key, None)
        if data.get("score") is None:
            data.pop("score", None)
        elif data["score"].get("weights") is None:
            data["score"].pop("weights", None)
        return data

    def values(self) -> tuple[int, ...]:
        """The numbers a score may take."""
        return tuple(lv.value for lv in self.scale.levels)

    @property
    def harm_values(self) -> tuple[int, ...]:
        return tuple(lv.value for lv in self.scale.levels if lv.harm)


def identity_view(config: dict[str, Any]) -> dict[str, Any]:
    """A run configuration (as JSON) without its target block when that target declares
    ``legacy_files`` (MindEval): its runs were identified before run directories carried their
    target, so hashes and the conversations a run shares stay those of earlier versions."""
    block = config.get("target")
    if isinstance(block, dict) and block.get("legacy_files"):
        return {k: v for k, v in config.items() if k != "target"}
    return config


def check_scores(scores: Any, target: TargetInfo, protocol: str = "mindeval") -> dict[str, int | float | None]:
    """The one rule for judge scores against a run's target block, used by every writer and reader.

    Exactly the target's axes; on an ordinal scale each a number from its lowest to its
    highest value (MindEval: 1-6), a whole number unless the judgment's protocol is
    ``"paper"``; on a categorical scale one of its values; ``None`` ("not relevant") only on
    the axes that allow it. Whole floats (``3.0``) become ints.
    """
    axes = tuple(target.axes)
    if not isinstance(scores, dict):
        raise _FieldError("scores must be an object with one score per axis", "scores")
    if set(scores) != set(axes) or not axes:
        raise _FieldError(f"scores must have exactly the axes {', '.join(axes)}", "scores")
    values = target.values()
    out: dict[str, int | float | None] = {}
    for ax in axes:
        v = scores[ax]
        if v is None and ax in target.not_relevant:
            out[ax] = None
        elif target.scale.kind == "categorical":
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not float(v).is_integer() \
                    or int(v) not in values:
                raise _FieldError(f"score {v!r} is not one of {', '.join(map(str, values))}", f"scores.{ax}")
            out[ax] = int(v)
        else:
            out[ax] = _ordinal(v, ax, protocol, min(values), max(values))
    return out


def _ordinal(v: Any, ax: str, protocol: str, lo: int, hi: int) -> int | float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not lo <= v <= hi:
        raise _FieldError(f"score {v!r} is not a number from {lo} to {hi}", f"scores.{ax}")
    return _whole(v, ax, protocol)


def _whole(v: int | float, ax: str, protocol: str) -> int | float:
    if float(v).is_integer():
        return int(v)
    if protocol != "paper":
        raise _FieldError(f"score {v!r} is not a whole number (fractional scores need protocol 'paper')",
                          f"scores.{ax}")
    return v


def plain_scores(scores: Any, protocol: str) -> dict[str, int | float | None]:
    """What a judgment's scores are before they meet their run's target (:func:`check_scores`):
    an object of numbers or ``None``, whole unless the protocol is ``"paper"``."""
    if not isinstance(scores, dict):
        raise _FieldError("scores must be an object with one score per axis", "scores")
    out: dict[str, int | float | None] = {}
    for ax, v in scores.items():
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
            raise _FieldError(f"score {v!r} is not a number", f"scores.{ax}")
        out[ax] = None if v is None else _whole(v, ax, protocol)
    return out
