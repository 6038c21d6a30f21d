"""Fixtures for the leaderboard tests: run directories written in tmp_path."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from leaderboard_rundirs import write_run


@pytest.fixture
def make_run(tmp_path: Path) -> Callable[..., Path]:
    """``make_run(name, clinician, scores, **options)`` → a run directory under tmp_path."""

    def make(name: str, clinician: str, scores: dict[str, Any], **kw: Any) -> Path:
        return write_run(tmp_path / name, clinician, scores, **kw)

    return make
