"""Shared fixtures: the authors' data by path, demo profiles, databases."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("MINDEVAL_SHARED_DATA", ROOT.parent / "shared" / "data" / "mindeval-official"))
IN_CI = os.environ.get("CI", "").lower() == "true"

if "PYTEST_XDIST_WORKER" in os.environ:
    # Parallel workers split the cores for the embedded model (each worker and every app server it
    # starts inherit this): llama.cpp's threads spin at each barrier, so N workers each running the
    # model on every core are several times slower than with one thread each (same replies).
    _workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    os.environ.setdefault("MINDEVAL_EMBEDDED_THREADS", str(max(1, (os.cpu_count() or 1) // _workers)))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The authors' data release beside the checkout (read by path, never copied)."""
    if not (SHARED_DATA / "human_annotations.jsonl").is_file():
        pytest.skip(f"the authors' data release is not at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture(scope="session")
def demo_profiles_path() -> Path:
    return ROOT / "data" / "demo_profiles.jsonl"


@pytest.fixture
def tmp_db_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'test.db'}"


def _worker() -> str:
    """This pytest-xdist worker's id (``gw0``, ``gw1``, ...), or ``main`` without xdist."""
    return os.environ.get("PYTEST_XDIST_WORKER", "main")


@pytest.fixture(scope="session", autouse=True)
def _own_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Each xdist worker gets its own empty MINDEVAL_CACHE_DIR (no two workers write one cache)."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        yield
        return
    mp = pytest.MonkeyPatch()
    mp.setenv("MINDEVAL_CACHE_DIR", str(tmp_path_factory.mktemp("mindeval-cache")))
    yield
    mp.undo()


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """URL of this worker's own database on the PostgreSQL server that scripts/test starts on
    127.0.0.1 (``<database>_<worker>``, created empty for the session and dropped after it), so
    parallel workers never share tables."""
    url = os.environ.get("MINDEVAL_TEST_PG_URL")
    if not url:
        if IN_CI:
            pytest.fail("MINDEVAL_TEST_PG_URL is unset in CI: scripts/test did not start PostgreSQL")
        pytest.skip("no PostgreSQL server (set MINDEVAL_TEST_PG_URL or run scripts/test)")
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    base = make_url(url)
    name = f"{base.database}_{_worker()}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))  # left by a killed run
        c.execute(text(f'CREATE DATABASE "{name}"'))
    yield base.set(database=name).render_as_string(hide_password=False)
    with admin.connect() as c:
        c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


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
