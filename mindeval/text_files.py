"""Reading a text file the user named (a prompt, a run file): one clear error naming it."""

from __future__ import annotations

from pathlib import Path

from .errors import MindEvalError


def read_text(path: str | Path, what: str = "file") -> str:
    """A text file's contents; a missing, unreadable or non-UTF-8 file is one :class:`MindEvalError`
    naming the file (``what`` says which kind of file it is)."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise MindEvalError(f"cannot read {what}: {exc.strerror or exc}", path=p) from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MindEvalError(f"{what} is not UTF-8 text (byte {exc.start}: {raw[exc.start:exc.start + 1]!r})",
                            path=p) from None
