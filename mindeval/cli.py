"""``mindeval`` command line: a thin layer over the Python API.

Each subcommand lives in ``mindeval/commands/<name>.py`` and exposes
``register(subparsers)``; the module's handler does the heavy imports lazily so
``mindeval --help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable
from pathlib import Path

from . import __version__
from .errors import MindEvalError

# (subcommand module, import path). A module that is missing is simply not offered.
COMMANDS: tuple[str, ...] = (
    "mindeval.commands.run",
    "mindeval.commands.profiles",
    "mindeval.commands.data",
    "mindeval.commands.leaderboard",
    "mindeval.commands.app",
    "mindeval.commands.targets",
    "mindeval.commands.view",
)


class DefaultsFormatter(argparse.HelpFormatter):
    """Help that shows every option's default (unset, empty and off defaults are left out)."""

    def _format_action(self, action: argparse.Action) -> str:
        d = action.default
        unset = d is None or d is False or d is argparse.SUPPRESS or d == "" or d == []
        shown = not unset and (action.option_strings or action.nargs in ("?", "*"))
        if shown and "%(default)" not in (action.help or "") and action.help != argparse.SUPPRESS:
            action.help = f"{action.help} (default: %(default)s)" if action.help else "default: %(default)s"
        return super()._format_action(action)


class Parser(argparse.ArgumentParser):
    """The parser of ``mindeval`` and ``metaeval``; sub-commands inherit it (and its help format)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("formatter_class", DefaultsFormatter)
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]


def at_least(option: str, low: int = 1) -> Callable[[str], int]:
    """An argparse ``type``: a whole number of at least ``low`` (``--concurrency 0`` is an error)."""

    def parse(text: str) -> int:
        value = int(text)
        if value < low:
            raise MindEvalError(f"must be at least {low}, got {value}", field=option)
        return value

    parse.__name__ = "int"
    return parse


def out_dir(option: str = "--out") -> Callable[[str], Path]:
    """An argparse ``type``: an output directory (a path that is an existing file is an error)."""

    def parse(text: str) -> Path:
        path = Path(text)
        if path.exists() and not path.is_dir():
            raise MindEvalError(f"{path} is a file; give a directory", field=option)
        return path

    parse.__name__ = "directory"
    return parse


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
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
    try:
        args = parser.parse_args(argv)
        func = getattr(args, "func", None)
        if func is None:
            parser.print_help()
            return 2
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
