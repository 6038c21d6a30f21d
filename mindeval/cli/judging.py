"""Judging saved conversations from a command line: run directories are re-judged, rated
interactions (the authors' file, 'official', a study) get the one judge run over them. Shared by
``mindeval judge`` and ``metaeval judge`` (one implementation, two sets of option names)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import MindEvalError
from ..records import CONFIG_FILE


def _is_annotations(source: str) -> bool:
    return source == "official" or (Path(source).is_file() and Path(source).name != "interactions.jsonl"
                                    and source.endswith(".jsonl"))


def handle(args: argparse.Namespace) -> int:
    """Exit 0 when every conversation was judged; 1 when a judgment failed."""
    from ..engine.export import is_complete
    from ..engine.loop import run_benchmark, run_sweep
    from .options import options_of

    sources = list(args.sources)
    annotated = [s for s in sources if _is_annotations(s)]
    if annotated:
        if len(sources) > 1:
            raise MindEvalError("judge the authors' rated interactions on their own (one SOURCE)", field="SOURCE")
        return judge_annotations(annotated[0], args, echo=not options_of(args).quiet)
    many = len(sources) > 1
    if many:
        sources = run_sources(sources, "SOURCE")
    cli = options_of(args)
    if cli.dry_run:
        return print_judge_estimate(_rejudge_runs(sources, args, many), cli.assume_reply_tokens)
    from .confirm import confirm_spend

    confirm_spend(_rejudge_runs(sources, args, many, planning=True), cli.yes)  # before the store is copied
    runs = _rejudge_runs(sources, args, many)
    summaries = run_sweep(runs) if many else [run_benchmark(runs[0])]
    return 0 if all(is_complete(s) for s in summaries) else 1


def _rejudge_runs(sources: list[str], args: argparse.Namespace, many: bool, *, planning: bool = False) -> list:
    """The re-judge run of each source (``planning``: as a dry run, reading the source's store in place)."""
    from ..runfile import rejudge_options, slug
    from .options import options_of

    cli = options_of(args)
    runs = []
    for src in sources:
        name = Path(src).parent.name if Path(src).is_file() else Path(src).name
        out = cli.out / slug(name) if many else cli.out
        runs.append(rejudge_options(src, options_of(args, out=out, quiet=cli.quiet or many,
                                                    **({"dry_run": True} if planning else {}))))
    return runs


def run_sources(sources: list, field: str) -> list:
    """Of several sources, the run directories (and files of one): a glob (``runs/sweep/*``) also
    matches the sweep's ``_leaderboard`` folder and other files, each skipped with a note on stderr.
    A path that does not exist is kept (its reader refuses it); none left is an error."""
    kept = [s for s in sources if is_run_source(str(s)) or not Path(s).exists()
            or print(f"note: skipping {s}: not a run directory", file=sys.stderr)]
    if not kept:
        raise MindEvalError("no run directory among them", field=field)
    return kept


def is_run_source(source: str) -> bool:
    """A run directory, or a file of one (its ``interactions.jsonl``, ...)."""
    path = Path(source)
    return (path / CONFIG_FILE).is_file() or (path.is_file() and (path.parent / CONFIG_FILE).is_file())


def print_judge_estimate(runs: list, assumed: dict[str, int]) -> int:
    """``--dry-run``: the judge calls, tokens and dollars of each re-judge run over the source run's
    stored transcripts and session notes (nothing is simulated: the other roles make no call)."""
    from ..engine.prepare import prepare
    from ..judge_estimate import estimate_rejudge

    for o in runs:
        assert o.db is not None  # a re-judge's dry run reads the source's store (mindeval.runfile.rejudge_options)
        print(estimate_rejudge(prepare(o), o.db, assumed.get("judge")))
    return 0


def judge_annotations(source: str, args: argparse.Namespace, *, echo: bool = True) -> int:
    """Judge rated interactions (the authors' file, 'official', or a study of an annotation
    database with ``--study``): the one judge run over them, for `mindeval judge` and
    `metaeval judge` alike (options that only `metaeval judge` offers keep their defaults here)."""
    from metaeval.judge_runs import run_judge

    from ..profiles.official import official_file
    from .options import options_of
    from .studies import read_studies

    path = str(official_file("human_annotations.jsonl")) if source == "official" else source
    opts = options_of(args, annotations=path)
    studies = read_studies([opts.annotations, opts.fewshot_file], opts.study)
    if opts.dry_run:
        run_judge(opts, echo=print, studies=studies)
        return 0
    summary = run_judge(opts, echo=print if echo else None, studies=studies)
    return 0 if summary["n_failed_judgments"] == 0 else 1
