"""``mindeval correct RUN_DIR``: override a judge's value with a reason, kept with its provenance.

Thin over :func:`mindeval.corrections.correct`; ``--list`` prints every correction of the run.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ...errors import MindEvalError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "correct", help="correct a judge's score, reply level or question answer (with a reason; the judge's "
        "record is kept)",
        description="Record a human correction of one judge value in the run store: a conversation's score on "
        "--axis, one reply's level or flag (--reply N, reply-level targets) or one question's answer "
        "(--question Q, item-level targets). Every correction keeps who, when, from, to and why; the judge's "
        "judgments are never changed. `mindeval leaderboard --with-corrections` applies the latest per value. "
        "See docs/corrections.md.")
    p.add_argument("run", type=Path, metavar="RUN_DIR", help="a run directory from `mindeval run`")
    p.add_argument("--interaction", metavar="ID", help="the conversation's interaction id")
    p.add_argument("--axis", metavar="AXIS", help="the axis (dimension code); with --reply also a flag id")
    p.add_argument("--to", metavar="VALUE", help="the corrected value: a score or level (id, label or number), "
                   "'not_relevant' where the axis allows it, a question's answer id, or yes/no for a flag")
    p.add_argument("--reason", metavar="TEXT", help="why the judge's value is wrong (required)")
    p.add_argument("--reply", type=int, default=None, metavar="N", help="correct the N-th clinician reply (from 1)")
    p.add_argument("--question", default=None, metavar="Q", help="correct the answer to question Q of --axis")
    p.add_argument("--sample", type=int, default=None, metavar="N", help="one judge sample (default: every sample)")
    p.add_argument("--who", type=_reviewer_name, default=None, metavar="NAME",
                   help="the reviewer's name, recorded as self-declared (default: the OS user; an empty name is refused)")
    p.add_argument("--db", default=None, metavar="URL", help="SQLAlchemy URL of the run store (default: RUN_DIR/run.db)")
    p.add_argument("--list", action="store_true", help="print the run's corrections (who, when, from, to, why) and exit")
    p.set_defaults(func=handle)


def _reviewer_name(text: str) -> str:
    """``--who``: a name; an empty or blank one is refused (leave ``--who`` out to record the OS user)."""
    if not text.strip():
        raise MindEvalError("an empty name; give the reviewer's name, or leave --who out to record the OS user",
                            field="--who")
    return text


def handle(args: argparse.Namespace) -> int:
    from ...corrections import CorrectionRequest, correct, describe, run_corrections

    if args.list:
        for c in run_corrections(args.run, args.db):
            print(describe(c))
        return 0
    for name in ("interaction", "axis", "to", "reason"):
        if getattr(args, name) is None:
            raise MindEvalError("required (or --list)", field=f"--{name}")
    req = CorrectionRequest(interaction_id=args.interaction, axis=args.axis, to=args.to, reason=args.reason,
                            who=args.who, reply=args.reply, question=args.question, sample=args.sample)
    for c in correct(args.run, req, args.db):
        print(describe(c))
    return 0
