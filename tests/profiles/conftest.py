"""Fixtures of the profile tests."""

from __future__ import annotations

import pytest

from mindeval.profiles.pool import load_pool


@pytest.fixture(scope="module")
def pool():
    """The shipped attribute pool."""
    return load_pool()
