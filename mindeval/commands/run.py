"""``mindeval run``: simulate, judge and summarise a benchmark run."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..cli import at_least, out_dir
from ..cli.options import (
    add_api_base_option,
    add_cost_options,
    add_judge_options,
    add_overwrite_option,
    add_retry_options,
    add_role_options,
    add_target_option,
    options_of,
)
from ..config import (
    DEFAULT_CONCURRENCY,
    DEFAULT_PROMPTS,
    DEFAULT_SEED,
    DEFAULT_TURNS,
    OPENING_LINE,
)
from ..errors import MindEvalError
from ..records import TRANSCRIPT_FORMATS


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "run", help="run a benchmark: simulate interactions and judge them",
        description="Simulate patient/clinician interactions for a profile set and judge them. "
        "Re-running the same command resumes without repeating any model call; a refused judgment stays "
        "refused unless --retry-refused (its rounds are counted and shown).",
    )
    add_role_options(p)
    add_api_base_option(p)
    add_retry_options(p)
    add_target_option(p)
    p.add_argument("--profiles", default=None,
                   help="profiles JSONL (authors' schema), 'demo' (shipped) or 'official' (after `mindeval data download`) "
                   "(default: the target's; for mindeval 'demo')")
    p.add_argument("--limit", type=int, default=None, help="use only the first N profiles")
    p.add_argument("--turns", type=int, default=None,
                   help=f"patient + clinician turns after the opening line (default: the target's; for mindeval "
                   f"{DEFAULT_TURNS} after {OPENING_LINE!r})")
    p.add_argument("--config", default=None, metavar="FILE",
                   help="a run file (YAML or JSON: every option by its name; lists of clinicians / judges make a "
                   "sweep) or a run's config.json (replays that run); options given here override it")
    p.add_argument("--out", type=out_dir(), default=None,
                   help="run directory (holds run.db and outputs); for a sweep the parent of one directory per run")
    p.add_argument("--db", default=None, metavar="URL", help="SQLAlchemy URL instead of DIR/run.db")
    p.add_argument("--concurrency", type=at_least("--concurrency"), default=DEFAULT_CONCURRENCY, help="interactions in parallel")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED, help="seed of every model call and of the few-shot draw")
    p.add_argument("--repeats", type=at_least("--repeats"), default=1,
                   help="conversations per profile, each seeded apart (the first keeps the seeds of a run without "
                   "repeats); the leaderboard keeps a profile's conversations together")
    p.add_argument("--patient-prompt", default=None, metavar="REF",
                   help="kind/name (e.g. patient/no_format) or a template file "
                   f"(default: the target's; for mindeval {DEFAULT_PROMPTS['patient']})")
    p.add_argument("--clinician-prompt", default=None, metavar="REF",
                   help="e.g. clinician/four_sentences, or a template file (intake fields only) "
                   f"(default: the target's; for mindeval {DEFAULT_PROMPTS['clinician']})")
    p.add_argument("--judge-prompt", default=None, metavar="REF",
                   help="e.g. judge/length_penalty, or a template file "
                   f"(default: the target's; for mindeval {DEFAULT_PROMPTS['judge']})")
    add_judge_options(p)
    p.add_argument("--transcript-format", choices=TRANSCRIPT_FORMATS, default="mindeval",
                   help="mindeval (default): hardened transcript and a random answer code per judgment; authors: "
                   "exact reproduction with your copy of the authors' template (--judge-prompt FILE, "
                   "--judge-protocol paper): their <member>/<therapist> tags and first-match `Name: score` "
                   "reading. Forgeable by the clinician, labelled not hardened")
    p.add_argument("--new-run", action="store_true", help="start a new run even if --out holds one")
    add_overwrite_option(p)
    add_cost_options(p)
    p.add_argument("--quiet", action="store_true", help="no progress output")
    p.set_defaults(func=handle, _parser=p)


def handle(args: argparse.Namespace) -> int:
    """Exit 0 when every profile was simulated and judged; 1 when something failed or
    --max-cost stopped the run (re-running continues it)."""
    from .precheck import check_run_inputs

    check_run_inputs(args)  # before the heavy imports below
    from ..runner import (
        estimate_run,
        format_estimate,
        is_complete,
        prepare,
        run_benchmark,
        run_sweep,
    )

    opts = options_of(args)
    runs = [opts]
    replay = None
    if args.config:
        from ..runfile import is_sweep, read_run_file, sweep_runs

        keys, replay = read_run_file(args.config)
        given = opts.model_dump()
        keys.update({k: given[k] for k in _explicit(args, opts)})  # options given here override the file
        runs = sweep_runs(keys, args.config)
        if is_sweep(keys):
            runs = [o.model_copy(update={"quiet": True}) for o in runs]
    elif args.out is None:
        raise MindEvalError("give --out DIR (or --config FILE)", field="--out")
    if args.dry_run:
        for o in runs:
            prep = prepare(o)
            est = estimate_run(prep, o.assume_reply_tokens)
            print(format_estimate(est, len(prep.profiles), prep.config.turns))
        return 0
    if replay is not None:
        from ..runfile import check_replay

        check_replay(replay, prepare(runs[0]).config, args.config)
    if len(runs) == 1:
        return 0 if is_complete(run_benchmark(runs[0])) else 1
    summaries = run_sweep(runs)
    _sweep_leaderboards(runs, Path(args.out) if args.out is not None else Path(runs[0].out).parent)
    return 0 if all(is_complete(s) for s in summaries) else 1


def _explicit(args: argparse.Namespace, opts) -> set[str]:
    """The options given on the command line (they differ from the parser's defaults)."""
    base = options_of(args._parser.parse_args(["--out", "."])).model_dump()
    out = {k for k, v in opts.model_dump().items() if v != base[k]}
    if args.out is None:
        out.discard("out")
    return out


SWEEP_LEADERBOARD = "_leaderboard"  # the sweep's leaderboard folder, beside its run directories


def _sweep_leaderboards(runs: list, out: Path) -> None:
    """The sweep's leaderboard over its run directories, in their parent's :data:`SWEEP_LEADERBOARD`
    folder (so ``out/*`` names run directories only; one sub-folder per judge when judges were swept)."""
    from ..leaderboard import StatsSettings, build_leaderboard, to_markdown, write_outputs
    from ..runfile import slug

    by_judge: dict[str, list[Path]] = {}
    for o in runs:
        by_judge.setdefault(o.judge.model, []).append(Path(o.out))
    for judge, dirs in by_judge.items():
        lb = build_leaderboard(dirs, StatsSettings())
        print(to_markdown(lb), end="")
        folder = out / SWEEP_LEADERBOARD
        for path in write_outputs(lb, folder if len(by_judge) == 1 else folder / slug(judge)):
            print(f"wrote {path}", file=sys.stderr)
