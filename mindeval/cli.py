"""``mindeval`` command line: a thin layer over the Python API.

Each subcommand lives in ``mindeval/commands/<name>.py`` and exposes
``register(subparsers)``; the module's handler does the heavy imports lazily so
``mindeval --help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from . import __version__
from .errors import MindEvalError

# (subcommand module, import path). A module that is missing is simply not offered.
COMMANDS: tuple[str, ...] = (
    "mindeval.commands.run",
    "mindeval.commands.profiles",
    "mindeval.commands.data",
    "mindeval.commands.leaderboard",
    "mindeval.commands.app",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mindeval",
        description="Benchmark language models as mental-health support clinicians.",
    )
    parser.add_argument("--version", action="version", version=f"mindeval {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for path in COMMANDS:
        try:
            module = importlib.import_module(path)
        except ModuleNotFoundError as exc:
            if exc.name == path:
                continue
            raise
        module.register(sub)
    return parser


def run_cli(parser: argparse.ArgumentParser, argv: list[str] | None) -> int:
    """Parse and dispatch; user mistakes print one clear line and exit 2, never a traceback."""
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    try:
        return int(func(args) or 0)
    except MindEvalError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted; re-run the same command to resume", file=sys.stderr)
        return 130


def main(argv: list[str] | None = None) -> int:
    return run_cli(build_parser(), argv)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
