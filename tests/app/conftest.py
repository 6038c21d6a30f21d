"""Fixtures of the annotation-app tests (helpers live in ``appkit.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from appkit import make_workspace

from annotation_app.services import DB_ENV, Workspace


@pytest.fixture
def demo_ws(tmp_db_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Workspace]:
    """The demo workspace (fake/echo clinician) on SQLite; the app reads the same database."""
    monkeypatch.setenv(DB_ENV, tmp_db_url)
    ws = make_workspace(tmp_db_url)
    yield ws
    ws.close()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def any_db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh empty database: SQLite in tmp_path, or a new database on the test PostgreSQL."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'store.db'}"
        return
    import uuid

    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    base = request.getfixturevalue("pg_url")
    name = f"mindeval_t_{uuid.uuid4().hex[:12]}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(text(f'CREATE DATABASE "{name}"'))
    yield make_url(base).set(database=name).render_as_string(hide_password=False)
    with admin.connect() as c:
        c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()
