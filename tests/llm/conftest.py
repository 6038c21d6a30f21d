"""Fixtures of the provider tests: a fault server on 127.0.0.1 and fake API keys."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from provkit import ANTHROPIC_SECRET, SECRET

from tests.support.fault_server import FaultServer


@pytest.fixture
def server() -> Iterator[FaultServer]:
    with FaultServer() as srv:
        yield srv


@pytest.fixture(autouse=True)
def api_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_SECRET)
