"""Domain records (pydantic): Profile, Turn, Interaction, Judgment and friends.

``Profile`` reads and writes the authors' ``profiles.jsonl`` schema
(``member_attributes``, ``member_narrative``, ``member_narrative_thinking_trace``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .errors import MindEvalError

# The 25 profile attributes, in the authors' order and spelling.
ATTRIBUTE_FIELDS: tuple[str, ...] = (
    "name",
    "sex",
    "gender_identity",
    "sexual_orientation",
    "age",
    "race",
    "thought_process",
    "general_outlook",
    "conversation_style",
    "recent_mood",
    "education",
    "profession",
    "employment_status",
    "financial_situation",
    "support_system",
    "siblings",
    "relationship_status",
    "living_situation",
    "exercise",
    "sleep_quality",
    "attitude_towards_mindfulness",
    "region",
    "depressive_symptoms",
    "anxious_symptoms",
    "program_goal",
)

# What the clinician may know: the intake fields of the paper's Fig. 10.
INTAKE_FIELDS: tuple[str, ...] = (
    "name",
    "sex",
    "gender_identity",
    "sexual_orientation",
    "age",
    "race",
    "education",
    "profession",
    "employment_status",
    "siblings",
    "relationship_status",
    "living_situation",
    "exercise",
    "sleep_quality",
    "attitude_towards_mindfulness",
    "region",
    "depressive_symptoms",
    "anxious_symptoms",
)

AXES: tuple[str, ...] = ("CAC", "EPC", "AR", "TRA", "ASCQ")

Role = Literal["patient", "clinician"]


class ProfileAttributes(BaseModel):
    """The 25 attributes of a patient profile (all required)."""

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
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
        )


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


class Interaction(BaseModel):
    """A whole conversation between one patient profile and one clinician."""

    id: str
    run_id: str | None = None
    profile: Profile
    clinician_model: str
    patient_model: str | None = None
    turns: list[Turn] = Field(default_factory=list)
    status: Literal["running", "complete", "failed"] = "running"
    error: str | None = None

    def messages(self) -> list[dict[str, str]]:
        """The transcript in the authors' schema: user = patient, assistant = clinician."""
        return [
            {"role": "user" if t.role == "patient" else "assistant", "content": t.content}
            for t in self.turns
        ]


ParseStatus = Literal["ok", "failed"]


class Judgment(BaseModel):
    """The judge's five 1-6 scores for one interaction (or a recorded failure)."""

    interaction_id: str
    judge_model: str
    sample: int = 0
    scores: dict[str, int] | None = None
    raw_text: str = ""
    rationale: str | None = None
    parse_status: ParseStatus = "ok"
    attempts: int = 1
    error: str | None = None

    @field_validator("scores")
    @classmethod
    def _valid_scores(cls, v: dict[str, int] | None) -> dict[str, int] | None:
        if v is None:
            return v
        if set(v) != set(AXES):
            raise ValueError(f"scores must have exactly the axes {AXES}")
        for k, s in v.items():
            if not isinstance(s, int) or isinstance(s, bool) or not 1 <= s <= 6:
                raise ValueError(f"score {k}={s!r} is not an integer from 1 to 6")
        return v

    @property
    def average(self) -> float | None:
        if self.scores is None:
            return None
        return sum(self.scores.values()) / len(self.scores)


# ---------------------------------------------------------------- JSONL reading


def read_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for each non-blank line; bad JSON names file:line."""
    p = Path(path)
    if not p.is_file():
        raise MindEvalError("file not found", path=p)
    with p.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise MindEvalError(f"malformed JSON ({exc.msg})", path=p, line=lineno) from None
            if not isinstance(obj, dict):
                raise MindEvalError("each line must be a JSON object", path=p, line=lineno)
            yield lineno, obj


def _validation_message(exc: ValidationError) -> tuple[str, str]:
    err = exc.errors()[0]
    loc = ".".join(str(x) for x in err["loc"])
    if err["type"] == "missing":
        return loc, "missing required field"
    return loc, err["msg"]


def profile_from_json(obj: dict[str, Any], *, path: str | Path = "<input>", line: int | None = None) -> Profile:
    """Validate one row of the authors' profile schema, naming file:line:field on error."""
    if "member_attributes" not in obj:
        raise MindEvalError("missing required field", path=path, line=line, field="member_attributes")
    try:
        return Profile.model_validate(obj)
    except ValidationError as exc:
        field, msg = _validation_message(exc)
        raise MindEvalError(msg, path=path, line=line, field=field) from None


def load_profiles(path: str | Path) -> list[Profile]:
    """Load a profiles.jsonl file in the authors' schema."""
    profiles = [profile_from_json(obj, path=path, line=n) for n, obj in read_jsonl(path)]
    if not profiles:
        raise MindEvalError("no profiles in file", path=path)
    return profiles


def write_profiles(profiles: list[Profile], path: str | Path) -> None:
    with Path(path).open("w", encoding="utf-8") as fh:
        for p in profiles:
            fh.write(json.dumps(p.to_json(), ensure_ascii=False) + "\n")
