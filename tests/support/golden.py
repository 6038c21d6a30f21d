"""Golden files: compare produced text outputs with the files pinned in a folder.

``MINDEVAL_UPDATE_GOLDEN=1`` rewrites the pinned files (only for an intended change). Every test that
calls :func:`assert_golden` carries the ``golden`` mark, so one command regenerates them all:
``python -m tests.support.golden`` (``MINDEVAL_UPDATE_GOLDEN=1 python -m pytest -m golden tests``).

Outputs write floats to a stated precision (``mindeval.stats.precision``), so they are the same
on any x86-64 machine except where a value sits on a rounding boundary and the CPU's last bit
tips it. ``assert_golden(..., loose_last_digit=True)`` allows exactly that: every decimal number
may differ by one unit in its last written digit; all other text must be byte-identical. Keep
the strict default where exactness is the claim (the paper's published values).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

_DECIMAL = re.compile(r"-?\d+\.(\d+)(?:[eE][-+]?\d+)?")


def _last_digit(text: str) -> float:
    """One unit in the last written digit of ``text`` (e.g. ``0.5833`` → ``0.0001``)."""
    m = _DECIMAL.fullmatch(text)
    exp = int(text.lower().split("e")[1]) if m and "e" in text.lower() else 0
    return 10.0 ** (exp - len(m.group(1))) if m else 0.0


def differences(got: str, want: str, loose_last_digit: bool = False) -> list[str]:
    """What differs between two texts: empty when equal (numbers within a last-digit unit if loose)."""
    if got == want:
        return []
    if not loose_last_digit:
        return ["texts differ"]
    if _DECIMAL.split(got)[::2] != _DECIMAL.split(want)[::2]:
        return ["the text around the numbers differs"]
    a = [m.group() for m in _DECIMAL.finditer(got)]
    b = [m.group() for m in _DECIMAL.finditer(want)]
    if len(a) != len(b):
        return ["a different count of numbers"]
    return [f"{x} != {y}" for x, y in zip(a, b, strict=True)
            if x != y and abs(float(x) - float(y)) > max(_last_digit(x), _last_digit(y)) * 1.000001]


def assert_golden(got: dict[str, str], folder: Path, *, loose_last_digit: bool = False) -> None:
    """Every file of ``folder`` equals ``got[name]`` (byte for byte, or up to one unit in each
    number's last digit with ``loose_last_digit``), and no file is missing or extra."""
    if os.environ.get("MINDEVAL_UPDATE_GOLDEN"):
        folder.mkdir(parents=True, exist_ok=True)
        for stale in folder.iterdir():
            if stale.name not in got:
                stale.unlink()
        for name, text in got.items():
            (folder / name).write_text(text, encoding="utf-8")
    want = {p.name: p.read_text(encoding="utf-8") for p in sorted(folder.iterdir())}
    assert sorted(got) == sorted(want)
    for name in want:
        diff = differences(got[name], want[name], loose_last_digit)
        assert not diff, f"{name}: {diff[:5]}"


def regenerate() -> int:
    """Rewrite every golden folder: the ``golden``-marked tests with ``MINDEVAL_UPDATE_GOLDEN=1``."""
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "MINDEVAL_UPDATE_GOLDEN": "1"}
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", "-m", "golden", "tests"]
    return subprocess.run(cmd, cwd=root, env=env).returncode


if __name__ == "__main__":
    sys.exit(regenerate())
