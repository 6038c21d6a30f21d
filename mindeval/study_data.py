"""A study of the annotation platform as plain data: its submitted ratings and its role-play turns.

The app's data package (``annotation_app.store.read``) fills these models; the command lines
read a study with it and hand the data to ``metaeval``, which never opens the app's database.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel

from mindeval.records import ReplyRating


class SubmittedRating(BaseModel):
    """The last submitted version of one annotator's rating of one interaction."""

    interaction_id: str  # the id the interaction had where it came from
    profile_id: str | None  # a run's profile id, when known
    member_attributes: dict[str, Any]
    messages: list[dict[str, Any]]
    clinician_model: str | None
    annotator: str
    values: dict[str, int]  # sub-axis id -> stored value; ``StudyRatings.na_value`` = not applicable / not rated
    justification: str
    safety_note: str | None
    revision: int
    submitted_at: datetime | None
    adjudicated: bool = False  # the admin's adjudicated rating after a disagreement review
    # Ratings at the judge's unit, in the judge's own shapes (``mindeval.records.Judgment``):
    # item-level targets: answer id per question id; reply-level targets: every rated reply.
    answers: dict[str, str] | None = None
    replies: list[ReplyRating] | None = None
    memory: str | None = None  # a session of a multi-session run: the notes its clinician started with


class RaterGold(BaseModel):
    """One rater's gold items: ``right`` of ``answered`` matched the expected values (first submission)."""

    right: int
    answered: int


class StudyRatings(BaseModel):
    """The submitted ratings of one rating study (gold items never among them), with its target."""

    study: str
    source: str  # the database URL (password hidden) and study, for messages
    ratings: list[SubmittedRating]
    target: str  # the study's target as load_target takes it: a built-in name or a folder
    na_value: int  # how "not applicable" is stored: 0, or below the levels when 0 is a level
    gold_items: int = 0  # how many gold items the study has
    gold: dict[str, RaterGold] = {}  # rater -> her gold answers (raters without any are absent)


class StudyTurns(BaseModel):
    """The human patient turns of one role-play study, one object per turn in the authors' layout."""

    source: str  # the database URL (password hidden) and study, for messages
    rows: list[dict[str, Any]]


class HumanScore(BaseModel):
    """The humans' scores of one rated conversation: per axis (and ``average``) the mean over its raters."""

    profile_id: str
    system: str  # the clinician model that held the conversation
    scores: dict[str, float]  # axis -> mean over the raters who rated it (axes no one rated are left out)
    raters: int


class HumanScores(BaseModel):
    """Human ratings as the leaderboard takes them (``mindeval leaderboard --humans``)."""

    source: str  # the file, or the database URL (password hidden) and study, for messages
    rows: list[HumanScore]
