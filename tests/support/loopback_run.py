"""The arguments of a ``mindeval run`` whose three roles are OpenAI-compatible models served by a
loopback :class:`~tests.support.fault_server.FaultServer` (``openai/<role>-model``), one call at a
time and quiet: the session, schedule, memory and crash tests' command line, written once."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


def run_args(url: str, target: str | Path, out: Path, *, limit: int, turns: int,
             extra: Sequence[str] = (), clinician: str = "clinician-model") -> list[str]:
    """``run`` arguments for ``target`` (a name or folder) into ``out``; ``extra``: more options."""
    args = ["run", "--target", str(target), "--limit", str(limit), "--turns", str(turns), "--concurrency", "1",
            "--quiet", *extra, "--out", str(out)]
    for role, model in (("patient", "patient-model"), ("clinician", clinician), ("judge", "judge-model")):
        args += [f"--{role}", f"openai/{model}", f"--{role}-api-base", url]
    return args
