"""The between-session memory of a multi-session target (``memory:`` in ``target.yaml``): which
model writes it, which roles' templates read it (``${memory}``), and its bound as a running log.

Not declared: the clinician writes its own notes, read by the clinician and the judge, unbounded
(:data:`DEFAULT_MEMORY`, what runs recorded before the block existed). With ``max_entries: N``
the stored memory is the newest N entries (non-empty lines) of the writer's reply
(:func:`bound_log`); the reply itself stays whole in its stored call.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

MemoryRole = Literal["clinician", "patient", "judge"]


class MemorySpec(BaseModel):
    """``memory: {writer, readers, max_entries}``: every key optional."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    writer: Literal["clinician", "patient"] = "clinician"  # whose model writes it (prompts.memory)
    readers: tuple[MemoryRole, ...] = ("clinician", "judge")  # whose templates may name ${memory}
    max_entries: int | None = Field(None, ge=1)  # keep the newest N non-empty lines (None: all)

    @field_validator("readers")
    @classmethod
    def _readers(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        if not v:
            raise ValueError("list at least one reader (clinician, patient, judge)")
        if len(set(v)) != len(v):
            raise ValueError("each reader may be listed once")
        return v

    def reads(self, role: str) -> bool:
        """Whether ``role``'s template may name ``${memory}`` (and its prompt receives it)."""
        return role in self.readers

    @property
    def private(self) -> bool:
        """The patient writes it and the clinician never reads it: its template may name the
        profile's attributes and backstory (no clinician sees the log)."""
        return self.writer == "patient" and not self.reads("clinician")

    @property
    def title(self) -> str:
        """What the memory is called where a person reads it (the viewer): whose it is."""
        return "clinician's notes" if self.writer == "clinician" else "patient's running log"


DEFAULT_MEMORY = MemorySpec()


def log_entries(text: str) -> list[str]:
    """The entries of a memory log: its non-empty lines, oldest first."""
    return [line for line in text.splitlines() if line.strip()]


def bound_log(text: str, max_entries: int | None) -> tuple[str, int]:
    """``text`` bounded to its newest ``max_entries`` entries (one per line) and how many older
    entries were dropped; no bound: ``text`` as written and 0."""
    if max_entries is None:
        return text, 0
    entries = log_entries(text)
    kept = entries[-max_entries:]
    return "\n".join(kept), len(entries) - len(kept)
