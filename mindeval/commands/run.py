"""``mindeval run``: simulate, judge and summarise a benchmark run."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..cli import at_least, out_dir
from ..config import (
    DEFAULT_CONCURRENCY,
    DEFAULT_FEWSHOT_K,
    DEFAULT_JUDGE_RETRIES,
    DEFAULT_JUDGE_SAMPLES,
    DEFAULT_MAX_RETRIES,
    DEFAULT_MODEL,
    DEFAULT_PROMPTS,
    DEFAULT_RETRY_BUDGET_S,
    DEFAULT_SEED,
    DEFAULT_TIMEOUT_S,
    DEFAULT_TURNS,
    JUDGE_PROTOCOL,
    OPENING_LINE,
)
from ..errors import MindEvalError
from ..profiles.official import release_arg
from ..records import DEFAULT_TARGET, PROTOCOLS, ROLES, TRANSCRIPT_FORMATS
from ..sampling import sampling_arg

MODEL_OPTIONS = ("temperature", "max-tokens", "reasoning-effort", "api-base")


def add_role_options(parser: argparse.ArgumentParser, roles=ROLES, *, required: bool = False,
                     plain_aliases: bool = False) -> None:
    """``--ROLE MODEL``, ``--ROLE-temperature/-max-tokens/-reasoning-effort/-api-base`` and
    the call settings ``--ROLE-timeout/-rpm/-tpm``.

    ``plain_aliases`` also accepts the earlier ``--temperature`` etc. (hidden) for a single role.
    """
    for role in roles:
        g = parser.add_argument_group(f"{role} model")
        g.add_argument(f"--{role}", default=None if required else DEFAULT_MODEL, required=required,
                       metavar="MODEL", help=f"litellm model string for the {role}")
        g.add_argument(f"--{role}-temperature", type=sampling_arg(f"--{role}-temperature", "temperature"),
                       default=None, metavar="T", help="sampling temperature, 0 to 2")
        g.add_argument(f"--{role}-max-tokens", type=int, default=None, metavar="N")
        g.add_argument(f"--{role}-reasoning-effort", default=None, metavar="LEVEL",
                       help="low | medium | high (providers that support it)")
        g.add_argument(f"--{role}-api-base", default=None, metavar="URL",
                       help="OpenAI-compatible server URL (e.g. http://127.0.0.1:8000/v1)")
        for name in MODEL_OPTIONS if plain_aliases else ():
            g.add_argument(f"--{name}", dest=f"{role}_{name.replace('-', '_')}", default=argparse.SUPPRESS,
                           type=sampling_arg("--temperature", "temperature") if name == "temperature" else int if name == "max-tokens" else str,
                           help=argparse.SUPPRESS)
        g.add_argument(f"--{role}-timeout", type=seconds(f"--{role}-timeout"), default=DEFAULT_TIMEOUT_S[role],
                       metavar="S", help=f"seconds per request before it is retried (default {DEFAULT_TIMEOUT_S[role]:g})")
        g.add_argument(f"--{role}-rpm", type=at_least(f"--{role}-rpm"), default=None, metavar="N",
                       help="at most N requests per minute for this role (shared by all workers)")
        g.add_argument(f"--{role}-tpm", type=at_least(f"--{role}-tpm"), default=None, metavar="N",
                       help="at most N tokens per minute for this role (shared by all workers)")


def add_retry_options(parser: argparse.ArgumentParser) -> None:
    """``--max-retries`` and ``--retry-budget-s`` for transient provider errors."""
    g = parser.add_argument_group("retries (429, 408, 5xx, connection errors, timeouts)")
    g.add_argument("--max-retries", type=at_least("--max-retries", 0), default=DEFAULT_MAX_RETRIES, metavar="N",
                   help=f"retries per call after the first attempt (default {DEFAULT_MAX_RETRIES})")
    g.add_argument("--retry-budget-s", type=seconds("--retry-budget-s"), default=DEFAULT_RETRY_BUDGET_S, metavar="S",
                   help=f"total seconds one call may spend on attempts and waits (default {DEFAULT_RETRY_BUDGET_S:g})")


def retry_policy(args: argparse.Namespace):
    from ..config import RetryPolicy

    return RetryPolicy(max_retries=args.max_retries, budget_s=args.retry_budget_s)


def seconds(option: str):
    """An argparse ``type``: a positive number of seconds."""

    def parse(text: str) -> float:
        value = float(text)
        if not value > 0:
            raise MindEvalError(f"must be more than 0 seconds, got {text}", field=option)
        return value

    parse.__name__ = "float"
    return parse


def role_spec(args: argparse.Namespace, role: str):
    from ..llm.gateway import ModelSpec

    a = vars(args)
    return ModelSpec(
        model=a[role], temperature=a[f"{role}_temperature"], max_tokens=a[f"{role}_max_tokens"],
        reasoning_effort=a[f"{role}_reasoning_effort"], api_base=a[f"{role}_api_base"],
        timeout_s=a.get(f"{role}_timeout"), rpm=a.get(f"{role}_rpm"), tpm=a.get(f"{role}_tpm"),
    )


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "run", help="run a benchmark: simulate interactions and judge them",
        description="Simulate patient/clinician interactions for a profile set and judge them. "
        "Re-running the same command resumes without repeating any model call.",
    )
    add_role_options(p)
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


def add_overwrite_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--overwrite", action="store_true",
                   help="run even where --out holds a run's outputs without its store run.db (or with another "
                   "run's): their calls are bought again and the outputs replaced")


def add_cost_options(p: argparse.ArgumentParser, roles: str = "patient 80, clinician 150, judge 120") -> None:
    """``--max-cost``, ``--dry-run`` and ``--assume-reply-tokens`` (``mindeval run``/``judge``, ``metaeval judge``)."""
    p.add_argument("--max-cost", type=float, default=None, metavar="USD",
                   help="stop cleanly (resumable) before the run's spend could exceed USD (default: no cap)")
    p.add_argument("--dry-run", action="store_true",
                   help="print the number of calls and estimated tokens and dollars per role; call no model")
    p.add_argument("--assume-reply-tokens", type=role_tokens, action="append", default=[], metavar="ROLE=N",
                   help=f"for --dry-run: the reply length of ROLE in tokens (default {roles}; repeatable)")


def role_tokens(text: str) -> tuple[str, int]:
    """``ROLE=N`` of ``--assume-reply-tokens``."""
    role, _, n = text.partition("=")
    if role not in ("patient", "clinician", "judge") or not n.isdigit() or int(n) < 1:
        raise MindEvalError(f"expected ROLE=N with ROLE patient, clinician or judge and N >= 1, got {text!r}",
                            field="--assume-reply-tokens")
    return role, int(n)


def add_target_option(p: argparse.ArgumentParser) -> None:
    """``--target NAME|PATH`` (``mindeval run``, ``metaeval judge``, ``mindeval app admin create-study``)."""
    p.add_argument("--target", default=DEFAULT_TARGET, metavar="NAME|PATH",
                   help="the benchmark: a built-in target (`mindeval targets list`) or a target folder")


def add_judge_options(p: argparse.ArgumentParser, *, fewshot_file_help: str = "") -> None:
    """The judge options ``mindeval run`` and ``metaeval judge`` share, under the same names."""
    p.add_argument("--judge-retries", type=at_least("--judge-retries"), default=DEFAULT_JUDGE_RETRIES,
                   help="attempts for an unparseable judge reply before it is recorded as failed")
    p.add_argument("--judge-samples", type=at_least("--judge-samples"), default=DEFAULT_JUDGE_SAMPLES,
                   help="judge samples per interaction (30 in the paper's meta-evaluation)")
    p.add_argument("--fewshot-file", default=None, metavar="FILE", type=release_arg("human_annotations.jsonl"),
                   help="annotated file (authors' human_annotations.jsonl schema; 'official': the downloaded one) "
                   "to draw few-shot examples from"
                   + fewshot_file_help)
    p.add_argument("--fewshot-k", type=at_least("--fewshot-k", 0), default=DEFAULT_FEWSHOT_K, metavar="K",
                   help="few-shot examples shown to the judge: annotated interactions drawn (seeded) from the few-shot "
                   "file, with the annotators' mean scores; an example is never itself judged")
    p.add_argument("--judge-protocol", choices=PROTOCOLS, default=JUDGE_PROTOCOL,
                   help="mindeval (default): integer JSON scores; paper: the authors' few-shot examples with our "
                   "instructions (their 5 rated interactions from human_annotations.jsonl, `Name: score` replies, "
                   "fractional scores, high reasoning; our instructions, rubric wording and transcript layout, so "
                   "not the authors' judge)")
    # Earlier names, kept working but not shown.
    p.add_argument("--judge-fewshot", dest="fewshot_file", default=argparse.SUPPRESS, help=argparse.SUPPRESS)


def handle(args: argparse.Namespace) -> int:
    """Exit 0 when every profile was simulated and judged; 1 when something failed or
    --max-cost stopped the run (re-running continues it)."""
    from .precheck import check_run_inputs

    check_run_inputs(args)  # before the heavy imports below
    from ..llm.gateway import set_default_policy
    from ..runner import (
        estimate_run,
        format_estimate,
        is_complete,
        prepare,
        run_benchmark,
        run_sweep,
    )

    set_default_policy(retry_policy(args))
    opts = options_of(args)
    runs = [opts]
    replay = None
    if args.config:
        from ..runfile import read_run_file

        rf = read_run_file(args.config)
        explicit = _explicit(args, opts)
        if "max_retries" not in explicit and "retry_budget_s" not in explicit:
            set_default_policy(rf.policy())
        if "clinician" in explicit:
            rf.clinicians = [opts.clinician]
        if "judge" in explicit:
            rf.judges = [opts.judge]
        rf.options.update({k: v for k, v in opts.model_dump().items() if k in explicit})
        runs = rf.runs()
        replay = rf if rf.replay_of else None
        if rf.sweep:
            runs = [o.model_copy(update={"progress": False}) for o in runs]
    elif args.out is None:
        raise MindEvalError("give --out DIR (or --config FILE)", field="--out")
    if args.dry_run:
        for o in runs:
            prep = prepare(o)
            est = estimate_run(prep, dict(args.assume_reply_tokens))
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


def options_of(args: argparse.Namespace):
    """The :class:`~mindeval.runner.RunOptions` of the command line."""
    from ..runner import RunOptions

    return RunOptions(
        patient=role_spec(args, "patient"), clinician=role_spec(args, "clinician"),
        judge=role_spec(args, "judge"), target=args.target, patient_prompt=args.patient_prompt,
        clinician_prompt=args.clinician_prompt, judge_prompt=args.judge_prompt,
        profiles=args.profiles, limit=args.limit, turns=args.turns, out=args.out or Path("."), db_url=args.db,
        concurrency=args.concurrency, seed=args.seed, judge_retries=args.judge_retries,
        judge_samples=args.judge_samples, fewshot=args.fewshot_file, fewshot_k=args.fewshot_k,
        judge_protocol=args.judge_protocol, transcript_format=args.transcript_format, new_run=args.new_run,
        progress=not args.quiet, max_cost=args.max_cost, overwrite=args.overwrite,
    )


def _explicit(args: argparse.Namespace, opts) -> set[str]:
    """The options given on the command line (they differ from the parser's defaults)."""
    defaults = args._parser.parse_args(["--out", "."])
    base = options_of(defaults).model_dump()
    out = {k for k, v in opts.model_dump().items() if v != base[k]}
    if args.out is None:
        out.discard("out")
    out |= {k for k in ("max_retries", "retry_budget_s") if getattr(args, k) != getattr(defaults, k)}
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
