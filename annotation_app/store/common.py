"""Small shared helpers: errors of the platform and display labels."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mindeval.errors import MindEvalError
from mindeval.records import ATTRIBUTE_FIELDS, INTAKE_FIELDS


class AccessDenied(MindEvalError):
    """The signed-in person may not see or change this object."""


class SignedOut(AccessDenied):
    """The session this request came from has ended (signed out, expired or code reset)."""


class NotFound(MindEvalError):
    """No such study, item, assignment or session."""


class Conflict(MindEvalError):
    """The object changed in the meantime (another tab or another person)."""


class Stale(Conflict):
    """A rating write based on an older version than the stored one (another tab or device
    changed it since this page was loaded); ``version`` is the stored version."""

    def __init__(self, version: int) -> None:
        self.version = version
        super().__init__("this rating was changed in another tab or device since this page was loaded",
                         field="version")


class RatingIncomplete(MindEvalError):
    """Submitting a rating that misses values; ``problems`` lists them in plain words."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("the rating is not complete: " + "; ".join(problems))


class TimeUp(Conflict):
    """A role-play message sent after the session's time ran out; ``text`` is kept for the page."""

    def __init__(self, text: str) -> None:
        self.text = text
        super().__init__("the time for this session is up, so this message was not sent", field="time")


class ReplyFailed(MindEvalError):
    """The clinician model did not answer; the turn can be retried."""


_LABELS = {
    "attitude_towards_mindfulness": "Attitude towards mindfulness",
    "sleep_quality": "Sleep",
    "region": "Region of residence",
    "program_goal": "Program goal",
    "recent_mood": "Recent mood",
}


def label(field: str) -> str:
    """``sexual_orientation`` → ``Sexual orientation``."""
    return _LABELS.get(field) or field.replace("_", " ").capitalize()


def intake_pairs(attrs: dict[str, Any]) -> list[tuple[str, str]]:
    """The intake fields (what a clinician may know), in the paper's order, as labels."""
    return [(label(f), str(attrs[f])) for f in INTAKE_FIELDS if f in attrs]


def attribute_pairs(attrs: dict[str, Any]) -> list[tuple[str, str]]:
    """All profile attributes in the authors' order (for the role-play patient brief)."""
    known = [f for f in ATTRIBUTE_FIELDS if f in attrs]
    rest = [f for f in attrs if f not in ATTRIBUTE_FIELDS]
    return [(label(f), str(attrs[f])) for f in known + rest]


def set_or_clear(s: Any, row: Any, field: str, value: Any, make: Callable[[], Any]) -> None:
    """One stored value row: ``row.field = value``; a new row (``make(field=value)``, e.g. a
    ``functools.partial`` of its table) when there is none; the row deleted when ``value`` is None."""
    if value is None:
        if row is not None:
            s.delete(row)
    elif row is None:
        s.add(make(**{field: value}))
    else:
        setattr(row, field, value)
