"""Before spending (docs/running.md#upper-bounds): a run or re-judge planning more than
:data:`~mindeval.config.MAX_PLANNED_CALLS` model calls is refused unless ``--yes``; one planning more
than :data:`~mindeval.config.CONFIRM_CALLS` asks first when its standard input is a terminal."""

from __future__ import annotations

import sys
from typing import TextIO

from ..config import CONFIRM_CALLS, MAX_PLANNED_CALLS
from ..errors import MindEvalError


def planned_calls(runs: list, prepared: list | None = None) -> int:
    """The model calls ``runs`` plan (the ``--dry-run`` estimate's, counted arithmetically; a
    re-judge run's judge calls only), whatever an earlier invocation already made; ``prepared``:
    each run's ``prepare`` when the caller has it."""
    from ..engine.estimate import estimate_run
    from ..engine.prepare import prepare

    total = 0
    for i, o in enumerate(runs):
        est = estimate_run(prepared[i] if prepared else prepare(o))
        total += est["judge"]["calls"] if o.judge_only else sum(e["calls"] for e in est.values())
    return total


def confirm_spend(runs: list, yes: bool, stdin: TextIO | None = None, prepared: list | None = None) -> None:
    """Refuse (exit 2) or ask before ``runs`` spend; ``yes`` (``--yes``): neither."""
    if yes:
        return
    planned = planned_calls(runs, prepared)
    if planned <= CONFIRM_CALLS:
        return
    stdin = stdin or sys.stdin
    if stdin.isatty():
        print(f"this plans {planned:,} model calls (more than {CONFIRM_CALLS:,}; --dry-run shows tokens and "
              "dollars). Go on? [y/N] ", end="", file=sys.stderr, flush=True)
        if stdin.readline().strip().lower() in ("y", "yes"):
            return
        raise MindEvalError("not confirmed: no model was called", field="--yes")
    if planned > MAX_PLANNED_CALLS:
        raise MindEvalError(f"this plans {planned:,} model calls, more than the ceiling of {MAX_PLANNED_CALLS:,} "
                            "(docs/running.md#upper-bounds): check them with --dry-run, then give --yes to run them",
                            field="--yes")
