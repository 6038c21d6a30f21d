"""SQLAlchemy tables of benchmark runs: runs, the model-call log, interactions, turns, judgments."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Annotated

from sqlalchemy import JSON, DateTime, Float, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.schema import UniqueConstraint


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


# Column shapes shared by the run store's and the annotation platform's tables.
IntId = Annotated[int, mapped_column(Integer, primary_key=True, autoincrement=True, sort_order=-1)]
Created = Annotated[datetime, mapped_column(DateTime(timezone=True), default=utcnow)]
RunId = Annotated[str, mapped_column(ForeignKey("runs.id"), index=True)]


class Keyed:
    """A table whose key is an auto-incremented integer ``id`` (its first column)."""

    id: Mapped[IntId]


class RunBase(DeclarativeBase):
    """Metadata of the run store (separate from the annotation platform's tables)."""


class RunRow(RunBase):
    __tablename__ = "runs"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    created_at: Mapped[Created]
    config_hash: Mapped[str] = mapped_column(String(64), index=True)
    config_json: Mapped[dict] = mapped_column(JSON)
    package_version: Mapped[str] = mapped_column(String(32))
    kind: Mapped[str] = mapped_column(String(32), default="benchmark")


class CallRow(Keyed, RunBase):
    """One model call: request hash, request, response, usage and timing."""

    __tablename__ = "calls"
    __table_args__ = (Index("ix_calls_lookup", "run_id", "request_hash", "status"),)

    run_id: Mapped[RunId]
    role: Mapped[str] = mapped_column(String(32))
    tag: Mapped[str] = mapped_column(String(200), default="")
    request_hash: Mapped[str] = mapped_column(String(64))
    model: Mapped[str] = mapped_column(String(200))
    # Model parameters, format and seed; the messages only when they are not a run's stored
    # turns (those are referenced as {"interaction", "turns", "system_sha256"}: linear storage).
    request_json: Mapped[dict] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(16))  # ok | error
    response_text: Mapped[str | None] = mapped_column(Text, nullable=True)
    reasoning: Mapped[str | None] = mapped_column(Text, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    prompt_tokens: Mapped[int] = mapped_column(Integer, default=0)
    completion_tokens: Mapped[int] = mapped_column(Integer, default=0)
    cached_tokens: Mapped[int | None] = mapped_column(Integer, nullable=True, default=0)
    cache_write_tokens: Mapped[int | None] = mapped_column(Integer, nullable=True, default=0)
    cost_usd: Mapped[float | None] = mapped_column(Float, nullable=True)
    latency_s: Mapped[float] = mapped_column(Float, default=0.0)
    finish_reason: Mapped[str | None] = mapped_column(String(32), nullable=True)  # "length": the reply was cut
    created_at: Mapped[Created]

class InteractionRow(RunBase):
    __tablename__ = "interactions"

    id: Mapped[str] = mapped_column(String(120), primary_key=True)
    run_id: Mapped[RunId]
    position: Mapped[int] = mapped_column(Integer, default=0)
    profile_id: Mapped[str] = mapped_column(String(120))
    profile_json: Mapped[dict] = mapped_column(JSON)
    clinician_model: Mapped[str] = mapped_column(String(200))
    patient_model: Mapped[str | None] = mapped_column(String(200), nullable=True)
    status: Mapped[str] = mapped_column(String(16), default="running")
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[Created]


class TurnRow(Keyed, RunBase):
    __tablename__ = "turns"
    __table_args__ = (UniqueConstraint("interaction_id", "idx", name="uq_turn_position"),)

    interaction_id: Mapped[str] = mapped_column(ForeignKey("interactions.id"), index=True)
    idx: Mapped[int] = mapped_column(Integer)
    role: Mapped[str] = mapped_column(String(16))
    content: Mapped[str] = mapped_column(Text)
    reasoning: Mapped[str | None] = mapped_column(Text, nullable=True)
    model: Mapped[str | None] = mapped_column(String(200), nullable=True)
    author: Mapped[str] = mapped_column(String(16), default="model")
    prompt_tokens: Mapped[int] = mapped_column(Integer, default=0)
    completion_tokens: Mapped[int] = mapped_column(Integer, default=0)
    latency_s: Mapped[float] = mapped_column(Float, default=0.0)
    call_id: Mapped[int | None] = mapped_column(ForeignKey("calls.id"), nullable=True)

class JudgmentRow(Keyed, RunBase):
    __tablename__ = "judgments"
    __table_args__ = (
        UniqueConstraint("run_id", "interaction_id", "judge_model", "sample", name="uq_judgment"),
    )

    run_id: Mapped[RunId]
    interaction_id: Mapped[str] = mapped_column(String(120), index=True)
    judge_model: Mapped[str] = mapped_column(String(200))
    sample: Mapped[int] = mapped_column(Integer, default=0)
    scores_json: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    raw_text: Mapped[str] = mapped_column(Text, default="")
    rationale: Mapped[str | None] = mapped_column(Text, nullable=True)
    parse_status: Mapped[str] = mapped_column(String(16))
    attempts: Mapped[int] = mapped_column(Integer, default=1)
    round: Mapped[int | None] = mapped_column(Integer, nullable=True, default=0)  # re-runs after a failure
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    nonce: Mapped[str | None] = mapped_column(String(64), nullable=True)  # the answer code the reply had to carry
    answer_channel: Mapped[str | None] = mapped_column(String(32), nullable=True)
    answers_json: Mapped[dict | None] = mapped_column(JSON, nullable=True)  # item-level rubric: answer per question
    created_at: Mapped[Created]


class JudgeAttemptRow(Keyed, RunBase):
    """One judge attempt (a stored call read, or a call that failed): never replaced, so every
    round of a sample, refused or not, stays on record. ``part``: the call's suffix of the
    interaction id (one call of an item-level or reply-level rubric; "" for the whole judgment).
    ``status``: ok | refused (the reply could not be read) | call_failed (no reply)."""

    __tablename__ = "judge_attempts"
    __table_args__ = (UniqueConstraint("run_id", "interaction_id", "part", "judge_model", "sample", "round",
                                       "attempt", name="uq_judge_attempt"),)

    run_id: Mapped[RunId]
    interaction_id: Mapped[str] = mapped_column(String(120), index=True)
    part: Mapped[str] = mapped_column(String(120), default="")
    judge_model: Mapped[str] = mapped_column(String(200))
    sample: Mapped[int] = mapped_column(Integer)
    round: Mapped[int] = mapped_column(Integer)
    attempt: Mapped[int] = mapped_column(Integer)  # 0-based within the round
    status: Mapped[str] = mapped_column(String(16))
    nonce: Mapped[str | None] = mapped_column(String(64), nullable=True)
    raw_text: Mapped[str] = mapped_column(Text, default="")
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[Created]


class ReplyJudgmentRow(Keyed, RunBase):
    """One clinician reply's judgment (``unit: reply``): its level and flags, or a recorded failure.
    A conversation's judgment is complete only when each of its replies has an ok row."""

    __tablename__ = "reply_judgments"
    __table_args__ = (
        UniqueConstraint("run_id", "interaction_id", "judge_model", "sample", "turn", name="uq_reply_judgment"),
    )

    run_id: Mapped[RunId]
    interaction_id: Mapped[str] = mapped_column(String(120), index=True)
    judge_model: Mapped[str] = mapped_column(String(200))
    sample: Mapped[int] = mapped_column(Integer, default=0)
    turn: Mapped[int] = mapped_column(Integer)  # the reply's 0-based position in the judged messages
    level: Mapped[str | None] = mapped_column(String(64), nullable=True)
    flags_json: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    parse_status: Mapped[str] = mapped_column(String(16))
    attempts: Mapped[int] = mapped_column(Integer, default=1)
    round: Mapped[int] = mapped_column(Integer, default=0)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    raw_text: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[Created]


class JudgeNonceRow(Keyed, RunBase):
    """The random answer code of one judgment round, committed before its first call so a
    resumed run re-sends the identical request (and reuses the stored reply)."""

    __tablename__ = "judge_nonces"
    __table_args__ = (UniqueConstraint("run_id", "key", name="uq_judge_nonce"),)

    run_id: Mapped[RunId]
    key: Mapped[str] = mapped_column(String(300))
    nonce: Mapped[str] = mapped_column(String(64))


class SessionRow(Keyed, RunBase):
    """One session of a multi-session conversation (``sessions: N`` > 1): its interaction, the
    conversation it belongs to (``member``: the first session's interaction id), the clinician's
    notes it starts with and the patient's situation, each with the call that wrote it. The
    memory and the situation are stored in the transaction of their call, before the next step."""

    __tablename__ = "sessions"
    __table_args__ = (UniqueConstraint("run_id", "interaction_id", name="uq_session"),)

    run_id: Mapped[RunId]
    interaction_id: Mapped[str] = mapped_column(String(120), index=True)
    member: Mapped[str] = mapped_column(String(120), index=True)
    session: Mapped[int] = mapped_column(Integer)  # 1-based
    sessions: Mapped[int] = mapped_column(Integer)
    memory: Mapped[str | None] = mapped_column(Text, nullable=True)
    memory_call_id: Mapped[int | None] = mapped_column(ForeignKey("calls.id"), nullable=True)
    situation: Mapped[str | None] = mapped_column(Text, nullable=True)
    situation_call_id: Mapped[int | None] = mapped_column(ForeignKey("calls.id"), nullable=True)
    schedule: Mapped[str | None] = mapped_column(Text, nullable=True)  # the session's draws as JSON (target.yaml schedule)
    # memory.max_entries: older entries of the writer's reply left out (NULL: no bound, or before version 8)
    memory_dropped: Mapped[int | None] = mapped_column(Integer, nullable=True)
    created_at: Mapped[Created]


class CorrectionRow(Keyed, RunBase):
    """One human correction of a judge's value (append-only: never updated nor deleted; the
    judge's own rows are left as they were). ``unit``: conversation | reply | question; ``ref``:
    the reply's turn or the question id ("" for a conversation); values as JSON (null: not relevant)."""

    __tablename__ = "corrections"
    __table_args__ = (Index("ix_corrections_key", "run_id", "interaction_id", "sample"),)

    run_id: Mapped[RunId]
    interaction_id: Mapped[str] = mapped_column(String(120))
    judge_model: Mapped[str] = mapped_column(String(200))
    sample: Mapped[int] = mapped_column(Integer)
    unit: Mapped[str] = mapped_column(String(16))
    ref: Mapped[str] = mapped_column(String(120), default="")
    axis: Mapped[str] = mapped_column(String(120))
    from_json: Mapped[dict] = mapped_column(JSON)  # {"value": the value before this change}
    to_json: Mapped[dict] = mapped_column(JSON)  # {"value": the value set}
    # question corrections: {"value": the axis value the corrected answers give}
    derived_json: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    reason: Mapped[str] = mapped_column(Text)
    who: Mapped[str] = mapped_column(String(200))
    # how ``who`` is known: self-declared (typed) | os-user (this computer's account) | signed-in
    # (the annotation app's signed-in person); NULL in rows made before schema version 6
    who_source: Mapped[str | None] = mapped_column(String(32), nullable=True)
    created_at: Mapped[Created]
