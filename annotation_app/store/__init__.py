"""The annotation platform's data layer: tables, migrations and every query on them.

The app (``annotation_app``) keeps only pages and orchestration and calls these
modules; the command lines read a study for ``metaeval`` with :func:`read_ratings` and
:func:`read_user_turns` (plain data, :mod:`mindeval.study_data`), so metaeval never imports the app.

* :mod:`.tables` — SQLAlchemy tables (head revision); :mod:`.migrations` — Alembic.
* :mod:`.people` — names, access codes, sign-in sessions.
* :mod:`.studies` — studies, assignment, progress; :mod:`.ratings` — drafts and submissions.
* :mod:`.roleplay` — role-play session rows (turns live in the run store).
* :mod:`.importers` / :mod:`.exporters` — files in and out; :mod:`.read` — outside readers.
"""

from .tables import (
    NA_VALUE,
    VERSION_TABLE,
    AnnotationBase,
    AnnotatorRow,
    AssignmentRow,
    AuthSessionRow,
    ItemRow,
    RatingRevisionRow,
    RatingRow,
    RatingValueRow,
    RoleplaySessionRow,
    StudyItemRow,
    StudyProfileRow,
    StudyRow,
    as_utc,
    utcnow,
)

__all__ = [
    "NA_VALUE", "VERSION_TABLE", "AnnotationBase", "AnnotatorRow", "AssignmentRow", "AuthSessionRow",
    "ItemRow", "RatingRevisionRow", "RatingRow", "RatingValueRow", "RoleplaySessionRow", "StudyItemRow",
    "StudyProfileRow", "StudyRow", "StudyRatings", "StudyTurns", "SubmittedRating", "as_utc", "read_ratings",
    "read_user_turns", "utcnow",
]


def __getattr__(name: str):
    """The readers are imported on first use (they pull in the run store's turn loader)."""
    if name in ("StudyRatings", "StudyTurns", "SubmittedRating", "read_ratings", "read_user_turns"):
        from . import read

        return getattr(read, name)
    raise AttributeError(name)
