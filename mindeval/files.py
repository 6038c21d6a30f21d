"""Writing output files atomically: a reader never sees half a file, a crash leaves the old one."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any


def atomic_write(path: str | Path, data: bytes | str) -> None:
    """Write ``data`` to a temporary file beside ``path`` and move it into place."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data.encode("utf-8") if isinstance(data, str) else data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def sha256_file(path: str | Path) -> str:
    """SHA-256 (hex) of a file's bytes, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def sha256_folder(path: str | Path) -> str:
    """SHA-256 over a folder's files (relative path and content hash of each, in path order;
    hidden files and ``__pycache__`` left out): another file, or a changed one, changes it."""
    root = Path(path)
    h = hashlib.sha256()
    for f in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = f.relative_to(root)
        if any(part.startswith(".") or part == "__pycache__" for part in rel.parts):
            continue
        h.update(f"{rel.as_posix()}\0{sha256_file(f)}\n".encode())
    return h.hexdigest()


def write_json(path: str | Path, obj: Any, indent: int = 2) -> None:
    atomic_write(path, json.dumps(obj, indent=indent, ensure_ascii=False) + "\n")
