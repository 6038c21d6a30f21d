"""``first_session`` in ``target.yaml``: what session 1 of a multi-session target starts from.

Session 1 has no notes and no next-session step before it, so its patient prompt's
``${situation}`` and its clinician prompt's ``${memory}`` come from the target: each either a
literal text (``{text: ...}`` or the bare string) or the value of one profile field
(``{field: NAME}``). The clinician's may name only
an intake field (what a clinician may see). Not declared: the situation says this is the first
session with the clinician's role label (``roles.clinician``), the notes are
:data:`mindeval.config.FIRST_MEMORY`.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, field_validator, model_validator

from ..config import FIRST_MEMORY, FIRST_SITUATION
from ..records import ATTRIBUTE_FIELDS, INTAKE_FIELDS, Profile
from .schema import Text, snake

PATIENT_PROFILE_FIELDS: tuple[str, ...] = (*ATTRIBUTE_FIELDS, "member_narrative")
SHAPE = "must be a text or {field: <profile field>}"
# What a run recorded nothing for before ``first_session`` existed: a run of a target using exactly
# these texts records none, so runs started earlier keep their configuration hash and resume.
LEGACY_FIRST_SESSION: dict[str, Any] = {"situation": FIRST_SITUATION, "memory": FIRST_MEMORY}


def default_situation(clinician: str) -> str:
    """Session 1's situation when the target declares none: the first session with ``clinician``
    (the target's clinician role label; a one-word label such as ``Companion`` in lower case)."""
    if clinician.strip().lower() == "companion":
        return FIRST_SITUATION
    word = clinician.lower() if clinician.isalpha() and clinician.istitle() else clinician
    return f"This is your first session with the {word}."


class FirstText(BaseModel):
    """One first-session text: ``text`` as written or the profile's ``field`` (exactly one; a bare
    string in target.yaml is ``text``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: Text | None = None
    field: Annotated[str, AfterValidator(lambda v: snake(v, "field"))] | None = None

    @model_validator(mode="after")
    def _one(self) -> FirstText:
        if (self.text is None) == (self.field is None):
            raise ValueError(SHAPE + ": give text or field, exactly one")
        return self

    def value(self, profile: Profile) -> str:
        return self.text if self.text is not None else profile.fields()[str(self.field)]

    def record(self) -> str | dict[str, str]:
        """As a run's configuration records it (the same shape as target.yaml)."""
        return self.text if self.text is not None else {"field": str(self.field)}


def _shape(v: Any) -> Any:
    """A bare string is ``{text: ...}``; anything but a string or a mapping is refused."""
    if isinstance(v, str):
        return {"text": v}
    if v is not None and not isinstance(v, dict | FirstText):
        raise ValueError(SHAPE)
    return v


def _known(v: FirstText | None, role: str, allowed: tuple[str, ...]) -> FirstText | None:
    """``v``'s field, if it names one, is a profile field ``role`` may read."""
    name = v.field if v is not None else None
    if name is None or name in allowed:
        return v
    if role == "clinician" and name in PATIENT_PROFILE_FIELDS:
        raise ValueError(f"field '{name}' is not an intake field: the clinician's first notes may name only the "
                         f"intake fields ({', '.join(INTAKE_FIELDS)}), or it would leak the profile")
    raise ValueError(f"field '{name}' is not a profile field (one of {', '.join(allowed)})")


class FirstSession(BaseModel):
    """``first_session``: session 1's ``situation`` (patient) and ``memory`` (clinician)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    situation: FirstText | None = None
    memory: FirstText | None = None

    @field_validator("situation", "memory", mode="before")
    @classmethod
    def _bare(cls, v: Any) -> Any:
        return _shape(v)

    @field_validator("situation")
    @classmethod
    def _situation(cls, v: FirstText | None) -> FirstText | None:
        return _known(v, "patient", PATIENT_PROFILE_FIELDS)

    @field_validator("memory")
    @classmethod
    def _memory(cls, v: FirstText | None) -> FirstText | None:
        return _known(v, "clinician", INTAKE_FIELDS)

    def texts(self, profile: Profile, clinician: str) -> tuple[str, str]:
        """Session 1's (situation, memory) for ``profile``; ``clinician``: the clinician's role label."""
        return (self.situation.value(profile) if self.situation else default_situation(clinician),
                self.memory.value(profile) if self.memory else FIRST_MEMORY)

    def record(self, clinician: str) -> dict[str, Any]:
        """What a run records in its target block: each text or field as used (defaults written out)."""
        return {"situation": self.situation.record() if self.situation else default_situation(clinician),
                "memory": self.memory.record() if self.memory else FIRST_MEMORY}
