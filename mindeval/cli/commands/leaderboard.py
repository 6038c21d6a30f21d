"""``mindeval leaderboard``: rank clinician systems over run directories (paper Table 4)."""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from ...config import DEFAULT_RESAMPLES
from ...errors import MindEvalError
from ...profiles.official import release_arg
from ...study_data import HumanScores
from .. import out_dir


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "leaderboard", help="rank clinician systems from run directories, with CIs and significance clusters",
        description="Per-criterion means with bootstrap confidence intervals, paired significance tests and "
        "Freitag et al. (2023) clusters, severity / length / verbosity breakdowns, and agreement with "
        "leaderboards from other judges or patients. See docs/leaderboard.md.",
    )
    p.add_argument("runs", nargs="+", type=Path, metavar="RUN_DIR", help="run directories from `mindeval run`")
    p.add_argument("--out", type=out_dir(), default=None, metavar="DIR",
                   help="write leaderboard.{md,csv,tex,json} and pairwise/breakdowns/verbosity CSVs here")
    p.add_argument("--resamples", type=int, default=DEFAULT_RESAMPLES, metavar="N",
                   help="bootstrap / permutation resamples of the intervals and tests (>= 2000)")
    p.add_argument("--test", choices=("permutation", "bootstrap"), default="permutation",
                   help="paired significance test (permutation = sign-flip)")
    p.add_argument("--seed", type=int, default=0, help="seed of all resampling (recorded in the JSON)")
    p.add_argument("--alpha", type=float, default=0.05, metavar="LEVEL", help="significance level for the clusters")
    p.add_argument("--sided", choices=("one", "two"), default="one",
                   help="one: one-sided tests of 'the higher mean is better', as the paper's clusters and "
                   "mt-metrics-eval; two: two-sided tests of any difference (default one)")
    p.add_argument("--allow-mixed", action="store_true",
                   help="rank runs with different judge, patient or profile set together")
    p.add_argument("--allow-incomplete", action="store_true",
                   help="rank a system even if some of the benchmark's conversations were not scored "
                   "(every output then names it as INCOMPLETE)")
    p.add_argument("--compare-to", nargs="+", type=Path, default=[], metavar="RUN_DIR",
                   help="runs under other setups (judge / patient swaps): report pairwise accuracy (Table 5)")
    p.add_argument("--by", action="append", default=[], metavar="LABEL",
                   help="also break results down by this profile label of the runs' target, or by 'session': each "
                   "session number of a multi-session target (mean / p99 weight, incident shares, score) (repeatable)")
    p.add_argument("--humans", nargs="+", type=release_arg("human_annotations.jsonl"), default=None, metavar="SRC",
                   help="human ratings of a random sample of each system's conversations (the authors' file, "
                   "'official', a ratings file, or an annotation database URL with --study): add each system's "
                   "mean on the human scale by prediction-powered inference, with 95%% intervals")
    p.add_argument("--study", default=None, help="annotation study when --humans is a database URL")
    p.add_argument("--plan-width", type=float, default=None, metavar="W",
                   help="with --humans: print how many human ratings per system give a 95%% PPI interval "
                   "of the Average of total width W, from the judge-human correlation observed")
    p.add_argument("--with-corrections", action="store_true",
                   help="apply reviewers' corrections (`mindeval correct`, the viewer, the app): the latest per value; "
                   "every output says how many scores and conversations they changed (default: the judge's values only)")
    p.add_argument("--no-report", action="store_true", help="do not print the Markdown report on stdout")
    p.add_argument("--plots", action="store_true",
                   help="also write figures into --out as PNG and SVG: the leaderboard with 95%% intervals and "
                   "clusters, per-dimension bars, and the score by patient severity, by interaction length, "
                   "by any other setting the runs differ in and by each profile label the target declares "
                   "(level shares for categorical scales) (needs the plots extra)")
    # Earlier name, kept working but not shown (elsewhere --quiet means no progress output).
    p.add_argument("--quiet", dest="no_report", action="store_true", help=argparse.SUPPRESS)
    p.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    from ...leaderboard import StatsSettings, build_leaderboard, to_markdown, write_outputs

    if args.study is not None and args.humans is None:
        raise MindEvalError("--study names the annotation study of --humans DATABASE_URL; no --humans given",
                            field="--study")
    if args.plan_width is not None and (args.humans is None or not args.plan_width > 0):
        raise MindEvalError("--plan-width needs --humans and a positive width", field="--plan-width")
    if args.plots:
        from ...extras import require

        if args.out is None:
            raise MindEvalError("--plots writes figures into --out DIR; give --out", field="--plots")
        require("plots", "mindeval leaderboard --plots")
    if len(args.runs) > 1:  # runs/sweep/* also names the sweep's own _leaderboard folder: skipped
        from ..judging import run_sources

        args.runs = run_sources(args.runs, "RUN_DIR")
    settings = StatsSettings(resamples=args.resamples, test=args.test, seed=args.seed, alpha=args.alpha,
                             sided=args.sided)
    lb = build_leaderboard(args.runs, settings, allow_mixed=args.allow_mixed,
                           allow_incomplete=args.allow_incomplete, compare_to=args.compare_to, by=args.by,
                           with_corrections=args.with_corrections)
    if args.humans is not None:
        from ...leaderboard import with_human_scale
        from ...leaderboard.human_scale import check_one_per_profile

        check_one_per_profile(lb.run_data)
        lb = with_human_scale(lb, read_humans(args.humans, args.study, args.runs[0]))
    if not args.no_report:
        print(to_markdown(lb), end="")
    if args.plan_width is not None:
        from ...leaderboard.human_scale import plan_markdown

        print("\n".join(plan_markdown(lb.human_scale, args.plan_width)))
    for w in lb.warnings:
        print(f"warning: {w}", file=sys.stderr)
    if args.out is not None:
        for path in write_outputs(lb, args.out):
            print(f"wrote {path}", file=sys.stderr)
        if args.plots:
            from ...leaderboard.plots import write_plots

            for path in write_plots(lb, args.out):
                print(f"wrote {path}", file=sys.stderr)
    return 0


def read_humans(sources: list[str], study: str | None, run_dir: Path) -> HumanScores:
    """The human ratings as the leaderboard takes them, read as ``metaeval compare`` reads them,
    on the runs' target (its dimensions from the first run)."""
    from metaeval.comparison import CompareOptions, load_humans, resolve_dimensions
    from metaeval.sources import human_scores, load_judge_run

    from ..studies import read_studies

    dims = resolve_dimensions(None, load_judge_run(run_dir)[:1])
    with warnings.catch_warnings(record=True) as caught:  # the readers' notes, one line each as metaeval prints them
        warnings.simplefilter("always")
        humans = human_scores(load_humans(sources, CompareOptions(humans=sources, study=study), dims,
                                          read_studies(sources, study)))
    for w in caught:
        print(f"warning: {w.message}", file=sys.stderr)
    return humans
