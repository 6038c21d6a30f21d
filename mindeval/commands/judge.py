"""``mindeval judge``: score saved conversations with another judge (no simulation call)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..cli import at_least, out_dir
from ..config import DEFAULT_CONCURRENCY, DEFAULT_PROMPTS
from ..errors import MindEvalError
from ..records import CONFIG_FILE


def register(sub: argparse._SubParsersAction) -> None:
    from .run import (
        add_cost_options,
        add_judge_options,
        add_overwrite_option,
        add_retry_options,
        add_role_options,
    )

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


def _judge_options(args: argparse.Namespace) -> dict:
    from .run import role_spec

    return {"judge": role_spec(args, "judge").model_dump(), "judge_prompt": args.judge_prompt,
            "judge_retries": args.judge_retries, "judge_samples": args.judge_samples,
            "fewshot": args.fewshot_file, "fewshot_k": args.fewshot_k, "judge_protocol": args.judge_protocol}


def _is_annotations(source: str) -> bool:
    return source == "official" or (Path(source).is_file() and Path(source).name != "interactions.jsonl"
                                    and source.endswith(".jsonl"))


def handle(args: argparse.Namespace) -> int:
    """Exit 0 when every conversation was judged; 1 when a judgment failed."""
    from ..llm.gateway import set_default_policy
    from ..runfile import rejudge_options, slug
    from ..runner import is_complete, run_benchmark, run_sweep
    from .run import retry_policy

    set_default_policy(retry_policy(args))
    sources = list(args.sources)
    annotated = [s for s in sources if _is_annotations(s)]
    if annotated:
        if len(sources) > 1:
            raise MindEvalError("judge the authors' rated interactions on their own (one SOURCE)", field="SOURCE")
        return judge_annotations(annotated[0], args, echo=not args.quiet)
    many = len(sources) > 1
    if many:  # a glob (runs/sweep/*) also matches the sweep's leaderboard folder and other files
        sources = [s for s in sources if is_run_source(s) or print(f"note: skipping {s}: not a run directory",
                                                                   file=sys.stderr)]
        if not sources:
            raise MindEvalError("no run directory among them", field="SOURCE")
    runs = []
    for src in sources:
        name = Path(src).parent.name if Path(src).is_file() else Path(src).name
        runs.append(rejudge_options(src, args.out / slug(name) if many else args.out, _judge_options(args),
                                    db_url=args.db, concurrency=args.concurrency,
                                    progress=not args.quiet and not many, overwrite=args.overwrite,
                                    dry_run=args.dry_run).model_copy(update={"max_cost": args.max_cost}))
    if args.dry_run:
        return print_judge_estimate(runs, dict(args.assume_reply_tokens))
    summaries = run_sweep(runs) if many else [run_benchmark(runs[0])]
    return 0 if all(is_complete(s) for s in summaries) else 1


def is_run_source(source: str) -> bool:
    """A run directory, or a file of one (its ``interactions.jsonl``, ...)."""
    path = Path(source)
    return (path / CONFIG_FILE).is_file() or (path.is_file() and (path.parent / CONFIG_FILE).is_file())


def print_judge_estimate(runs: list, assumed: dict[str, int]) -> int:
    """``--dry-run``: the judge calls, tokens and dollars of each re-judge run (nothing is simulated:
    the other roles make no call); the estimator of ``mindeval run --dry-run``."""
    from ..runner import estimate_run, format_estimate, prepare

    for o in runs:
        prep = prepare(o)
        est = estimate_run(prep, assumed)
        print(format_estimate({"judge": est["judge"]}, len(prep.profiles), prep.config.turns))
    return 0


def judge_annotations(source: str, args: argparse.Namespace, *, echo: bool = True) -> int:
    """Judge rated interactions (the authors' file, 'official', or a study of an annotation
    database with ``--study``): the one judge run over them, for `mindeval judge` and
    `metaeval judge` alike (options that only `metaeval judge` offers keep their defaults here)."""
    from metaeval.judge_runs import JudgeRunOptions, run_judge

    from ..profiles.official import official_file
    from .run import role_spec

    path = str(official_file("human_annotations.jsonl")) if source == "official" else source
    given = {k: getattr(args, k) for k in ("target", "seed", "mapping", "limit", "label", "zeros", "study", "new_run")
             if getattr(args, k, None) is not None}
    opts = JudgeRunOptions(
        annotations=path, judge=args.judge, prompt=args.judge_prompt, fewshot_k=args.fewshot_k,
        fewshot_source=args.fewshot_file, repetitions=args.judge_samples, out=str(args.out), db_url=args.db,
        params=role_spec(args, "judge").model_dump(exclude={"model"}), retries=args.judge_retries,
        concurrency=args.concurrency, judge_protocol=args.judge_protocol, overwrite=getattr(args, "overwrite", False),
        max_cost=getattr(args, "max_cost", None), dry_run=getattr(args, "dry_run", False),
        assume_reply_tokens=dict(getattr(args, "assume_reply_tokens", [])), **given,
    )
    if opts.dry_run:
        run_judge(opts, echo=print)
        return 0
    summary = run_judge(opts, echo=print if echo else None)
    return 0 if summary["n_failed_judgments"] == 0 else 1
