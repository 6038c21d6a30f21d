"""``mindeval judge``: score saved conversations with another judge (no simulation call)."""

from __future__ import annotations

import argparse

from ..fields import add_fields
from ..judging import handle


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "judge", help="score saved conversations with another judge (0 simulation calls)",
        description="Judge the conversations of `mindeval run` directories (or the authors' rated interactions: "
        "'official' after `mindeval data download`, or a human_annotations.jsonl file) with another judge. "
        "The output is a run directory that `mindeval leaderboard`, `read_run` and `metaeval compare` read; "
        "re-running the same command resumes it.",
    )
    p.add_argument("sources", nargs="+", metavar="SOURCE",
                   help="a run directory (or its interactions.jsonl), 'official', or an annotations file")
    add_fields(p, "j")  # every option is a RunOptions field's (mindeval/run_options.py)
    p.set_defaults(func=handle)
