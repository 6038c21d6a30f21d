"""View models the pages receive from the service layer (no database objects leak out).

Annotator-facing views are blinded by construction: they have no field for the
clinician model, judge scores, provenance or other annotators' ratings.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from mindeval.stats.proportion import HarmShare
from mindeval.targets import DEFAULT_TARGET

StudyKind = Literal["rating", "roleplay"]
ItemState = Literal["todo", "draft", "submitted"]
FlagKind = Literal["skip", "flag"]  # an annotator skips an item, or flags a problem with it


class StudySpec(BaseModel):
    """What a new study is: its name and kind, annotators per item, seed and form; role-play
    studies also name the clinician model, its limits and the session length in minutes."""

    model_config = ConfigDict(extra="forbid")

    name: str
    kind: str  # "rating" | "roleplay" (checked with a clear message by create_study)
    k: int = 1
    seed: int = 0
    description: str = ""
    target: str = DEFAULT_TARGET  # a built-in target's name or a target folder
    guidelines_version: str = ""
    clinician_model: str | None = None
    clinician_max_tokens: int | None = None
    clinician_temperature: float | None = None
    minutes: int | None = None


class Viewer(BaseModel):
    """The signed-in person; ``session`` is the hash of the sign-in token it came from
    (``None`` only for the command line), checked again before every write."""

    id: int
    name: str
    is_admin: bool
    session: str | None = Field(default=None, exclude=True, repr=False)


class SignedIn(BaseModel):
    viewer: Viewer
    token: str


class LevelView(BaseModel):
    """One choice of the rating scale: the stored ``value`` and what the form shows (``label``:
    the score itself on an ordinal scale, the level's label on a categorical one)."""

    value: int
    label: str
    harm: bool = False


class ScaleView(BaseModel):
    """The rating scale of a study's target, as the form offers it (keys 1..n pick ``levels``
    in order); "not applicable" is stored as ``na_value``."""

    kind: Literal["ordinal", "categorical"]
    levels: list[LevelView]
    na_value: int

    def label(self, value: int | None) -> str:
        """What the form shows for a stored value ("N/A", a score or a level's label; "" if unset)."""
        if value is None:
            return ""
        if value == self.na_value:
            return "N/A"
        return next((lv.label for lv in self.levels if lv.value == value), str(value))


class SubAxisView(BaseModel):
    id: str
    axis: str
    axis_name: str
    name: str
    anchors: dict[str, str]  # what the form shows for a score or level → its anchor text
    allow_na: bool


class Message(BaseModel):
    role: Literal["patient", "clinician"]
    content: str


class StudyProgress(BaseModel):
    study_id: int
    name: str
    kind: StudyKind
    description: str
    done: int
    total: int


class QueueEntry(BaseModel):
    assignment_id: int
    position: int
    state: ItemState
    label: str
    flag: FlagKind | None = None


class RevisionView(BaseModel):
    revision: int
    action: str
    values: dict[str, int]
    justification: str
    safety_note: str | None
    created_at: datetime | None


class ReplyDraft(BaseModel):
    """One clinician reply's rating so far (``unit: reply`` targets): level id (``None`` = not yet
    rated) and the flags set; ``turn`` is the reply's 0-based position in the messages."""

    turn: int
    level: str | None = None
    flags: dict[str, bool] = Field(default_factory=dict)


class ItemView(BaseModel):
    """One transcript to rate, as its annotator sees it."""

    assignment_id: int
    study_id: int
    study_name: str
    position: int
    total: int
    done: int
    member_name: str
    intake: list[tuple[str, str]]
    messages: list[Message]
    subaxes: list[SubAxisView]
    scale: ScaleView
    values: dict[str, int]
    justification: str
    safety_note: str
    state: ItemState
    revision: int
    history: list[RevisionView]
    version: int = 0  # the rating's version: a write based on an older one is refused (Stale)
    flag: FlagKind | None = None
    flag_reason: str = ""
    active_seconds: float = 0.0  # time spent actively on this item (stored with the rating)
    unit: str = "conversation"  # the target's judging unit: conversation | question | reply
    answers: dict[str, str] = Field(default_factory=dict)  # question id -> answer id (item-level targets)
    replies: dict[int, ReplyDraft] = Field(default_factory=dict)  # turn -> the reply's rating (unit: reply)


class FlagView(BaseModel):
    """An item an annotator skipped or flagged, for the admin (and the ``flags`` export)."""

    item: str
    annotator: str
    flag: FlagKind
    reason: str
    state: ItemState
    active_seconds: float


class SessionEntry(BaseModel):
    session_id: int
    position: int
    status: Literal["not_started", "active", "finished"]
    member_name: str
    n_messages: int


class RoleplayView(BaseModel):
    """A role-play session as its annotator sees it (no model name)."""

    session_id: int
    study_id: int
    study_name: str
    status: Literal["not_started", "active", "finished"]
    member_name: str
    attributes: list[tuple[str, str]]
    backstory: str
    messages: list[Message]
    awaiting_reply: bool
    queued: list[str] = []  # messages sent while the clinician was answering, not yet turns
    replying: bool = False  # a reply is being written right now (in this server)
    partial: str = ""  # that reply as streamed so far (until it is stored)
    minutes: int
    seconds_left: float | None
    time_up: bool


class AnnotatorProgress(BaseModel):
    name: str
    assigned: int
    submitted: int
    drafts: int


class StudyResults(BaseModel):
    study_id: int
    name: str
    kind: StudyKind
    progress: list[AnnotatorProgress]
    n_ratings: int
    target: str = "mindeval"
    subaxis_means: dict[str, float | None] = Field(default_factory=dict)
    axis_means: dict[str, float | None] = Field(default_factory=dict)
    level_counts: dict[str, dict[str, int]] = Field(default_factory=dict)  # categorical: sub-axis → label → n
    harm: HarmShare | None = None  # targets with harm levels: n ratings, k with any dimension at one, share, ci95
    agreement: dict[str, float | None] | None = None
    agreement_note: str = ""


class StudyInfo(BaseModel):
    id: int
    name: str
    kind: StudyKind
    target: str
    description: str
    k: int
    seed: int
    clinician_model: str | None
    minutes: int | None
    n_items: int
    n_assignments: int


class AnnotatorInfo(BaseModel):
    id: int
    name: str
    is_admin: bool
    active: bool
    origin: str
    can_sign_in: bool


class ImportReport(BaseModel):
    """What an import did. ``items_linked`` counts items newly linked to the study
    (``items_added`` new to the workspace, ``items_reused`` identical ones already there)."""

    kind: str
    items_linked: int = 0
    items_added: int = 0
    items_reused: int = 0
    ratings_added: int = 0
    ratings_unchanged: int = 0
    annotators_added: int = 0
    profiles_added: int = 0
    skipped: int = 0
    warnings: list[str] = Field(default_factory=list)


class AssignReport(BaseModel):
    created: int
    per_annotator: dict[str, int]
    seed: int
    short: int = 0  # items left with fewer than k annotators (only their own role-player was free)
    sampled: dict[str, int] = {}  # --per-system: items in the random sample, per clinician model
    gold: int = 0  # gold items mixed in (qualification ones included)
    failed: list[str] = []  # raters left out: they failed the study's qualification


class SignInEvent(BaseModel):
    """One entry of the sign-in audit log (never the code)."""

    at: datetime
    name: str
    client: str
    outcome: str


QualificationStatus = Literal["none", "pending", "passed", "failed"]


class QualificationView(BaseModel):
    """Where a rater stands with a study's qualification: ``none`` (not required), ``pending``,
    ``passed`` or ``failed``; ``correct`` of ``answered`` of the ``required`` gold items were right,
    ``needed`` right ones pass (only an annotator's own, or an admin, sees this)."""

    status: QualificationStatus
    required: int = 0
    answered: int = 0
    correct: int = 0
    needed: int = 0

    def message(self) -> str:
        """What the rater is told, in plain words ("" when there is nothing to say)."""
        if self.status != "failed":
            return ""
        return (f"You did not pass this study's qualification: {self.correct} of your first {self.required} "
                f"transcripts matched the expected ratings, and {self.needed} had to. You will not receive "
                "transcripts to rate in this study; your study lead sees this too.")


class GoldItemView(BaseModel):
    """A gold item of a study: its expected values (sub-axis → stored value) and tolerance."""

    item: str
    expected: dict[str, int]
    tolerance: int
    note: str = ""


class StudyItemEntry(BaseModel):
    """An item of a study as an admin names it: the id a gold file's ``item`` takes, where it came
    from, and whether it is gold."""

    item: str
    source: str  # run | authors | demo | roleplay
    clinician_model: str | None = None
    gold: bool = False


class GoldSettings(BaseModel):
    """A study's gold settings: share of gold among a rater's items, and the qualification."""

    gold_rate: float = 0.0
    qualify_n: int = 0
    qualify_pass: float = 1.0
    n_gold: int = 0
