"""Run directories for the viewer tests: a good run, one whose judge fails, one whose clinician fails,
and one whose clinician writes hostile markup."""

from __future__ import annotations

from pathlib import Path

from mindeval.cli import main
from mindeval.llm import fake

HOSTILE = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2"> I feel **on edge** [x](http://e.vil)'


def make_runs(root: Path) -> dict[str, Path]:
    fake.script("hostile", [HOSTILE] * 20)
    specs = {
        "good": ("fake/echo", "fake/judge"),
        "badjudge": ("fake/echo", "fake/error"),
        "badclin": ("fake/error", "fake/judge"),
        "hostile": ("fake/script:hostile", "fake/judge"),
    }
    out = {}
    for name, (clinician, judge) in specs.items():
        out[name] = root / name
        main(["run", "--profiles", "demo", "--turns", "2", "--patient", "fake/echo", "--clinician", clinician,
              "--judge", judge, "--judge-retries", "1", "--limit", "3", "--out", str(out[name]), "--quiet"])
    return out
