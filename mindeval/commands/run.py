"""``mindeval run``: simulate, judge and summarise a benchmark run."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..config import (
    DEFAULT_CONCURRENCY,
    DEFAULT_JUDGE_RETRIES,
    DEFAULT_MODEL,
    DEFAULT_PROMPTS,
    DEFAULT_TURNS,
)

ROLES = ("patient", "clinician", "judge")


def add_role_options(parser: argparse.ArgumentParser, roles=ROLES) -> None:
    """``--ROLE MODEL`` plus ``--ROLE-temperature/-max-tokens/-reasoning-effort/-api-base``."""
    for role in roles:
        g = parser.add_argument_group(f"{role} model")
        g.add_argument(f"--{role}", default=DEFAULT_MODEL, metavar="MODEL",
                       help=f"litellm model string for the {role} (default: {DEFAULT_MODEL})")
        g.add_argument(f"--{role}-temperature", type=float, default=None, metavar="T")
        g.add_argument(f"--{role}-max-tokens", type=int, default=None, metavar="N")
        g.add_argument(f"--{role}-reasoning-effort", default=None, metavar="LEVEL",
                       help="low | medium | high (providers that support it)")
        g.add_argument(f"--{role}-api-base", default=None, metavar="URL",
                       help="OpenAI-compatible server URL (e.g. http://127.0.0.1:8000/v1)")


def role_spec(args: argparse.Namespace, role: str):
    from ..llm.gateway import ModelSpec

    a = vars(args)
    return ModelSpec(
        model=a[role], temperature=a[f"{role}_temperature"], max_tokens=a[f"{role}_max_tokens"],
        reasoning_effort=a[f"{role}_reasoning_effort"], api_base=a[f"{role}_api_base"],
    )


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "run", help="run a benchmark: simulate interactions and judge them",
        description="Simulate patient/clinician interactions for a profile set and judge them. "
        "Re-running the same command resumes without repeating any model call.",
    )
    add_role_options(p)
    p.add_argument("--profiles", default="demo",
                   help="profiles JSONL (authors' schema), 'demo' (shipped) or 'official' (after `mindeval data download`)")
    p.add_argument("--limit", type=int, default=None, help="use only the first N profiles")
    p.add_argument("--turns", type=int, default=DEFAULT_TURNS,
                   help=f"patient + clinician turns after the opening 'Hello.' (default {DEFAULT_TURNS})")
    p.add_argument("--out", type=Path, required=True, help="run directory (holds run.db and outputs)")
    p.add_argument("--db", default=None, metavar="URL", help="SQLAlchemy URL instead of DIR/run.db")
    p.add_argument("--concurrency", type=int, default=DEFAULT_CONCURRENCY, help="interactions in parallel")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--patient-prompt", default=DEFAULT_PROMPTS["patient"], metavar="REF",
                   help="kind/name (e.g. patient/no_format) or a template file")
    p.add_argument("--clinician-prompt", default=DEFAULT_PROMPTS["clinician"], metavar="REF",
                   help="e.g. clinician/four_sentences, or a template file (intake fields only)")
    p.add_argument("--judge-prompt", default=DEFAULT_PROMPTS["judge"], metavar="REF",
                   help="e.g. judge/length_penalty, or a template file")
    p.add_argument("--judge-retries", type=int, default=DEFAULT_JUDGE_RETRIES,
                   help="attempts for an unparseable judge reply before it is recorded as failed")
    p.add_argument("--judge-samples", type=int, default=1, help="judge samples per interaction (mean)")
    p.add_argument("--judge-fewshot", default=None, metavar="FILE",
                   help="annotated file (authors' human_annotations.jsonl schema) for few-shot examples")
    p.add_argument("--fewshot-k", type=int, default=5)
    p.add_argument("--new-run", action="store_true", help="start a new run even if --out holds one")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    from ..runner import RunOptions, run_benchmark

    opts = RunOptions(
        patient=role_spec(args, "patient"), clinician=role_spec(args, "clinician"),
        judge=role_spec(args, "judge"), patient_prompt=args.patient_prompt,
        clinician_prompt=args.clinician_prompt, judge_prompt=args.judge_prompt,
        profiles=args.profiles, limit=args.limit, turns=args.turns, out=args.out, db_url=args.db,
        concurrency=args.concurrency, seed=args.seed, judge_retries=args.judge_retries,
        judge_samples=args.judge_samples, fewshot=args.judge_fewshot, fewshot_k=args.fewshot_k,
        new_run=args.new_run, progress=not args.quiet,
    )
    summary = run_benchmark(opts)
    return 0 if summary["n_interactions"] else 1
