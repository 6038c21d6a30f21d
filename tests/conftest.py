"""Shared fixtures: the authors' data by path, demo profiles, databases."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("MINDEVAL_SHARED_DATA", ROOT.parent / "shared" / "data" / "mindeval-official"))
IN_CI = os.environ.get("CI", "").lower() == "true"


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


@pytest.fixture(scope="session")
def pg_url() -> str:
    """URL of the PostgreSQL server that scripts/test starts on 127.0.0.1."""
    url = os.environ.get("MINDEVAL_TEST_PG_URL")
    if not url:
        if IN_CI:
            pytest.fail("MINDEVAL_TEST_PG_URL is unset in CI: scripts/test did not start PostgreSQL")
        pytest.skip("no PostgreSQL server (set MINDEVAL_TEST_PG_URL or run scripts/test)")
    return url
