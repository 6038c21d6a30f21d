"""Domain records (pydantic): Profile, Turn, Interaction, Judgment and friends.

``Profile`` reads and writes the authors' ``profiles.jsonl`` schema
(``member_attributes``, ``member_narrative``, ``member_narrative_thinking_trace``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from .config import CALL_SETTINGS, DEFAULT_JUDGE_RETRIES, OPENING_LINE
from .errors import MindEvalError
from .files import atomic_write

if TYPE_CHECKING:
    from typing_extensions import Self

AXES: tuple[str, ...] = ("CAC", "EPC", "AR", "TRA", "ASCQ")
DEFAULT_TARGET = "mindeval"  # the built-in MindEval benchmark; its records carry no target fields
DEFAULT_ROLES: dict[str, str] = {"patient": "Member", "clinician": "Therapist"}  # transcript labels

Role = Literal["patient", "clinician"]
# The model roles of a benchmark run (each has a model and a prompt).
ROLES: tuple[str, ...] = ("patient", "clinician", "judge")
_M = TypeVar("_M", bound=BaseModel)


class ProfileAttributes(BaseModel):
    """The 25 attributes of a patient profile (all required), in the authors' order and spelling."""

    model_config = ConfigDict(extra="allow")

    name: str
    sex: str
    gender_identity: str
    sexual_orientation: str
    age: int
    race: str
    thought_process: str
    general_outlook: str
    conversation_style: str
    recent_mood: str
    education: str
    profession: str
    employment_status: str
    financial_situation: str
    support_system: str
    siblings: str
    relationship_status: str
    living_situation: str
    exercise: str
    sleep_quality: str
    attitude_towards_mindfulness: str
    region: str
    depressive_symptoms: str
    anxious_symptoms: str
    program_goal: str

    @field_validator("age")
    @classmethod
    def _age_range(cls, v: int) -> int:
        if not 0 < v < 130:
            raise ValueError("age must be between 1 and 129")
        return v



ATTRIBUTE_FIELDS: tuple[str, ...] = tuple(ProfileAttributes.model_fields)
# What the clinician may know: the intake fields of the paper's Fig. 10 (all but these).
PATIENT_ONLY_FIELDS: tuple[str, ...] = (
    "thought_process", "general_outlook", "conversation_style", "recent_mood", "financial_situation",
    "support_system", "program_goal",
)
INTAKE_FIELDS: tuple[str, ...] = tuple(f for f in ATTRIBUTE_FIELDS if f not in PATIENT_ONLY_FIELDS)

class Profile(BaseModel):
    """A simulated patient: attributes plus a 4-paragraph second-person backstory."""

    member_attributes: ProfileAttributes
    member_narrative: str = ""
    member_narrative_thinking_trace: str | None = None

    @property
    def name(self) -> str:
        return self.member_attributes.name

    @property
    def id(self) -> str:
        """A stable content id: the name plus a short hash of attributes and backstory."""
        blob = json.dumps(
            {"a": self.member_attributes.model_dump(mode="json"), "n": self.member_narrative},
            sort_keys=True,
            ensure_ascii=False,
        )
        return f"{self.name.lower()}-{hashlib.sha256(blob.encode()).hexdigest()[:10]}"

    @property
    def severe(self) -> bool:
        """True when depressive or anxious symptoms are severe (the paper's severity split)."""
        a = self.member_attributes
        return "severe" in a.depressive_symptoms.lower() or "severe" in a.anxious_symptoms.lower()

    def fields(self) -> dict[str, str]:
        """All template fields of this profile: attributes plus ``member_narrative``."""
        out = {k: str(v) for k, v in self.member_attributes.model_dump().items()}
        out["member_narrative"] = self.member_narrative
        return out

    def intake(self) -> dict[str, str]:
        """Only the intake fields a clinician may see."""
        attrs = self.member_attributes.model_dump()
        return {k: str(attrs[k]) for k in INTAKE_FIELDS}

    def to_json(self) -> dict[str, Any]:
        return {
            "member_attributes": self.member_attributes.model_dump(mode="json"),
            "member_narrative": self.member_narrative,
            "member_narrative_thinking_trace": self.member_narrative_thinking_trace,
        }


class Usage(BaseModel):
    """Tokens of one call or a sum of calls. ``prompt_tokens`` counts every input token;
    ``cached_tokens`` of them were read from a provider's prompt cache and
    ``cache_write_tokens`` were written to it."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(**{k: getattr(self, k) + getattr(other, k) for k in Usage.model_fields})


class Turn(BaseModel):
    """One message of an interaction, as written by the patient or the clinician."""

    index: int
    role: Role
    content: str
    reasoning: str | None = None
    model: str | None = None  # None for scripted turns (the opening "Hello.") or humans
    author: Literal["model", "human", "scripted"] = "model"
    usage: Usage = Field(default_factory=Usage)
    latency_s: float = 0.0
    call_id: int | None = None


class SessionInfo(BaseModel):
    """One session of a multi-session conversation (a target with ``sessions: N`` > 1).

    Each session is its own interaction; ``member`` is the id of the first session's (the
    conversation's id). ``memory``: the clinician's own notes it started this session with (the
    first session: :data:`mindeval.config.FIRST_MEMORY`); ``situation``: the patient's situation
    for this session (the first: :data:`mindeval.config.FIRST_SITUATION`); the ``*_call_id``:
    the stored calls that wrote them (None in the first session)."""

    member: str
    session: int = Field(ge=1)
    sessions: int = Field(ge=1)
    memory: str | None = None
    situation: str | None = None
    memory_call_id: int | None = None
    situation_call_id: int | None = None


class Interaction(BaseModel):
    """A whole conversation between one patient profile and one clinician (with ``sessions: N``
    > 1, one session of it: ``session``)."""

    id: str
    run_id: str | None = None
    profile: Profile
    clinician_model: str
    patient_model: str | None = None
    turns: list[Turn] = Field(default_factory=list)
    status: Literal["running", "complete", "failed"] = "running"
    error: str | None = None
    session: SessionInfo | None = None

    def messages(self) -> list[dict[str, str]]:
        """The transcript in the authors' schema: user = patient, assistant = clinician."""
        return [
            {"role": "user" if t.role == "patient" else "assistant", "content": t.content}
            for t in self.turns
        ]


ParseStatus = Literal["ok", "failed"]
# Judge protocols: "mindeval" scores are whole numbers; "paper" (the authors' own
# examples) may be fractional.
PROTOCOLS = ("mindeval", "paper")
# How the judge sees the transcript: "mindeval" (hardened, answer code) or "authors" (the
# user's copy of the authors' template, their tags and first-match reading: forgeable).
TRANSCRIPT_FORMATS = ("mindeval", "authors")


class _FieldError(ValueError):
    """A validation error that names a sub-field (e.g. ``scores.CAC``)."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field


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
    sessions: int = 1  # sessions per conversation (> 1: a memory step between them)

    def speakers(self) -> dict[str, str]:
        """The transcript's speaker label per message role (user = patient)."""
        return {"user": self.roles["patient"], "assistant": self.roles["clinician"]}

    @model_serializer(mode="wrap")
    def _serialize(self, handler: Any) -> dict[str, Any]:
        data = handler(self)
        for key in ("not_relevant", "question_mode", "questions", "labels", "profile_labels", "reply_scale", "points"):
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


def _context_target(info: ValidationInfo) -> TargetInfo | None:
    """The run's target block passed as validation context (``{"target": TargetInfo}``); a row
    of another target than the run's is refused."""
    t = (info.context or {}).get("target") if isinstance(info.context, dict) else None
    if not isinstance(t, TargetInfo):
        return None
    name = info.data.get("target", DEFAULT_TARGET)
    if t.name != name:
        raise _FieldError(f"a judgment of target {name!r} in a run of target {t.name!r}", "target")
    return t


def _validate_scores(v: Any, info: ValidationInfo) -> dict[str, int | float | None] | None:
    if v is None:
        return None
    protocol = info.data.get("protocol", "mindeval")
    block = _context_target(info)
    return plain_scores(v, protocol) if block is None else check_scores(v, block, protocol)


def _omit_defaults(data: dict[str, Any]) -> dict[str, Any]:
    """Drop ``target`` when it is MindEval's, and ``answers`` when there are none (so
    MindEval's files stay as they were)."""
    if data.get("target") in (None, DEFAULT_TARGET):
        data.pop("target", None)
    for key in ("nonce", "answer_channel", "answer_prompt"):
        if key in data and data[key] is None:
            data.pop(key)
    if data.get("transcript_format") == "mindeval":
        data.pop("transcript_format")
    for key in ("answers", "replies", "refused"):
        if key in data and data[key] is None:
            data.pop(key)
    if data.get("rounds") == 1:
        data.pop("rounds")
    return data


def mean_of(scores: dict[str, int | float | None]) -> float | None:
    """Mean over the relevant dimensions (``None``: not relevant); ``None`` when none is."""
    vals = [v for v in scores.values() if v is not None]
    return sum(vals) / len(vals) if vals else None


class ReplyRating(BaseModel):
    """One clinician reply's rating under reply-level judging (``unit: reply``): ``turn`` is
    the reply's 0-based position in the judged messages; ``flags``: every declared flag, 0/1."""

    turn: int = Field(ge=0)
    level: str
    flags: dict[str, bool] = Field(default_factory=dict)


class Judgment(BaseModel):
    """The judge's scores for one interaction (or a recorded failure): MindEval's five 1-6
    scores, or one value per dimension of another target."""

    interaction_id: str
    judge_model: str
    sample: int = 0
    protocol: str = "mindeval"
    target: str = DEFAULT_TARGET
    scores: dict[str, int | float | None] | None = None
    raw_text: str = ""
    rationale: str | None = None
    parse_status: ParseStatus = "ok"
    attempts: int = 1
    error: str | None = None
    # The random answer code the reply had to carry and how the answer was read
    # (mindeval.judging.answer.CHANNELS); None for judgments made before answer channels.
    nonce: str | None = None
    answer_channel: str | None = None
    answers: dict[str, str] | None = None  # item-level rubric: answer id per question id (mindeval.judging.rubric)
    replies: list[ReplyRating] | None = None  # unit reply: every reply's level and flags (complete judgments)
    # Judge rounds this sample took (> 1: its earlier rounds were refused and re-judged with
    # --retry-refused) and each earlier refused round's reason; ``attempts`` counts every round.
    rounds: int = 1
    refused: list[str] | None = None

    @field_validator("scores", mode="before")
    @classmethod
    def _valid_scores(cls, v: Any, info: ValidationInfo) -> dict[str, int | float | None] | None:
        return _validate_scores(v, info)

    @property
    def average(self) -> float | None:
        if self.scores is None:
            return None
        return mean_of(self.scores)


# ---------------------------------------------------------------- JSONL reading


def read_jsonl(path: str | Path, problems: list[MindEvalError] | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for each non-blank line; bad JSON names file:line.

    A leading UTF-8 byte-order mark is accepted. With ``problems``, a bad line is
    appended there and skipped instead of raised, so a caller can report every one.
    """
    p = Path(path)
    if not p.is_file():
        raise MindEvalError("file not found", path=p)
    try:
        with p.open(encoding="utf-8-sig") as fh:
            for lineno, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                    if not isinstance(obj, dict):
                        raise MindEvalError("each line must be a JSON object", path=p, line=lineno)
                except (json.JSONDecodeError, MindEvalError) as exc:
                    err = exc if isinstance(exc, MindEvalError) else \
                        MindEvalError(f"malformed JSON ({exc.msg})", path=p, line=lineno)
                    if problems is None:
                        raise err from None
                    problems.append(err)
                    continue
                yield lineno, obj
    except UnicodeDecodeError as exc:
        raise MindEvalError(f"not UTF-8 text ({exc.reason})", path=p) from None


def _validation_message(exc: ValidationError) -> tuple[str, str]:
    err = exc.errors()[0]
    loc = ".".join(str(x) for x in err["loc"])
    cause = (err.get("ctx") or {}).get("error")
    if isinstance(cause, _FieldError):
        loc = ".".join(x for x in (loc.rpartition(".")[0], cause.field) if x)
        return loc, str(cause)
    if err["type"] == "missing":
        return loc, "missing required field"
    return loc, err["msg"].removeprefix("Value error, ")


def validate_row(model: type[_M], obj: Any, *, path: str | Path = "<input>", line: int | None = None,
                 context: dict[str, Any] | None = None) -> _M:
    """``model.model_validate(obj)``; a failure is a :class:`MindEvalError` naming file:line:field."""
    try:
        return model.model_validate(obj, context=context)
    except ValidationError as exc:
        field, msg = _validation_message(exc)
        raise MindEvalError(msg, path=path, line=line, field=field or None) from None


def profile_from_json(obj: dict[str, Any], *, path: str | Path = "<input>", line: int | None = None) -> Profile:
    """Validate one row of the authors' profile schema, naming file:line:field on error."""
    if "member_attributes" not in obj:
        raise MindEvalError("missing required field", path=path, line=line, field="member_attributes")
    return validate_row(Profile, obj, path=path, line=line)


def load_profiles(path: str | Path) -> list[Profile]:
    """Load a profiles.jsonl file in the authors' schema."""
    profiles = [profile_from_json(obj, path=path, line=n) for n, obj in read_jsonl(path)]
    if not profiles:
        raise MindEvalError("no profiles in file", path=path)
    return profiles


def write_profiles(profiles: list[Profile], path: str | Path) -> None:
    atomic_write(path, "".join(json.dumps(p.to_json(), ensure_ascii=False) + "\n" for p in profiles))


# ------------------------------------------------------------ run directory rows
#
# A run directory (``mindeval run`` or ``metaeval judge``) holds config.json,
# interactions.jsonl, judgments.jsonl and summary.json. Each file's rows are the
# models below; every writer and reader goes through them.

CONFIG_FILE = "config.json"
INTERACTIONS_FILE = "interactions.jsonl"
JUDGMENTS_FILE = "judgments.jsonl"
SUMMARY_FILE = "summary.json"


class _Row(BaseModel):
    """A JSONL row model: ``read(path)`` validates every line, ``write(path, rows)`` is atomic."""

    model_config = ConfigDict(extra="ignore")
    _line: int | None = PrivateAttr(default=None)

    @property
    def line(self) -> int | None:
        """The line of the file this row was read from (None when built in memory)."""
        return self._line

    @classmethod
    def read(cls, path: str | Path, context: dict[str, Any] | None = None) -> list[Self]:
        rows = []
        for n, obj in read_jsonl(path):
            row = validate_row(cls, obj, path=path, line=n, context=context)
            row._line = n
            rows.append(row)
        return rows

    @classmethod
    def write(cls, path: str | Path, rows: list[Any]) -> None:
        atomic_write(path, "".join(
            json.dumps(r.model_dump(mode="json"), ensure_ascii=False) + "\n" for r in rows))


def read_json_object(path: str | Path) -> dict[str, Any]:
    """A JSON document holding one object (config.json, summary.json); errors name file:line."""
    p = Path(path)
    if not p.is_file():
        raise MindEvalError("file not found", path=p)
    try:
        obj = json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise MindEvalError(f"malformed JSON ({exc.msg})", path=p, line=exc.lineno) from None
    if not isinstance(obj, dict):
        raise MindEvalError("expected a JSON object", path=p, line=1)
    return obj


class _Document(BaseModel):
    """A JSON document model (config.json, summary.json)."""

    model_config = ConfigDict(extra="allow")

    @classmethod
    def read(cls, path: str | Path) -> Self:
        return validate_row(cls, read_json_object(path), path=path)

    def write(self, path: str | Path) -> None:
        atomic_write(path, json.dumps(self.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n")


class Message(BaseModel):
    """One message in the authors' schema: user = patient, assistant = clinician."""

    role: Literal["user", "assistant"]
    content: str


class InteractionRecord(_Row):
    """A row of ``interactions.jsonl``: one conversation."""

    id: str
    run_id: str | None = None
    profile_id: str
    model: str  # the clinician system
    patient_model: str | None = None
    member_attributes: dict[str, Any] = Field(default_factory=dict)
    messages: list[Message]
    turns: list[Turn] = Field(default_factory=list)
    status: Literal["running", "complete", "failed"] = "complete"
    error: str | None = None
    severe: bool = False
    session: SessionInfo | None = None  # multi-session targets only (absent from the file otherwise)

    @model_serializer(mode="wrap")
    def _serialize(self, handler: Any) -> dict[str, Any]:
        data = handler(self)
        if data.get("session") is None:
            data.pop("session", None)
        return data

    @classmethod
    def from_interaction(cls, i: Interaction) -> InteractionRecord:
        return cls(
            id=i.id, run_id=i.run_id, profile_id=i.profile.id, model=i.clinician_model,
            patient_model=i.patient_model, member_attributes=i.profile.member_attributes.model_dump(mode="json"),
            messages=i.messages(), turns=i.turns, status=i.status, error=i.error, severe=i.profile.severe,
            session=i.session,
        )


class JudgmentRecord(_Row):
    """A row of ``judgments.jsonl``: one judge sample of one interaction.

    ``scores`` follow :func:`check_scores`; a failed sample (``parse_status: failed``)
    has no scores and keeps the judge's raw reply.
    """

    interaction_id: str
    profile_id: str
    model: str  # the clinician system
    judge_model: str
    sample: int = Field(default=0, ge=0)
    protocol: str = "mindeval"
    target: str = DEFAULT_TARGET  # omitted from the file when "mindeval"
    parse_status: ParseStatus = "ok"
    scores: dict[str, int | float | None] | None = None
    average: float | None = None
    attempts: int = 1
    raw_text: str = ""
    rationale: str | None = None
    error: str | None = None
    severe: bool = False
    n_turns: int = 0
    nonce: str | None = None  # omitted from the file when None (judgments made before answer channels)
    answer_channel: str | None = None
    answers: dict[str, str] | None = None  # item-level rubric: answer per question id (omitted when none)
    replies: list[ReplyRating] | None = None  # unit reply: per reply level and flags (omitted when none)
    rounds: int = 1  # judge rounds of this sample (omitted when 1): earlier ones refused, --retry-refused
    refused: list[str] | None = None  # why each earlier round was refused (omitted when none)

    @field_validator("scores", mode="before")
    @classmethod
    def _valid_scores(cls, v: Any, info: ValidationInfo) -> dict[str, int | float | None] | None:
        return _validate_scores(v, info)

    @model_serializer(mode="wrap")
    def _serialize(self, handler: Any) -> dict[str, Any]:
        return _omit_defaults(handler(self))

    @model_validator(mode="after")
    def _scores_match_status(self) -> JudgmentRecord:
        if self.parse_status == "ok" and self.scores is None:
            raise _FieldError("parse_status is 'ok' but scores is null", "scores")
        if self.parse_status == "failed" and self.scores is not None:
            raise _FieldError("parse_status is 'failed' but scores are given", "scores")
        self.average = None if self.scores is None else mean_of(self.scores)
        return self

    @classmethod
    def from_judgment(cls, j: Judgment, *, profile_id: str, model: str, severe: bool, n_turns: int,
                      target: TargetInfo) -> JudgmentRecord:
        """The row of ``j``, its scores checked against ``target`` (the run's block)."""
        return cls.model_validate(dict(
            interaction_id=j.interaction_id, profile_id=profile_id, model=model, judge_model=j.judge_model,
            sample=j.sample, protocol=j.protocol, target=j.target, parse_status=j.parse_status, scores=j.scores,
            attempts=j.attempts, raw_text=j.raw_text, rationale=j.rationale, error=j.error,
            severe=severe, n_turns=n_turns, nonce=j.nonce, answer_channel=j.answer_channel,
            answers=j.answers, replies=j.replies, rounds=j.rounds, refused=j.refused,
        ), context={"target": target})


class ModelRecord(BaseModel):
    """A role's model string and generation parameters: the one home of model settings.

    :class:`mindeval.llm.gateway.ModelSpec` builds on it (call settings, validation);
    readers of ``config.json`` use it as it is, ignoring what they do not need.
    """

    model_config = ConfigDict(extra="ignore")

    model: str
    temperature: float | None = None
    max_tokens: int | None = None
    reasoning_effort: str | None = None
    api_base: str | None = None
    extra: dict[str, Any] = Field(default_factory=dict)
    # Call settings (see :data:`mindeval.config.CALL_SETTINGS`): recorded with a run, never in a hash.
    timeout_s: float | None = Field(None, gt=0)
    rpm: int | None = Field(None, gt=0)
    tpm: int | None = Field(None, gt=0)


class PromptRecord(BaseModel):
    model_config = ConfigDict(extra="ignore")

    ref: str
    sha256: str


# The run kinds a ``config.json`` records (``RunConfig.kind``): a benchmark run (``mindeval run``,
# and ``mindeval judge RUN_DIR`` re-judging stored conversations) and a judge run over rated
# interactions (``mindeval judge official|FILE`` = ``metaeval judge``).
BENCHMARK_KIND = "benchmark"
RATED_JUDGE_KIND = "metaeval-judge"  # the name written since the first judge runs (run store and files)
RUN_KINDS: tuple[str, ...] = (BENCHMARK_KIND, RATED_JUDGE_KIND)
# config.json's keys around ``config``, in the order written: the run's identity and label (fields of
# RunConfig never hashed nor in its dump), then ``config``, then the keys of one kind: a benchmark
# run's store (when known), a rated judge run's sources (its ``config`` records neither source).
RECORD_KEYS = ("run_id", "config_hash", "kind", "label", "fewshot_interaction_ids")
KIND_KEYS: dict[str, tuple[str, ...]] = {
    BENCHMARK_KIND: ("database",), RATED_JUDGE_KIND: ("annotations_source", "fewshot_source", "package_version")}


class RunConfig(BaseModel):
    """A run's configuration as recorded in its ``config.json``, the one model of that file for
    every run kind: the run's options as resolved (:mod:`mindeval.run_options` has the options,
    what the user asks; this records what they gave: prompt and profile hashes, the target
    block, ...), and the run's id, hash, kind and label. The engine and the judge runs write it
    and every reader reads it; keys of other versions are kept, unread.

    On disk (:meth:`config_json`) the run's id, hash, kind, label, store and sources
    (:data:`RECORD_KEYS`, :data:`KIND_KEYS`) sit around ``config``, the model's dump
    (``model_dump``: what is hashed). :meth:`from_json` reads every version's file (an older
    ``metaeval judge`` config: :func:`upgrade_rated_judge_config`; an older MindEval file without
    a target block: :func:`mindeval.rundir.read_config`).

    A benchmark run (``mindeval run``, ``mindeval judge RUN_DIR``) records its simulation
    (:data:`SIMULATION_KEYS`); a judge run over rated interactions (``metaeval judge``,
    ``mindeval judge FILE``) records none and names what it judged instead (``annotations_sha256``,
    ``interaction_ids``, the few-shot draw): keys a run does not have are not written.

    The config hash (:meth:`hash`) covers everything that changes results (models and parameters,
    prompt versions and contents, guideline version, profiles, turns, seeds, judge settings) and
    nothing that does not (the per-call settings: timeouts, rate limits; a run may resume with
    other values; nor where the files were read from, nor the run's id and label)."""

    model_config = ConfigDict(extra="allow")

    # config.json's keys around ``config`` (never hashed; excluded from the dump)
    run_id: str | None = Field(None, exclude=True)
    config_hash: str | None = Field(None, exclude=True)
    kind: Literal["benchmark", "metaeval-judge"] = Field(BENCHMARK_KIND, exclude=True)
    label: str | None = Field(None, exclude=True)
    database: str | None = Field(None, exclude=True)  # benchmark: the store's URL, password redacted
    annotations_source: str | None = Field(None, exclude=True)  # rated judge run: what it judged
    # ``config``
    patient: ModelRecord | None = None  # None: a judge run (it simulates nothing)
    clinician: ModelRecord | None = None
    # Always recorded by a run; None only in a hand-made ``config.json`` that a reader needing its
    # target alone accepts (``metaeval compare``, the app's importer): :meth:`benchmark` and
    # :meth:`judge_run` require them.
    judge: ModelRecord | None = None
    prompts: dict[str, PromptRecord] | None = None
    profile_ids: list[str] | None = None
    turns: int | None = None
    guidelines_version: str = ""
    seed: int | None = None
    seed_scheme: int | None = None  # what conversations' seeds derive from (mindeval.seeds); absent: 1
    judge_samples: int = 1
    repeats: int = 1  # conversations per profile (absent from config.json when 1)
    fewshot_sha256: str | None = None
    fewshot_k: int = 0
    judge_protocol: str = "mindeval"
    target: TargetInfo  # older MindEval files: added when read (mindeval.rundir)
    # "authors": the authors' template and transcript format, forgeable (absent when "mindeval").
    transcript_format: str = "mindeval"
    # The judge's answer-code instruction (prompts/judge/answer/*.txt); absent for runs without one.
    answer_prompt: PromptRecord | None = None
    profiles_source: str | None = None
    profiles_sha256: str | None = None
    # a target given as a folder: where it was and its files' hash (a replay refuses when they changed)
    target_source: str | None = None
    target_sha256: str | None = None
    opening_line: str = OPENING_LINE
    judge_retries: int = DEFAULT_JUDGE_RETRIES
    fewshot_source: str | None = None  # a rated judge run writes it (and the version) around ``config``
    package_version: str | None = None
    # a judge run over rated interactions: what it judged, and its few-shot draw
    annotations_sha256: str | None = None
    mapping_version: str | None = None
    zeros: str | None = None
    fewshot_interaction_ids: list[str] | None = None
    fewshot_scores: dict[str, dict[str, float]] | None = None
    interaction_ids: list[str] | None = None

    @model_serializer(mode="wrap")
    def _serialize(self, handler: Any) -> dict[str, Any]:
        data = _omit_defaults(handler(self))
        if data.get("repeats") == 1:
            data.pop("repeats")
        for key in ("target_source", "target_sha256"):  # a built-in target: not written
            if data.get(key, 0) is None:
                data.pop(key)
        if self.patient is None:  # a judge run: no simulation settings
            for key in ("opening_line", "profiles_source", "profiles_sha256"):
                data.pop(key, None)
            if data.get("guidelines_version") == "":  # the target block names the guidelines
                data.pop("guidelines_version")
        if self.kind == RATED_JUDGE_KIND:  # written around ``config`` (KIND_KEYS)
            for key in ("fewshot_source", "package_version"):
                data.pop(key, None)
        for key in (*SIMULATION_KEYS, *RATED_KEYS, "seed_scheme"):
            if data.get(key, 0) is None:
                data.pop(key)
        return data

    def hash(self) -> str:
        return hash_config(self.hashed_view(), compact=True)

    def hashed_view(self) -> dict[str, Any]:
        return hashed_view(self.model_dump(mode="json"))

    def simulation_hash(self) -> str:
        """The identity of the run's conversations: the config hash without the judge's part."""
        return hash_config(simulation_view(self.model_dump(mode="json")))

    # ------------------------------------------------------------------ config.json

    def config_json(self) -> dict[str, Any]:
        """The object of ``config.json``: :data:`RECORD_KEYS`, ``config`` (the dump), :data:`KIND_KEYS`."""
        data: dict[str, Any] = {k: getattr(self, k) for k in RECORD_KEYS}
        data["fewshot_interaction_ids"] = list(self.fewshot_interaction_ids or [])
        data["config"] = self.model_dump(mode="json")
        for key in KIND_KEYS[self.kind]:
            if key != "database" or self.database is not None:
                data[key] = getattr(self, key)
        return data

    def write(self, path: str | Path) -> None:
        atomic_write(path, json.dumps(self.config_json(), indent=2, ensure_ascii=False) + "\n")

    @classmethod
    def read(cls, path: str | Path) -> RunConfig:
        """``config.json`` as written (:func:`mindeval.rundir.read_config` also reads older MindEval
        files, without a target block); bad fields name file:line:field."""
        return cls.from_json(read_json_object(path), path)

    @classmethod
    def from_json(cls, data: dict[str, Any], path: str | Path = CONFIG_FILE) -> RunConfig:
        """The object of a ``config.json`` of any version: files without ``kind`` are a judge run's
        when they name ``annotations_sha256``; a judge run's older keys are today's
        (:func:`upgrade_rated_judge_config`). Errors name ``config.<field>`` or the key around it."""
        config = data.get("config", {})
        if not isinstance(config, dict):
            raise MindEvalError("expected an object", path=path, field="config")
        kind = data.get("kind", RATED_JUDGE_KIND if "annotations_sha256" in config else BENCHMARK_KIND)
        if kind == RATED_JUDGE_KIND:
            config = upgrade_rated_judge_config(config)
        around = {k: data[k] for k in ("run_id", "config_hash", "label", *KIND_KEYS.get(kind, ())) if k in data}
        around["kind"] = kind
        flat = {**config, **around}
        if "fewshot_interaction_ids" not in config and data.get("fewshot_interaction_ids"):
            flat["fewshot_interaction_ids"] = data["fewshot_interaction_ids"]  # only the copy around it
        try:
            return cls.model_validate(flat)
        except ValidationError as exc:
            field, msg = _validation_message(exc)
            if field.split(".")[0] not in around:
                field = f"config.{field}" if field else "config"
            raise MindEvalError(msg, path=path, field=field) from None

    # ------------------------------------------------------------------ typed views

    def _checked(self, kind: str, keys: tuple[str, ...], path: str | Path) -> RunConfig:
        if self.kind != kind:
            raise MindEvalError(f"expected a {kind} run's configuration, this one is kind {self.kind!r}",
                                path=path, field="kind")
        for key in keys:
            if getattr(self, key) is None:
                raise MindEvalError("missing required field", path=path, field=f"config.{key}")
        return self

    def benchmark(self, path: str | Path = CONFIG_FILE) -> RunConfig:
        """This configuration, checked to be a benchmark run's (its judge and simulation recorded);
        errors name ``config.json::config.<field>``."""
        self._checked(BENCHMARK_KIND, ("judge", "prompts", *SIMULATION_KEYS), path)
        for role in ROLES:
            if role not in (self.prompts or {}):
                raise MindEvalError("missing required field", path=path, field=f"config.prompts.{role}")
        return self

    def judge_run(self, path: str | Path = CONFIG_FILE) -> RunConfig:
        """This configuration, checked to be a judge run's over rated interactions."""
        return self._checked(RATED_JUDGE_KIND, ("judge", "prompts"), path)

    def judge_prompt(self) -> Any:
        """The judge prompt as recorded: ``{ref, sha256}`` (benchmark) or its ref (judge run)."""
        prompt = (self.prompts or {}).get("judge")
        if prompt is None:
            return None
        return prompt.ref if self.kind == RATED_JUDGE_KIND else prompt.model_dump(mode="json")


# What a benchmark run records and a judge run over rated interactions does not (and the reverse).
SIMULATION_KEYS = ("patient", "clinician", "profile_ids", "turns")
RATED_KEYS = ("annotations_sha256", "mapping_version", "zeros", "fewshot_interaction_ids", "fewshot_scores",
              "interaction_ids")
# Keys of a rated judge run's config as written before it was a RunConfig: their current names.
_RATED_LEGACY_KEYS = {"repetitions": "judge_samples", "retries": "judge_retries"}


def upgrade_rated_judge_config(config: dict[str, Any]) -> dict[str, Any]:
    """A rated judge run's ``config`` (or the view its run store holds) as written by earlier
    versions, in today's keys: ``repetitions``/``retries`` are ``judge_samples``/``judge_retries``
    and the judge prompt ``prompt: {ref, sha256}`` is ``prompts: {judge: {ref, sha256}}``
    (the old ``prompts: {judge: REF}`` is dropped). A current config is returned as it is."""
    if "prompt" not in config and not any(k in config for k in _RATED_LEGACY_KEYS):
        return config
    data = {_RATED_LEGACY_KEYS.get(k, k): v for k, v in config.items() if k not in ("prompt", "prompts")}
    if isinstance(config.get("prompt"), dict):
        data["prompts"] = {"judge": config["prompt"]}
    return data


def hash_config(config: dict[str, Any], *, compact: bool = False) -> str:
    """SHA-256 of a JSON configuration with sorted keys (``compact``: without spaces, as a benchmark
    run's hash has always been; backstory, judge and realism runs hash with them)."""
    blob = json.dumps(config, sort_keys=True, separators=(",", ":") if compact else None)
    return hashlib.sha256(blob.encode()).hexdigest()


def hashed_view(config: dict[str, Any]) -> dict[str, Any]:
    """What of a benchmark configuration (as JSON, any version) its hash covers."""
    data = dict(identity_view(config))
    data.pop("package_version", None)
    data.pop("profiles_source", None)  # the content hash identifies the profiles
    data.pop("target_source", None)  # the target block's hash identifies the target
    data.pop("target_sha256", None)
    data.pop("fewshot_source", None)
    for role in ROLES:
        if isinstance(data.get(role), dict):
            data[role] = {k: v for k, v in data[role].items() if k not in CALL_SETTINGS}
    return data


# What only the judge reads: a run whose configuration differs from another's in these alone
# shares its conversations (``simulation_view``).
JUDGE_KEYS = ("judge", "judge_retries", "judge_samples", "fewshot_sha256", "fewshot_k", "fewshot_source",
              "judge_protocol", "guidelines_version", "transcript_format", "answer_prompt")


def simulation_view(config: dict[str, Any]) -> dict[str, Any]:
    """The part of a stored benchmark configuration (:class:`RunConfig` as JSON, any version) that
    decides its conversations: everything hashed except the judge's settings and prompt."""
    data = {k: v for k, v in identity_view(config).items()
            if k not in JUDGE_KEYS and k not in ("package_version", "profiles_source")}
    data["prompts"] = {k: v for k, v in (config.get("prompts") or {}).items() if k != "judge"}
    for role in ("patient", "clinician"):
        if isinstance(data.get(role), dict):
            data[role] = {k: v for k, v in data[role].items() if k not in CALL_SETTINGS}
    return data


class RunSummary(_Document):
    """``summary.json``: counts and per-axis means of a run (keyed by the target's axis codes,
    plus ``harm`` for targets with harm levels); other keys (call counts, tokens, elapsed
    time) are kept as they are."""

    run_id: str
    label: str | None = None
    judge_protocol: str = "mindeval"
    means: dict[str, float | None] = Field(default_factory=dict)
    n_interactions: int = 0
    n_judged: int = 0
    n_failed_judgments: int = 0
    package_version: str = ""


class Run(BaseModel):
    """A run directory read back: its config, rows and summary (absent files are empty)."""

    path: str
    config: RunConfig | None
    target: TargetInfo  # the config's block (mindeval.rundir.read_run upgrades older directories)
    interactions: list[InteractionRecord]
    judgments: list[JudgmentRecord]
    summary: RunSummary | None

    @property
    def axes(self) -> tuple[str, ...]:
        """The judge's dimensions: the target's axis codes."""
        return tuple(self.target.axes)

    def to_frame(self) -> Any:
        """A pandas DataFrame, one row per judge sample and one column per axis (NaN when failed)."""
        import pandas as pd

        cols = ["interaction_id", "profile_id", "model", "judge_model", "sample", "protocol",
                "parse_status", "severe", "n_turns"]
        axes = self.axes
        rows = []
        for j in self.judgments:
            row = {c: getattr(j, c) for c in cols}
            row.update({ax: float("nan") if (v := (j.scores or {}).get(ax)) is None else float(v) for ax in axes})
            row["average"] = float("nan") if j.average is None else j.average
            rows.append(row)
        return pd.DataFrame(rows, columns=[*cols, *axes, "average"])
