"""A conversation and its judgments (pydantic): the engine's records (:class:`Turn`,
:class:`Interaction`, :class:`Judgment`) and the rows of a run directory's files
(:class:`InteractionRecord`, :class:`JudgmentRecord`, :class:`RunSummary`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    Field,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from .io import _Document, _FieldError, _Row
from .profiles import Profile
from .target import DEFAULT_TARGET, ParseStatus, Role, TargetInfo, check_scores, plain_scores


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
    conversation's id). ``memory``: the between-session memory this session started with (the
    clinician's own notes unless the target's ``memory.writer`` says the patient; the first
    session: :data:`mindeval.config.FIRST_MEMORY`); ``situation``: the patient's situation
    for this session (the first: :data:`mindeval.config.FIRST_SITUATION`); the ``*_call_id``:
    the stored calls that wrote them (None in the first session)."""

    member: str
    session: int = Field(ge=1)
    sessions: int = Field(ge=1)
    memory: str | None = None
    situation: str | None = None
    memory_call_id: int | None = None
    situation_call_id: int | None = None
    # the target's ``schedule:`` draws of this session by name (mindeval.schedule); None: none declared
    schedule: dict[str, str] | None = None
    # the target's ``memory.max_entries``: the older entries of the writer's reply left out of
    # ``memory`` (None: no bound declared; absent from the files then)
    memory_dropped: int | None = None

    @model_serializer(mode="wrap")
    def _serialize(self, handler: Any) -> dict[str, Any]:
        data = handler(self)
        for key in ("schedule", "memory_dropped"):  # files of runs without them stay as they were
            if data.get(key) is None:
                data.pop(key, None)
        return data


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

