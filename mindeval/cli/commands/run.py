"""``mindeval run``: simulate, judge and summarise a benchmark run."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ...errors import MindEvalError
from ..fields import add_fields, given, merged
from ..options import options_of


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "run", help="run a benchmark: simulate interactions and judge them",
        description="Simulate patient/clinician interactions for a profile set and judge them. "
        "Re-running the same command resumes without repeating any model call; a refused judgment stays "
        "refused unless --retry-refused (its rounds are counted and shown).",
    )
    add_fields(p, "r")  # every option but --config is a RunOptions field's (mindeval/run_options.py)
    p.add_argument("--config", default=None, metavar="FILE",
                   help="a run file (YAML or JSON: every option by its name; lists of clinicians / judges make a "
                   "sweep) or a run's config.json (replays that run); options given here override it")
    p.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    """Exit 0 when every profile was simulated and judged; 1 when something failed or
    --max-cost stopped the run (re-running continues it)."""
    from .precheck import check_run_inputs

    check_run_inputs(args)  # before the heavy imports below
    from ...engine.estimate import estimate_run, format_estimate
    from ...engine.export import is_complete
    from ...engine.loop import run_benchmark, run_sweep
    from ...engine.prepare import prepare

    opts = options_of(args)
    runs = [opts]
    replay = None
    if args.config:
        from ...runfile import is_sweep, read_run_file, sweep_runs

        keys, replay = read_run_file(args.config)
        keys = merged(keys, given(args))  # an option given here wins over the file, at any value
        runs = sweep_runs(keys, args.config)
        if is_sweep(keys):
            runs = [o.model_copy(update={"quiet": True}) for o in runs]
    elif "out" not in given(args):
        raise MindEvalError("give --out DIR (or --config FILE)", field="--out")
    if opts.dry_run:
        for o in runs:
            prep = prepare(o)
            est = estimate_run(prep, o.assume_reply_tokens)
            c = prep.config
            print(format_estimate(est, len(prep.profiles), c.turns, c.target.sessions, c.repeats))
        return 0
    from ..confirm import confirm_spend

    preps = [prepare(o) for o in runs]  # once: every check before the first call, and the runs, use it
    confirm_spend(runs, opts.yes or all(o.yes for o in runs), prepared=preps)
    if replay is not None:
        from ...runfile import check_replay

        check_replay(replay, preps[0].config, args.config)
    if len(runs) == 1:
        return 0 if is_complete(run_benchmark(runs[0], prepared=preps[0])) else 1
    summaries = run_sweep(runs, prepared=preps)
    _sweep_leaderboards(runs, Path(opts.out) if "out" in given(args) else Path(runs[0].out).parent)
    return 0 if all(is_complete(s) for s in summaries) else 1


SWEEP_LEADERBOARD = "_leaderboard"  # the sweep's leaderboard folder, beside its run directories


def _sweep_leaderboards(runs: list, out: Path) -> None:
    """The sweep's leaderboard over its run directories, in their parent's :data:`SWEEP_LEADERBOARD`
    folder (so ``out/*`` names run directories only; one sub-folder per judge when judges were swept)."""
    from ...leaderboard import StatsSettings, build_leaderboard, to_markdown, write_outputs
    from ...runfile import slug

    by_judge: dict[str, list[Path]] = {}
    for o in runs:
        by_judge.setdefault(o.judge.model, []).append(Path(o.out))
    for judge, dirs in by_judge.items():
        lb = build_leaderboard(dirs, StatsSettings())
        print(to_markdown(lb), end="")
        folder = out / SWEEP_LEADERBOARD
        for path in write_outputs(lb, folder if len(by_judge) == 1 else folder / slug(judge)):
            print(f"wrote {path}", file=sys.stderr)
