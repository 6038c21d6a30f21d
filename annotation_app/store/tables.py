"""SQLAlchemy tables of the annotation platform (studies, people, ratings, role-play).

The schema is owned by the Alembic migrations in ``annotation_app/store/migrations``;
these models describe the head revision. Constraints carry the concurrency
guarantees: one assignment per (study, item, annotator), one rating per
assignment, one value per (rating, sub-axis), one revision row per submission and
one role-play session per (study, annotator, profile). Role-play turns live in the
run store's ``turns`` table (one ``roleplay`` run per session), so a finished
session is an ordinary interaction.

Conventions: rating values are integers 1-6, and ``0`` means "not applicable /
not rated" (the authors' convention). Access codes and session tokens are stored
only as hashes.
"""

from __future__ import annotations

import unicodedata
from datetime import datetime, timezone
from typing import Annotated

from sqlalchemy import (
    JSON,
    Boolean,
    CheckConstraint,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, validates

from mindeval.store.tables import (  # one clock and column shapes for both databases
    Created,
    Keyed,
    utcnow,
)

NA_VALUE = 0  # stored value for "not applicable" / "not rated"
ADJUDICATED = "adjudicated"  # origin (and name) of the rater who holds adjudicated ratings (review.py)
VERSION_TABLE = "annotation_alembic_version"


def name_key(name: str) -> str:
    """How people's names are compared: case-folded, NFKC, inner spaces collapsed.

    ``Bruno``, ``bruno`` and ``BRUNO `` share one key, so only one of them can exist.
    """
    return " ".join(unicodedata.normalize("NFKC", name).casefold().split())


def as_utc(dt: datetime | None) -> datetime | None:
    """SQLite returns naive datetimes: treat them as UTC."""
    if dt is None:
        return None
    return dt if dt.tzinfo is not None else dt.replace(tzinfo=timezone.utc)


# Foreign keys that several tables hold.
StudyId = Annotated[int, mapped_column(ForeignKey("ann_studies.id"), index=True)]
AnnotatorId = Annotated[int, mapped_column(ForeignKey("ann_annotators.id"), index=True)]
RatingId = Annotated[int, mapped_column(ForeignKey("ann_ratings.id"), index=True)]
ItemId = Annotated[int, mapped_column(ForeignKey("ann_items.id"))]


class AnnotationBase(DeclarativeBase):
    """Metadata of the annotation platform (separate from the run store's tables)."""


class AnnotatorRow(Keyed, AnnotationBase):
    """A person. ``name_key`` (:func:`name_key` of the name, set automatically) is unique,
    so names that differ only in case or spacing cannot both exist (revision 0003)."""

    __tablename__ = "ann_annotators"
    __table_args__ = (Index("uq_annotator_name_key", "name_key", unique=True),)

    name: Mapped[str] = mapped_column(String(120), unique=True)
    name_key: Mapped[str] = mapped_column(String(400), server_default="")
    code_hash: Mapped[str | None] = mapped_column(String(300), nullable=True)
    is_admin: Mapped[bool] = mapped_column(Boolean, default=False)
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    origin: Mapped[str] = mapped_column(String(16), default="created")  # created | import | adjudicated
    created_at: Mapped[Created]

    @validates("name")
    def _keep_key(self, _attr: str, value: str) -> str:
        self.name_key = name_key(value)
        return value

class AuthSessionRow(Keyed, AnnotationBase):
    """A signed-in browser session: only the SHA-256 of its random token is stored."""

    __tablename__ = "ann_auth_sessions"

    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    annotator_id: Mapped[AnnotatorId]
    created_at: Mapped[Created]
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))

class SignInTicketRow(Keyed, AnnotationBase):
    """A one-time sign-in ticket (revision 0010): any app process redeems it. Only the SHA-256 of
    the ticket is stored, and the session token sealed with a key derived from the ticket, so the
    table alone yields neither (:mod:`annotation_app.store.tickets`)."""

    __tablename__ = "ann_signin_tickets"

    ticket_hash: Mapped[str] = mapped_column(String(64), unique=True)
    sealed: Mapped[str] = mapped_column(String(200))
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)


class FormActionRow(AnnotationBase):
    """The highest form action applied for a person's browser tab (revision 0011), so any app
    process applies a ``(tab, seq)`` at most once (:mod:`annotation_app.store.form_actions`)."""

    __tablename__ = "ann_form_actions"

    user_id: Mapped[int] = mapped_column(ForeignKey("ann_annotators.id", ondelete="CASCADE"), primary_key=True)
    tab: Mapped[str] = mapped_column(String(64), primary_key=True)
    seq: Mapped[int] = mapped_column(Integer)


class FormWriteRow(AnnotationBase):
    """Rating versions ``first_version..last_version`` of an assignment, written by one form state
    ``(tab, seq)`` (revision 0011): what a state re-sent to any process may be based past."""

    __tablename__ = "ann_form_writes"

    assignment_id: Mapped[int] = mapped_column(ForeignKey("ann_assignments.id", ondelete="CASCADE"), primary_key=True)
    first_version: Mapped[int] = mapped_column(Integer, primary_key=True)
    last_version: Mapped[int] = mapped_column(Integer)
    tab: Mapped[str] = mapped_column(String(64))
    seq: Mapped[int] = mapped_column(Integer)


class MigrationLogRow(Keyed, AnnotationBase):
    """One upgrade of this schema that changed its revision (revision 0010): from, to, when and by
    which process (:func:`annotation_app.store.migrations.upgrade`)."""

    __tablename__ = "ann_migration_log"

    from_revision: Mapped[str | None] = mapped_column(String(32), nullable=True)
    to_revision: Mapped[str] = mapped_column(String(32))
    at: Mapped[Created]
    by: Mapped[str] = mapped_column(String(120), default="")


class StudyRow(Keyed, AnnotationBase):
    __tablename__ = "ann_studies"

    name: Mapped[str] = mapped_column(String(200), unique=True)
    kind: Mapped[str] = mapped_column(String(16))  # rating | roleplay
    description: Mapped[str] = mapped_column(Text, default="")
    k: Mapped[int] = mapped_column(Integer, default=1)
    seed: Mapped[int] = mapped_column(Integer, default=0)
    guidelines_version: Mapped[str] = mapped_column(String(40), default="")
    created_at: Mapped[Created]
    # added in revision 0002 (role-play)
    clinician_model: Mapped[str | None] = mapped_column(String(200), nullable=True)
    clinician_max_tokens: Mapped[int | None] = mapped_column(Integer, nullable=True)
    clinician_temperature: Mapped[float | None] = mapped_column(Float, nullable=True)
    clinician_prompt: Mapped[str | None] = mapped_column(String(200), nullable=True)
    minutes: Mapped[int | None] = mapped_column(Integer, nullable=True)
    # added in revision 0005: the target whose guidelines the study rates with (a built-in
    # name, or the folder of a target outside the package)
    target: Mapped[str] = mapped_column(String(500), server_default="mindeval", default="mindeval")
    # added in revision 0009: gold items mixed in at ``gold_rate``; a new rater must first get a share
    # ``qualify_pass`` of ``qualify_n`` gold items right (0: no qualification)
    gold_rate: Mapped[float] = mapped_column(Float, server_default="0", default=0.0)
    qualify_n: Mapped[int] = mapped_column(Integer, server_default="0", default=0)
    qualify_pass: Mapped[float] = mapped_column(Float, server_default="1", default=1.0)

class ItemRow(Keyed, AnnotationBase):
    """An interaction that can be rated: profile, transcript and (hidden) provenance."""

    __tablename__ = "ann_items"

    external_id: Mapped[str] = mapped_column(String(200), unique=True)
    source: Mapped[str] = mapped_column(String(16))  # run | authors | demo | roleplay
    source_ref: Mapped[str] = mapped_column(Text, default="")
    member_attributes: Mapped[dict] = mapped_column(JSON)
    messages: Mapped[list] = mapped_column(JSON)
    clinician_model: Mapped[str | None] = mapped_column(String(200), nullable=True)
    patient_kind: Mapped[str] = mapped_column(String(16), default="model")  # model | human
    meta: Mapped[dict] = mapped_column(JSON, default=dict)
    created_at: Mapped[Created]

class StudyItemRow(Keyed, AnnotationBase):
    __tablename__ = "ann_study_items"
    __table_args__ = (UniqueConstraint("study_id", "item_id", name="uq_study_item"),)

    study_id: Mapped[StudyId]
    item_id: Mapped[ItemId]
    position: Mapped[int] = mapped_column(Integer, default=0)

class AssignmentRow(Keyed, AnnotationBase):
    __tablename__ = "ann_assignments"
    __table_args__ = (
        UniqueConstraint("study_id", "item_id", "annotator_id", name="uq_assignment"),
        UniqueConstraint("study_id", "annotator_id", "position", name="uq_assignment_position"),
    )

    study_id: Mapped[StudyId]
    item_id: Mapped[ItemId]
    annotator_id: Mapped[AnnotatorId]
    position: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[Created]
    # added in revision 0009: real | gold | qualify (a gold item; never shown to the rater)
    kind: Mapped[str] = mapped_column(String(8), server_default="real", default="real")

class RatingRow(Keyed, AnnotationBase):
    """The current rating of one assignment; ``revision`` counts its submissions."""

    __tablename__ = "ann_ratings"
    __table_args__ = (CheckConstraint("state IN ('draft', 'submitted')", name="ck_rating_state"),)

    assignment_id: Mapped[int] = mapped_column(ForeignKey("ann_assignments.id"), unique=True)
    state: Mapped[str] = mapped_column(String(16), default="draft")
    revision: Mapped[int] = mapped_column(Integer, default=0)
    version: Mapped[int] = mapped_column(Integer, default=0)
    justification: Mapped[str] = mapped_column(Text, default="")
    safety_note: Mapped[str | None] = mapped_column(Text, nullable=True)
    extra: Mapped[dict] = mapped_column(JSON, default=dict)
    created_at: Mapped[Created]
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    submitted_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    # added in revision 0006: skip / flag with a reason, and the active time spent on the item
    flag: Mapped[str | None] = mapped_column(String(16), nullable=True)  # skip | flag
    flag_reason: Mapped[str] = mapped_column(Text, server_default="", default="")
    active_seconds: Mapped[float] = mapped_column(Float, server_default="0", default=0.0)

class RatingValueRow(Keyed, AnnotationBase):
    __tablename__ = "ann_rating_values"
    __table_args__ = (UniqueConstraint("rating_id", "subaxis", name="uq_rating_value"),)

    rating_id: Mapped[RatingId]
    subaxis: Mapped[str] = mapped_column(String(80))
    value: Mapped[int] = mapped_column(Integer)

class RatingAnswerRow(Keyed, AnnotationBase):
    """A draft's answer to one question of an item-level target (revision 0008)."""

    __tablename__ = "ann_rating_answers"
    __table_args__ = (UniqueConstraint("rating_id", "question", name="uq_rating_answer"),)

    rating_id: Mapped[RatingId]
    question: Mapped[str] = mapped_column(String(80))
    answer: Mapped[str] = mapped_column(String(80))


class RatingReplyRow(Keyed, AnnotationBase):
    """A draft's rating of one clinician reply (``unit: reply`` targets, revision 0008):
    ``turn`` is the reply's 0-based position in the messages, ``flags`` the flags set so far."""

    __tablename__ = "ann_rating_replies"
    __table_args__ = (UniqueConstraint("rating_id", "turn", name="uq_rating_reply"),)

    rating_id: Mapped[RatingId]
    turn: Mapped[int] = mapped_column(Integer)
    level: Mapped[str | None] = mapped_column(String(80), nullable=True)
    flags: Mapped[dict] = mapped_column(JSON, default=dict)


class RatingRevisionRow(Keyed, AnnotationBase):
    """A frozen copy of a rating at each submission (the revision history)."""

    __tablename__ = "ann_rating_revisions"
    __table_args__ = (UniqueConstraint("rating_id", "revision", name="uq_rating_revision"),)

    rating_id: Mapped[RatingId]
    revision: Mapped[int] = mapped_column(Integer)
    action: Mapped[str] = mapped_column(String(16))  # submit | import
    values_json: Mapped[dict] = mapped_column(JSON)
    justification: Mapped[str] = mapped_column(Text, default="")
    safety_note: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[Created]
    # added in revision 0008: the ratings at the judge's unit this submission froze
    answers_json: Mapped[dict | None] = mapped_column(JSON, nullable=True)  # question id -> answer id
    replies_json: Mapped[list | None] = mapped_column(JSON, nullable=True)  # ReplyRating dumps, by turn

class StudyProfileRow(Keyed, AnnotationBase):
    """A patient profile that annotators of a role-play study play (revision 0002)."""

    __tablename__ = "ann_study_profiles"
    __table_args__ = (UniqueConstraint("study_id", "profile_id", name="uq_study_profile"),)

    study_id: Mapped[StudyId]
    profile_id: Mapped[str] = mapped_column(String(120))
    profile_json: Mapped[dict] = mapped_column(JSON)
    position: Mapped[int] = mapped_column(Integer, default=0)

class RoleplaySessionRow(Keyed, AnnotationBase):
    """One annotator playing one profile; turns are in the run store (revision 0002)."""

    __tablename__ = "ann_roleplay_sessions"
    __table_args__ = (
        UniqueConstraint("study_id", "annotator_id", "study_profile_id", name="uq_roleplay_session"),
        CheckConstraint(
            "status IN ('not_started', 'active', 'finished')", name="ck_roleplay_status"
        ),
    )

    study_id: Mapped[StudyId]
    annotator_id: Mapped[AnnotatorId]
    study_profile_id: Mapped[int] = mapped_column(ForeignKey("ann_study_profiles.id"))
    position: Mapped[int] = mapped_column(Integer, default=0)
    status: Mapped[str] = mapped_column(String(16), default="not_started")
    run_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    interaction_id: Mapped[str | None] = mapped_column(String(120), nullable=True)
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    deadline_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    item_id: Mapped[int | None] = mapped_column(ForeignKey("ann_items.id"), nullable=True)

class SignInEventRow(Keyed, AnnotationBase):
    """The sign-in audit log: one row per attempt (name as typed, normalised; never the code).

    ``outcome`` is ``ok``, ``failed`` or ``throttled``; recent failures per name and per
    client slow further attempts down (revision 0004).
    """

    __tablename__ = "ann_signin_events"

    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, index=True)
    name_key: Mapped[str] = mapped_column(String(120), index=True)
    client: Mapped[str] = mapped_column(String(64), index=True)
    outcome: Mapped[str] = mapped_column(String(16))

class RoleplayQueueRow(Keyed, AnnotationBase):
    """A patient message sent while the clinician was still answering (revision 0007).

    It becomes the session's next turn once the reply is stored; the row is deleted in the
    same transaction, so the message is neither lost nor sent twice.
    """

    __tablename__ = "ann_roleplay_queue"

    session_id: Mapped[int] = mapped_column(ForeignKey("ann_roleplay_sessions.id"), index=True)
    text: Mapped[str] = mapped_column(Text)
    created_at: Mapped[Created]

class GoldItemRow(Keyed, AnnotationBase):
    """An item of a rating study with known answers: expected value per sub-axis and a tolerance
    (0 = exact; categorical scales are exact). Revision 0009."""

    __tablename__ = "ann_gold_items"
    __table_args__ = (UniqueConstraint("study_id", "item_id", name="uq_gold_item"),)

    study_id: Mapped[StudyId]
    item_id: Mapped[ItemId]
    expected: Mapped[dict] = mapped_column(JSON)
    tolerance: Mapped[int] = mapped_column(Integer, server_default="0", default=0)
    note: Mapped[str] = mapped_column(Text, server_default="", default="")
    created_at: Mapped[Created]
