"""``mindeval profiles``: sample, generate backstories, show stats, validate."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ...config import DEFAULT_CONCURRENCY, DEFAULT_MODEL
from .. import at_least, out_file


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "profiles", help="sample patient profiles, generate backstories, show stats, validate",
        description="Build profile sets reproducibly: sample attributes with a seed, generate "
        "backstories with any model, compare the mix with the paper, validate files. See docs/profiles.md.",
    )
    psub = p.add_subparsers(dest="profiles_command", metavar="ACTION")
    p.set_defaults(func=lambda args: _help(p))

    s = psub.add_parser("sample", help="sample N profiles (attributes only) with a seed",
                        description="Same --n/--seed/pool → byte-identical output on any machine. "
                        "Profile i depends only on (seed, i): the first 50 of --n 1000 equal --n 50.")
    s.add_argument("--n", type=int, required=True, help="number of profiles")
    s.add_argument("--seed", type=int, default=0, help="sampling seed (recorded in FILE's .meta.json)")
    s.add_argument("-o", "--out", type=out_file(), required=True, metavar="FILE", help="output profiles.jsonl")
    s.add_argument("--pool", type=Path, default=None, metavar="DIR",
                   help="attribute pool directory (default: the bundled data/attribute_pool)")
    s.set_defaults(func=_sample)

    _add_generate(psub)

    t = psub.add_parser("stats", help="severity mix, identity and other distributions vs the paper")
    t.add_argument("source", metavar="FILE", help="profiles.jsonl, 'official' or 'demo'")
    t.add_argument("--against", default=None, metavar="FILE", help="a second set shown beside (e.g. official)")
    t.add_argument("--top", type=at_least("--top"), default=5, help="values shown per attribute")
    t.add_argument("--pool", type=Path, default=None, metavar="DIR", help="pool used to map finance tiers")
    t.add_argument("--json", action="store_true", help="print JSON instead of the table")
    t.set_defaults(func=_stats)

    v = psub.add_parser("validate", help="report every schema error as file:line:field (exit 1 if any)")
    v.add_argument("source", metavar="FILE", nargs="?", default=None,
                   help="profiles.jsonl, 'official' or 'demo' (default with --target: the target's profiles)")
    v.add_argument("--target", default=None, metavar="NAME|DIR",
                   help="also check the target's profile labels file against these profiles (found by "
                        "itself when FILE is the profiles file named by a target.yaml beside it)")
    v.add_argument("--backstory", action="store_true",
                   help="also require valid backstories (4 paragraphs, second person, no headings/lists)")
    v.set_defaults(func=_validate)


def _add_generate(psub: argparse._SubParsersAction) -> None:
    g = psub.add_parser("generate", help="write a 4-paragraph backstory for each profile with a model",
                        description="Calls are stored in <out stem>.backstory.db (or --db); re-running the "
                        "same command reuses them. Invalid replies are retried with feedback.")
    g.add_argument("source", metavar="FILE", help="profiles.jsonl, 'official' or 'demo'")
    g.add_argument("-o", "--out", type=out_file(), required=True, metavar="FILE", help="output profiles.jsonl")
    g.add_argument("--model", default=DEFAULT_MODEL, help="litellm model string")
    g.add_argument("--temperature", type=float, default=None, metavar="T")
    g.add_argument("--max-tokens", type=at_least("--max-tokens"), default=None, metavar="N")
    g.add_argument("--reasoning-effort", default=None, metavar="LEVEL")
    g.add_argument("--api-base", default=None, metavar="URL", help="OpenAI-compatible server URL")
    g.add_argument("--retries", type=at_least("--retries", 0), default=3, metavar="K",
                   help="attempts per profile before it is recorded as failed")
    g.add_argument("--prompt", default="backstory/default", metavar="REF",
                   help="backstory template: kind/name or a file")
    g.add_argument("--seed", type=int, default=0, help="seed passed to the model (recorded)")
    g.add_argument("--concurrency", type=at_least("--concurrency"), default=DEFAULT_CONCURRENCY,
                   help="profiles in parallel")
    g.add_argument("--db", default=None, metavar="URL", help="SQLAlchemy URL instead of <out stem>.backstory.db")
    g.add_argument("--regenerate", action="store_true", help="replace backstories the input already has")
    g.add_argument("--new-run", action="store_true", help="start a new run even if the store holds one with other options")
    g.add_argument("--overwrite", action="store_true",
                   help="generate even where FILE's outputs exist without their store <out stem>.backstory.db (or "
                   "with another run's): their calls are bought again and the outputs replaced")
    g.add_argument("--quiet", action="store_true", help="no progress output")
    g.set_defaults(func=_generate)


def _help(p: argparse.ArgumentParser) -> int:
    p.print_help()
    return 2


def _sample(args: argparse.Namespace) -> int:
    from ...profiles.sampler import sidecar, write_sample

    meta = write_sample(args.out, args.n, args.seed, pool_dir=args.pool)
    print(f"wrote {args.n} profiles to {args.out} (seed {args.seed}, sha256 {meta['profiles_sha256'][:12]}); "
          f"provenance in {sidecar(args.out, 'meta.json')}", file=sys.stderr)
    return 0


def _generate(args: argparse.Namespace) -> int:
    from pydantic import ValidationError
    from tqdm import tqdm

    from ...errors import MindEvalError
    from ...llm.gateway import ModelSpec
    from ...profiles.backstory import BackstoryOptions, BackstoryOutcome, generate_file
    from ...profiles.official import resolve_profiles_arg
    from ...records.io import _validation_message
    from ...store.calls import calls_line

    source = resolve_profiles_arg(args.source)
    try:
        spec = ModelSpec(model=args.model, temperature=args.temperature, max_tokens=args.max_tokens,
                         reasoning_effort=args.reasoning_effort, api_base=args.api_base)
    except ValidationError as exc:  # a bad --reasoning-effort or --api-base: one line naming it
        field, msg = _validation_message(exc)
        raise MindEvalError(msg, field="--" + field.replace("_", "-")) from None
    done = [0]

    def progress(o: BackstoryOutcome) -> None:
        done[0] += 1
        if args.quiet:
            return
        calls = f"{o.calls_made} new call(s), {o.calls_reused} reused"
        what = {"ok": f"ok after {o.attempts} attempt(s)", "kept": "kept (already has a backstory)",
                "failed": f"FAILED after {o.attempts} attempt(s): {o.error or '; '.join(o.problems)}"}[o.status]
        tqdm.write(f"[{done[0]}] #{o.index + 1} {o.name}: {what} ({calls})", file=sys.stderr)

    options = BackstoryOptions(template=args.prompt, retries=args.retries, seed=args.seed,
                               concurrency=args.concurrency, regenerate=args.regenerate, progress=not args.quiet)
    report = generate_file(source, args.out, spec, options, db_url=args.db, on_done=progress, new_run=args.new_run,
                           overwrite=args.overwrite)
    print(f"{'resumed' if report.resumed else 'started'} run {report.run_id}: "
          f"{report.n_ok} generated, {report.n_kept} kept, {report.n_failed} failed of {report.n_profiles}; "
          f"{calls_line(report.calls_made, report.calls_reused, report.calls_failed)}; "
          f"{report.elapsed_s:.1f}s", file=sys.stderr)
    print(f"wrote {report.n_ok + report.n_kept} profiles to {report.output} (calls stored in {report.db})",
          file=sys.stderr)
    if report.n_failed:
        print(f"{report.n_failed} profile(s) failed; details in {report.failures_file}. Re-run the same "
              f"command to retry (stored replies are reused), or raise --retries.", file=sys.stderr)
        return 1
    return 0


def _stats(args: argparse.Namespace) -> int:
    from ...profiles.official import resolve_profiles_arg
    from ...profiles.pool import load_pool
    from ...profiles.stats import compute_stats, render_stats
    from ...records import load_profiles

    path = resolve_profiles_arg(args.source)
    against_path = resolve_profiles_arg(args.against) if args.against else None
    st = compute_stats(load_profiles(path), path, pool=load_pool(args.pool), top=args.top,
                       against=load_profiles(against_path) if against_path else None, against_path=against_path)
    if args.json:
        print(json.dumps(st.model_dump(mode="json"), indent=2, ensure_ascii=False))
    else:
        print(render_stats(st), end="")
    return 0


def _validate(args: argparse.Namespace) -> int:
    from ...errors import MindEvalError
    from ...profiles.official import resolve_profiles_arg
    from ...profiles.validate import file_target, validate_file
    from ...targets import load_target

    given = load_target(args.target) if args.target else None
    if args.source is None:
        if not given or given.profiles_path is None:
            raise MindEvalError("give a profiles FILE (or --target NAME|DIR of a target with its own profiles)",
                                field="FILE")
        path = given.profiles_path
    else:
        path = resolve_profiles_arg(args.source) if args.source in ("official", "demo") else Path(args.source)
        if not path.is_file():
            raise MindEvalError(f"file not found: {path}", field="FILE")
    target = given or file_target(path) or load_target()  # else the built-in mindeval: no labels
    valid, problems = validate_file(path, backstory=args.backstory, target=target)
    checked = (f"; labels of target {target.name} checked ({target.labels_path})"
               if target.labels_path is not None else "")
    for p in problems:
        print(f"{p}", file=sys.stdout)
    if problems:
        print(f"{len(problems)} problem(s); {valid} valid profile(s) in {path}{checked}", file=sys.stderr)
        return 1
    print(f"ok: {valid} valid profile(s) in {path}{checked}", file=sys.stderr)
    return 0
