"""Shared fixtures: the authors' data by path, demo profiles, databases."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import pytest

from tests.support.fault_server import FaultServer

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


@pytest.fixture
def annotations(shared_data: Path) -> str:
    """The authors' ``human_annotations.jsonl`` (its path as a string, as the command lines take it)."""
    return str(shared_data / "human_annotations.jsonl")


@pytest.fixture(scope="module")
def server() -> Iterator[FaultServer]:
    """A loopback model server (``tests/support/fault_server.py``) shared by a module's tests; the
    ``tests/llm`` conftest gives each of its tests a fresh one instead."""
    with FaultServer() as srv:
        yield srv


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


class PgDatabases:
    """Databases on the test PostgreSQL server, each created empty (dropped first if a killed run
    left it) and dropped WITH (FORCE) when its ``fresh`` block ends."""

    def __init__(self, server_url: str) -> None:
        from sqlalchemy import create_engine

        self.server_url = server_url
        self.admin = create_engine(server_url, isolation_level="AUTOCOMMIT")

    def _drop(self, name: str) -> None:
        from sqlalchemy import text

        with self.admin.connect() as c:
            c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))

    @contextmanager
    def fresh(self, name: str) -> Iterator[str]:
        """The URL of a new empty database ``name``, dropped after the block."""
        from sqlalchemy import text
        from sqlalchemy.engine import make_url

        self._drop(name)
        with self.admin.connect() as c:
            c.execute(text(f'CREATE DATABASE "{name}"'))
        try:
            yield make_url(self.server_url).set(database=name).render_as_string(hide_password=False)
        finally:
            self._drop(name)

    def own(self, prefix: str) -> AbstractContextManager[str]:
        """``fresh`` on this xdist worker's own name (``prefix_gw1``): workers never share one."""
        return self.fresh(f"{prefix}_{_worker()}")


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgDatabases]:
    """The PostgreSQL server that scripts/test starts on 127.0.0.1 (skipped without one, failed in CI)."""
    url = os.environ.get("MINDEVAL_TEST_PG_URL")
    if not url:
        if IN_CI:
            pytest.fail("MINDEVAL_TEST_PG_URL is unset in CI: scripts/test did not start PostgreSQL")
        pytest.skip("no PostgreSQL server (set MINDEVAL_TEST_PG_URL or run scripts/test)")
    server = PgDatabases(url)
    yield server
    server.admin.dispose()


@pytest.fixture(scope="session")
def pg_url(pg_server: PgDatabases) -> Iterator[str]:
    """URL of this worker's own database on the test PostgreSQL server (``<database>_<worker>``,
    created empty for the session and dropped after it), so parallel workers never share tables."""
    from sqlalchemy.engine import make_url

    with pg_server.own(make_url(pg_server.server_url).database) as url:
        yield url


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def any_db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh empty database: SQLite in tmp_path, or a new database on the test PostgreSQL."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'store.db'}"
        return
    import uuid

    with request.getfixturevalue("pg_server").fresh(f"mindeval_t_{uuid.uuid4().hex[:12]}") as url:
        yield url
