"""Fixtures of the judging tests (shared helpers live in ``tests/support``)."""

from __future__ import annotations

import pytest

from mindeval.records import load_profiles


@pytest.fixture(scope="module")
def profile(demo_profiles_path):
    """The first demo profile."""
    return load_profiles(demo_profiles_path)[0]
