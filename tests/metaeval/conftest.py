"""Fixtures for metaeval tests (builders live in metaeval_builders.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from metaeval_builders import FIELDS, SYSTEMS, authors_row


@pytest.fixture
def write_authors(tmp_path: Path) -> Callable[..., Path]:
    """Write rows to a JSONL file and return its path."""
    def _write(rows: list[dict[str, Any]], name: str = "annotations.jsonl") -> Path:
        p = tmp_path / name
        p.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        return p
    return _write


@pytest.fixture
def tiny_authors(write_authors: Callable[..., Path]) -> Path:
    """4 profiles × 3 systems, 3 annotators with varied scores (some 0 = not rated)."""
    users = ["ann-a", "ann-b", "ann-c"]
    rows = []
    n = 0
    for p, name in enumerate(["Ana", "Ben", "Cleo", "Dan"]):
        for s, system in enumerate(SYSTEMS):
            scores = {}
            for k, f in enumerate(FIELDS):
                base = 1 + (p * 3 + s * 2 + k) % 6
                scores[f] = [base, 1 + (base + s) % 6, 1 + (base + p + k) % 6]
            if n % 4 == 0:
                scores["criterion_4"][2] = 0
            rows.append(authors_row(f"int-{n:02d}", name, system, scores, users, age=30 + p))
            n += 1
    return write_authors(rows)


