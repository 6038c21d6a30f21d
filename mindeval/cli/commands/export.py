"""``mindeval export``: publish run directories as a Hugging Face dataset folder or Every Eval Ever records."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ...errors import MindEvalError
from .. import out_dir
from ..fields import nonempty_text


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "export", help="publish runs: a Hugging Face datasets folder (--format hf) or Every Eval Ever records (eee)",
        description="hf: transcripts, judgments, scores (95%% intervals, n) and configurations as JSON Lines "
        "with a dataset card (provenance, honest use), loadable with datasets.load_dataset(DIR, NAME). "
        "eee: one Every Eval Ever record per run under DIR/data/<target>/<developer>/<model>/. "
        "Keys and credentials never reach an export. See docs/publishing.md.",
    )
    p.add_argument("runs", nargs="+", type=Path, metavar="RUN_DIR", help="run directories from `mindeval run`")
    p.add_argument("--format", required=True, choices=("hf", "eee"), help="hf: Hugging Face datasets; eee: Every Eval Ever")
    p.add_argument("--out", type=out_dir(), required=True, metavar="DIR", help="the folder to write")
    p.add_argument("--overwrite", action="store_true", help="replace files an earlier export left in --out")
    p.add_argument("--organization", type=nonempty_text("--organization"), default="unknown", metavar="NAME",
                   help="eee: who ran the evaluation (source_organization_name)")
    p.add_argument("--relationship", choices=("first-party", "third-party", "collaborative", "other"),
                   default="third-party", help="eee: the evaluator's relationship to the clinician model's developer")
    p.set_defaults(func=handle)


def _check_out(out: Path, runs: list[Path], overwrite: bool) -> None:
    for run in runs:
        if run.resolve() == out.resolve():
            raise MindEvalError("is a run directory given to export; choose another folder", path=out,
                                field="--out")
    if out.is_dir() and not overwrite and any(out.iterdir()):
        raise MindEvalError("not empty (an earlier export?); choose an empty folder or add --overwrite",
                            path=out, field="--out")


def handle(args: argparse.Namespace) -> int:
    from ...publish import load_published

    _check_out(args.out, args.runs, args.overwrite)
    runs = load_published(args.runs)
    if args.format == "hf":
        from ...publish.hf import write_hf

        paths = write_hf(runs, args.out)
    else:
        from ...publish.eee import write_eee

        paths = write_eee(runs, args.out, organization=args.organization,
                           relationship=args.relationship.replace("-", "_"))
    for path in paths:
        print(f"wrote {path}", file=sys.stderr)
    redacted = sum(r.redacted for r in runs)
    if redacted:
        print(f"note: {redacted} value(s) that looked like keys or credentials were replaced by [redacted]",
              file=sys.stderr)
    return 0
