"""A simulated patient (pydantic): ``Profile`` reads and writes the authors' ``profiles.jsonl``
schema (``member_attributes``, ``member_narrative``, ``member_narrative_thinking_trace``)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

from ..errors import MindEvalError
from ..files import atomic_write
from .io import read_jsonl, validate_row


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

