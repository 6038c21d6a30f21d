"""Helpers of the target tests (fixtures live in ``conftest.py`` files)."""

from __future__ import annotations

from pathlib import Path

from mindeval.targets import validate_target


def problems_of(path: Path) -> list[str]:
    """``validate_target``'s problems as the lines the user reads."""
    return [str(p) for p in validate_target(path)]
