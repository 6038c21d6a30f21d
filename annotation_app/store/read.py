"""Reading a study's data from outside the app (``metaeval compare``, ``metaeval realism``).

Both functions open the database read-only in spirit (no tables are created) and
return plain data, so callers never touch the app or its tables.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

from pydantic import BaseModel

from mindeval.errors import MindEvalError
from mindeval.store.db import Database, redact_url
from mindeval.targets import DEFAULT_TARGET, load_target

from .exporters import submitted_ratings, user_turns_rows
from .ratings import na_value
from .studies import get_study
from .tables import NA_VALUE

T = TypeVar("T")


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


class StudyRatings(BaseModel):
    study: str
    source: str  # the database URL (password hidden) and study, for messages
    ratings: list[SubmittedRating]
    target: str = DEFAULT_TARGET  # the study's target as load_target takes it: a built-in name or a folder
    na_value: int = NA_VALUE  # how "not applicable" is stored: 0, or below the levels when 0 is a level


def _with_study(url: str, study: str | int, what: str, fn: Callable[[Database, int], T]) -> tuple[str, str, T]:
    """``(study name, its target reference, fn(db, study id))``."""
    db = Database(url, create=False)
    try:
        with db.read() as s:
            row = get_study(s, study)
            study_id, name, target = row.id, row.name, row.target
        return name, target, fn(db, study_id)
    except MindEvalError:
        raise
    except Exception as exc:  # a database without the annotation tables, etc.
        raise MindEvalError(f"cannot read {what} from {redact_url(url)}: {type(exc).__name__}: {exc}") from None
    finally:
        db.close()


def read_ratings(url: str, study: str | int) -> StudyRatings:
    """Submitted ratings of one study (by name or id) of an annotation database, with its target."""
    name, ref, records = _with_study(url, study, "ratings", submitted_ratings)
    g = load_target(ref).guidelines
    out = []
    for r in records:
        item = r["item"]
        meta = item.meta or {}
        out.append(SubmittedRating(
            interaction_id=str(meta.get("id") or item.external_id),
            profile_id=str(meta["profile_id"]) if meta.get("profile_id") else None,
            member_attributes=item.member_attributes or {}, messages=list(item.messages or []),
            clinician_model=item.clinician_model, annotator=r["annotator"], values=r["values"],
            justification=r["justification"], safety_note=r["safety_note"], revision=r["revision"],
            submitted_at=r["submitted_at"], adjudicated=r["adjudicated"],
        ))
    return StudyRatings(study=name, source=f"{redact_url(url)}#study={name}", ratings=out, target=ref,
                        na_value=na_value(g))


def read_user_turns(url: str, study: str | int) -> tuple[str, list[dict[str, Any]]]:
    """``(source, rows)``: human patient turns of a role-play study in the authors' layout."""
    name, _target, rows = _with_study(url, study, "role-play turns", user_turns_rows)
    return f"{redact_url(url)}#study={name}", rows
