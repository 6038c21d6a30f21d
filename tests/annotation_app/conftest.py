"""Fixtures of the annotation-app tests (helpers live in ``appkit.py``)."""

from __future__ import annotations

from collections.abc import Iterator

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


@pytest.fixture
def page(tmp_path):
    """A Chromium page at 1280x720 whose scripts raise no uncaught error during the test."""
    from browserkit import checked_page  # playwright only where a browser is used

    yield from checked_page(tmp_path)


@pytest.fixture
def browser_page(tmp_path):
    """A Chromium page at 1400x1000."""
    from browserkit import open_browser

    yield from open_browser(tmp_path)
