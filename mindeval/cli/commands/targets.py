"""``mindeval targets``: list the built-in targets, validate a target folder."""

from __future__ import annotations

import argparse
import sys
import textwrap


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "targets", help="list the built-in targets or validate a target folder",
        description="A target is a benchmark as a folder with a target.yaml manifest: profiles, prompts, "
        "guidelines (judge dimensions, scale, anchors, human form), turns and opening line. "
        "See docs/targets.md.",
    )
    tsub = p.add_subparsers(dest="targets_command", metavar="ACTION")
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])
    ls = tsub.add_parser("list", help="the built-in targets (usable as --target NAME)")
    ls.set_defaults(func=_list)
    v = tsub.add_parser("validate", help="check a target: every problem as file:line:field, exit 2 if any",
                        description="Checks the manifest, the guidelines, the prompt templates (fields, the "
                        "clinician's intake-only rule) and every profile row.")
    v.add_argument("path", metavar="PATH", help="a target folder, its target.yaml, or a built-in name")
    v.set_defaults(func=_validate)


def _list(args: argparse.Namespace) -> int:
    from ...targets import list_targets

    for t in list_targets():
        g = t.guidelines
        print(f"{t.name} {t.manifest.version}  ({len(g.axis_codes)} dimensions: {', '.join(g.axis_codes)}; "
              f"{g.scale_kind} scale; {t.manifest.turns} turns)  {t.root}")
        print(textwrap.indent(textwrap.fill(" ".join(t.manifest.description.split()), 88), "    "))
    return 0


def _validate(args: argparse.Namespace) -> int:
    from ...targets import load_target, validate_target

    problems = validate_target(args.path)
    for p in problems:
        print(f"error: {p}", file=sys.stderr)
    if problems:
        return 2
    t = load_target(args.path)
    g = t.guidelines
    n = len(t.profiles() or [])
    print(f"{t.path}: ok (target {t.name} {t.manifest.version}; {len(g.axis_codes)} dimensions, {g.scale_kind} "
          f"scale; {n or 'no'} profiles{'' if n else ' (--profiles)'})")
    return 0
