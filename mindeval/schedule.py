"""A target's ``schedule:``: seeded per-member, per-session draws declared as data.

Each draw is named (snake_case) and is either categorical (``choices``, optional positive
``weights``) or an integer uniform in ``between: [lo, hi]``; ``sessions`` limits the sessions it
is drawn for (default: every one), ``visible_to`` the templates that may name it as
``${schedule_<name>}`` (default: the patient's and the next-session step's). A session for which a
draw is not drawn renders it as the empty string.

Every value derives from the run's seed, the session's conversation key
(:func:`mindeval.seeds.conversation_key`: target, profile, repeat, session) and the draw's name
alone: never from the run id, the clinician or the clock, so every clinician meets the same schedule,
and changing one draw's declaration changes no other draw. The values of a session are stored with
it (:attr:`mindeval.records.SessionInfo.schedule`) before any of its calls; a resumed run reads them.
"""

from __future__ import annotations

import hashlib
import random
from bisect import bisect_right
from collections.abc import Mapping
from itertools import accumulate
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)

from .config import SNAKE_CASE
from .prompts import SCHEDULE_PREFIX as PREFIX

if TYPE_CHECKING:
    from .prompts import PromptTemplate
    from .records import SessionInfo
    from .store.runs import RunStore

ScheduleRole = Literal["patient", "clinician", "next_session", "memory", "judge"]
DEFAULT_VISIBLE: tuple[ScheduleRole, ...] = ("patient", "next_session")


def _text(v: str) -> str:
    if not v.strip():
        raise ValueError("a choice must not be empty")
    return v


class Draw(BaseModel):
    """One declared draw: ``choices`` (with optional ``weights``) or ``between: [lo, hi]``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    choices: list[Annotated[str, AfterValidator(_text)]] | None = None
    weights: list[float] | None = None
    between: tuple[int, int] | None = None
    sessions: list[int] | None = Field(None, min_length=1)  # which sessions it is drawn for (None: all)
    visible_to: list[ScheduleRole] = Field(default_factory=lambda: list(DEFAULT_VISIBLE))

    @field_validator("weights")
    @classmethod
    def _weights(cls, v: list[float] | None) -> list[float] | None:
        if v is not None and any(not w > 0 for w in v):
            raise ValueError("every weight must be a positive number")
        return v

    @model_validator(mode="after")
    def _shape(self) -> Draw:
        if (self.choices is None) == (self.between is None):
            raise ValueError("give either choices (a list of texts) or between ([lo, hi]), not both nor neither")
        if self.choices is not None and not self.choices:
            raise ValueError("choices must list at least one text")
        if self.weights is not None and (self.choices is None or len(self.weights) != len(self.choices)):
            raise ValueError(f"weights must give one number per choice ({len(self.choices or [])}), "
                             f"not {len(self.weights)}")
        if self.between is not None and self.between[0] > self.between[1]:
            raise ValueError(f"between: lo ({self.between[0]}) must not exceed hi ({self.between[1]})")
        if self.sessions is not None and len(set(self.sessions)) != len(self.sessions):
            raise ValueError("sessions lists a session twice")
        return self

    def drawn_in(self, session: int) -> bool:
        return self.sessions is None or session in self.sessions

    def value(self, rng: random.Random) -> str:
        """One value (a choice's text or the integer as text), from ``rng.random()`` alone (the
        one method whose sequence Python keeps across versions)."""
        u = rng.random()
        if self.between is not None:
            lo, hi = self.between
            return str(min(hi, lo + int(u * (hi - lo + 1))))
        assert self.choices is not None
        cum = list(accumulate(self.weights or [1.0] * len(self.choices)))
        return self.choices[min(len(self.choices) - 1, bisect_right(cum, u * cum[-1]))]


def _names(v: dict[str, Draw]) -> dict[str, Draw]:
    for name in v:
        if not SNAKE_CASE.match(name):
            raise ValueError(f"draw name '{name}' must be snake_case (a-z, 0-9, underscores)")
    return v


Schedule = Annotated[dict[str, Draw], AfterValidator(_names)]


def declared(raw: Any) -> dict[str, Draw]:
    """A manifest's schedule as draws ({} when none, or when it has problems of its own, reported apart)."""
    try:
        return TypeAdapter(Schedule).validate_python(raw or {})
    except ValidationError:
        return {}


def draw_seed(seed: int, key: str, name: str) -> int:
    """The seed of draw ``name`` of the session keyed ``key`` (a stable hash, as :func:`mindeval.seeds.turn_seed`)."""
    return int(hashlib.sha256(f"{seed}:{key}:schedule:{name}".encode()).hexdigest()[:16], 16)


def draw_session(schedule: Mapping[str, Draw], seed: int, key: str, session: int) -> dict[str, str]:
    """The values of session ``session`` (keyed ``key``): each draw drawn for it, by name."""
    return {name: d.value(random.Random(draw_seed(seed, key, name)))
            for name, d in schedule.items() if d.drawn_in(session)}


def session_problems(schedule: Mapping[str, Draw], sessions: int) -> list[tuple[str, str]]:
    """``(field, message)`` for each draw naming a session outside 1..``sessions``."""
    return [(f"schedule.{name}.sessions", f"session {k} is outside 1..{sessions} (sessions is {sessions})")
            for name, d in schedule.items() for k in (d.sessions or []) if not 1 <= k <= sessions]


def template_draws(tpl: PromptTemplate) -> list[str]:
    """The draw names a template names (``${schedule_<name>}``)."""
    return sorted(f[len(PREFIX):] for f in tpl.fields if f.startswith(PREFIX))


def template_problem(schedule: Mapping[str, Draw], role: str, name: str) -> str | None:
    """Why a ``role`` template may not name ``${schedule_<name>}`` (None: it may)."""
    if name not in schedule:
        return (f"'${{{PREFIX}{name}}}' names no declared draw (schedule in target.yaml: "
                f"{', '.join(sorted(schedule)) or 'none'})")
    if role not in schedule[name].visible_to:
        return (f"'${{{PREFIX}{name}}}' is not visible to the {role} template: list {role} under "
                f"schedule.{name}.visible_to in target.yaml to show it "
                f"(now: {', '.join(schedule[name].visible_to) or 'none'})")
    return None


def record(schedule: Mapping[str, Draw] | None) -> dict[str, Any] | None:
    """The block a run's configuration records (None when no schedule is declared)."""
    return {k: d.model_dump(exclude_none=True) for k, d in schedule.items()} if schedule else None


async def stored_or_drawn(store: RunStore, iid: str, info: SessionInfo, schedule: Mapping[str, Draw], seed: int,
                          key: str, save: bool = True) -> SessionInfo:
    """``info`` with its session's draws: those stored for ``iid``, else drawn now and (``save``)
    committed with the session's row before any call of the session is made."""
    stored = store.sessions().get(iid)
    if stored is not None and stored.schedule is not None:
        return info.model_copy(update={"schedule": stored.schedule})
    done = info.model_copy(update={"schedule": draw_session(schedule, seed, key, info.session)})
    if save:
        await store.arun(store.save_session(iid, done))
    return done
