"""``mindeval judge``: score saved conversations with another judge (no simulation call)."""

from __future__ import annotations

import argparse

from ..cli import at_least, out_dir
from ..cli.judging import handle
from ..cli.options import (
    add_api_base_option,
    add_cost_options,
    add_judge_options,
    add_overwrite_option,
    add_retry_options,
    add_role_options,
)
from ..config import DEFAULT_CONCURRENCY, DEFAULT_PROMPTS


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
    add_role_options(p, ("judge",), required=True)
    add_api_base_option(p)
    p.add_argument("--judge-prompt", default=None, metavar="REF",
                   help=f"judge prompt (kind/name or a template file) (default: the target's; for mindeval "
                   f"{DEFAULT_PROMPTS['judge']})")
    add_judge_options(p)
    add_retry_options(p)
    p.add_argument("--out", type=out_dir(), required=True, metavar="DIR",
                   help="output run directory (one sub-directory per source when several are given)")
    p.add_argument("--db", default=None, metavar="URL",
                   help="SQLAlchemy URL of the store (default: a copy of the source's run.db in DIR)")
    p.add_argument("--concurrency", type=at_least("--concurrency"), default=DEFAULT_CONCURRENCY,
                   help="judgments in parallel")
    add_overwrite_option(p)
    add_cost_options(p, "judge 120")
    p.add_argument("--quiet", action="store_true", help="no progress output")
    p.set_defaults(func=handle)
