"""Golden files: compare produced text outputs with the files pinned in a folder.

``MINDEVAL_UPDATE_GOLDEN=1`` rewrites the pinned files (only for an intended change).
"""

from __future__ import annotations

import os
from pathlib import Path


def assert_golden(got: dict[str, str], folder: Path) -> None:
    """Every file of ``folder`` equals ``got[name]`` byte for byte, and no file is missing or extra."""
    if os.environ.get("MINDEVAL_UPDATE_GOLDEN"):
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in got.items():
            (folder / name).write_text(text, encoding="utf-8")
    want = {p.name: p.read_text(encoding="utf-8") for p in sorted(folder.iterdir())}
    assert sorted(got) == sorted(want)
    for name in want:
        assert got[name] == want[name], name
