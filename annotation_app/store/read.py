"""Reading a study's data from outside the app (the command lines, for ``metaeval compare``,
``judge`` and ``realism``).

Both functions open the database read-only in spirit (no tables are created) and return plain
data (:mod:`mindeval.study_data`), which the command lines hand to ``metaeval``: it never
imports the app.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from mindeval.errors import MindEvalError
from mindeval.records import ReplyRating
from mindeval.store.db import Database, redact_url
from mindeval.study_data import RaterGold, StudyRatings, StudyTurns, SubmittedRating
from mindeval.targets import load_target

from . import gold
from .exporters import submitted_ratings, user_turns_rows
from .ratings import na_value
from .studies import get_study

T = TypeVar("T")


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
            answers=r["answers"], replies=[ReplyRating.model_validate(x) for x in r["replies"]]
            if r["replies"] is not None else None, memory=(meta.get("session") or {}).get("memory"),
        ))
    n_gold, per = _with_study(url, study, "gold answers", lambda db, sid: gold.scores(db, sid, na_value(g)))[2]
    return StudyRatings(study=name, source=f"{redact_url(url)}#study={name}", ratings=out, target=ref,
                        na_value=na_value(g), gold_items=n_gold,
                        gold={who: RaterGold(right=k, answered=n) for who, (k, n) in per.items()})


def read_user_turns(url: str, study: str | int) -> StudyTurns:
    """The human patient turns of a role-play study, in the authors' layout."""
    name, _target, rows = _with_study(url, study, "role-play turns", user_turns_rows)
    return StudyTurns(source=f"{redact_url(url)}#study={name}", rows=rows)
