"""The command lines read an annotation study for ``metaeval``: through the app's data package
(``annotation_app.store``), handing metaeval plain data (:mod:`mindeval.study_data`), so
metaeval never imports the app (the layers: engine < metaeval < app < command lines)."""

from __future__ import annotations

from collections.abc import Iterable

from ..errors import MindEvalError
from ..study_data import StudyRatings, StudyTurns


def is_database(source: str | None) -> bool:
    return source is not None and "://" in source


def read_studies(sources: Iterable[str | None], study: str | None) -> dict[str, StudyRatings]:
    """The ratings of ``study`` in each database URL among ``sources`` (files are left to metaeval);
    without a study nothing is read, and metaeval says that a database source needs ``--study``."""
    urls = [s for s in dict.fromkeys(sources) if s is not None and is_database(s)]
    if study and not urls:
        raise MindEvalError(f"--study {study!r} names a study of an annotation database, and no source given is "
                            "a database URL (files hold no studies)", field="--study")
    if not study:
        return {}
    from annotation_app.store import read_ratings

    return {url: read_ratings(url, study) for url in urls}


def read_turns(source: str, study: str | None) -> StudyTurns | None:
    """The human patient turns of role-play ``study`` when ``source`` is a database URL."""
    if study and not is_database(source):
        raise MindEvalError(f"--study {study!r} names a role-play study of an annotation database, and the "
                            "turns source is a file, not a database URL", field="--study")
    if not study:
        return None
    from annotation_app.store import read_user_turns

    return read_user_turns(source, study)
