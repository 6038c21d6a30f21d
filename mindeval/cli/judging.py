"""Judging saved conversations from a command line: run directories are re-judged, rated
interactions (the authors' file, 'official', a study) get the one judge run over them. Shared by
``mindeval judge`` and ``metaeval judge`` (one implementation, two sets of option names)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import MindEvalError


def _judge_options(args: argparse.Namespace) -> dict:
    from .options import role_spec

    return {"judge": role_spec(args, "judge").model_dump(), "judge_prompt": args.judge_prompt,
            "judge_retries": args.judge_retries, "judge_samples": args.judge_samples,
            "fewshot": args.fewshot_file, "fewshot_k": args.fewshot_k, "judge_protocol": args.judge_protocol}


def _is_annotations(source: str) -> bool:
    return source == "official" or (Path(source).is_file() and Path(source).name != "interactions.jsonl"
                                    and source.endswith(".jsonl"))


def handle(args: argparse.Namespace) -> int:
    """Exit 0 when every conversation was judged; 1 when a judgment failed."""
    from ..runfile import rejudge_options, slug
    from ..runner import is_complete, run_benchmark, run_sweep
    from .options import retry_policy, with_policy

    sources = list(args.sources)
    annotated = [s for s in sources if _is_annotations(s)]
    if annotated:
        if len(sources) > 1:
            raise MindEvalError("judge the authors' rated interactions on their own (one SOURCE)", field="SOURCE")
        return judge_annotations(annotated[0], args, echo=not args.quiet)
    many = len(sources) > 1
    runs = []
    for src in sources:
        name = Path(src).parent.name if Path(src).is_file() else Path(src).name
        runs.append(with_policy(rejudge_options(src, args.out / slug(name) if many else args.out,
                                                _judge_options(args), db_url=args.db, concurrency=args.concurrency,
                                                progress=not args.quiet and not many), retry_policy(args)))
    summaries = run_sweep(runs) if many else [run_benchmark(runs[0])]
    return 0 if all(is_complete(s) for s in summaries) else 1


def judge_annotations(source: str, args: argparse.Namespace, *, echo: bool = True) -> int:
    """Judge rated interactions (the authors' file, 'official', or a study of an annotation
    database with ``--study``): the one judge run over them, for `mindeval judge` and
    `metaeval judge` alike (options that only `metaeval judge` offers keep their defaults here)."""
    from metaeval.judge_runs import JudgeRunOptions, run_judge

    from ..profiles.official import official_file
    from .options import retry_policy, role_spec

    path = str(official_file("human_annotations.jsonl")) if source == "official" else source
    given = {k: getattr(args, k) for k in ("target", "seed", "mapping", "limit", "label", "zeros", "study", "new_run")
             if getattr(args, k, None) is not None}
    opts = JudgeRunOptions(
        annotations=path, judge=args.judge, prompt=args.judge_prompt, fewshot_k=args.fewshot_k,
        fewshot_source=args.fewshot_file, repetitions=args.judge_samples, out=str(args.out), db_url=args.db,
        params={**role_spec(args, "judge").model_dump(exclude={"model"}), "retry": retry_policy(args)},
        retries=args.judge_retries,
        concurrency=args.concurrency, judge_protocol=args.judge_protocol, **given,
    )
    summary = run_judge(opts, echo=print if echo else None)
    return 0 if summary["n_failed_judgments"] == 0 else 1
