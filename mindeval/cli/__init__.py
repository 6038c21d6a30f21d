"""``mindeval`` command line: a thin layer over the Python API.

Each subcommand lives in ``mindeval/cli/commands/<name>.py`` and exposes
``register(subparsers)``; the module's handler does the heavy imports lazily so
``mindeval --help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from .. import __version__
from ..errors import MindEvalError

# (subcommand module, import path). A module that is missing is simply not offered.
COMMANDS: tuple[str, ...] = (
    "mindeval.cli.commands.run",
    "mindeval.cli.commands.judge",
    "mindeval.cli.commands.profiles",
    "mindeval.cli.commands.data",
    "mindeval.cli.commands.leaderboard",
    "mindeval.cli.commands.export",
    "mindeval.cli.commands.app",
    "mindeval.cli.commands.targets",
    "mindeval.cli.commands.view",
    "mindeval.cli.commands.correct",
)


# Placeholders by value type when an option names none: N whole number, X number, DIR, FILE, PATH.
PLACEHOLDERS = {"int": "N", "float": "X", "directory": "DIR", "file": "FILE", "path": "FILE", "Path": "PATH"}


class DefaultsFormatter(argparse.HelpFormatter):
    """Help that shows every option's default once (unset, empty and off defaults are left out; a
    help text that already says "(default ...)" keeps its own wording), and placeholders by type."""

    def _format_action(self, action: argparse.Action) -> str:
        d = getattr(action, "shown_default", action.default)  # a generated option's: its field's default
        unset = d is None or d is False or d is argparse.SUPPRESS or d == "" or d == [] or d == {}
        shown = not unset and (action.option_strings or action.nargs in ("?", "*"))
        text = action.help or ""
        said = "%(default)" in text or re.search(r"\(default\b", text)
        if shown and not said and action.help != argparse.SUPPRESS:
            original = action.help  # shown with its default, never changed for the next reader
            value = "%(default)s" if d is action.default else str(d).replace("%", "%%")
            action.help = f"{action.help} (default: {value})" if action.help else f"default: {value}"
            try:
                return super()._format_action(action)
            finally:
                action.help = original
        return super()._format_action(action)

    def _get_default_metavar_for_optional(self, action: argparse.Action) -> str:
        kind = getattr(action.type, "__name__", None)
        return PLACEHOLDERS.get(kind or "", action.dest.upper())


class Parser(argparse.ArgumentParser):
    """The parser of ``mindeval`` and ``metaeval``; sub-commands inherit it (and its help format)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("formatter_class", DefaultsFormatter)
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    def error(self, message: str) -> NoReturn:
        """A bad argument (``--turns abc``, an unknown choice or option) is one line and exit 2, as every
        other bad input (:func:`run_cli`), not argparse's usage block: the line names where help is."""
        one = message.replace("\n", "\\n")
        raise MindEvalError(f"{self.prog}: {one} (see `{self.prog} --help`)")


def at_least(option: str, low: int = 1, high: int | None = None) -> Callable[[str], int]:
    """An argparse ``type``: a whole number of at least ``low`` (``--concurrency 0`` is an error)
    and, given ``high``, at most ``high`` (a documented upper bound)."""

    def parse(text: str) -> int:
        value = int(text)
        if value < low:
            raise MindEvalError(f"must be at least {low}, got {value}", field=option)
        if high is not None and value > high:
            raise MindEvalError(f"must be at most {high:,}, got {value:,} (docs/running.md#upper-bounds)",
                                field=option)
        return value

    parse.__name__ = "int"
    return parse


def out_dir(option: str = "--out") -> Callable[[str], Path]:
    """An argparse ``type``: an output directory (a path that is an existing file is an error)."""

    def parse(text: str) -> Path:
        path = Path(text)
        check_writable_dir(path, option)
        return path

    parse.__name__ = "directory"
    return parse


def out_file(option: str = "--out") -> Callable[[str], Path]:
    """An argparse ``type``: an output file (its folder must be writable; a directory is an error)."""

    def parse(text: str) -> Path:
        path = Path(text)
        if path.is_dir():
            raise MindEvalError(f"{path} is a directory; give a file name", field=option)
        check_writable_dir(path.parent, option)
        return path

    parse.__name__ = "file"
    return parse


def check_writable_dir(path: Path, option: str = "--out") -> None:
    """One-line error unless ``path`` is, or can be created as, a directory we can write in.

    Checked before any work: a file in the way (``FILE`` or ``FILE/sub``), a missing or
    read-only parent (``/proc/x``). Nothing is created: the write test uses a temporary
    directory inside the nearest existing ancestor and removes it.
    """
    import tempfile

    existing = path
    while not existing.exists():
        if existing.parent == existing:
            break
        existing = existing.parent
    if existing.exists() and not existing.is_dir():
        what = "is a file" if existing == path else f"cannot be created: {existing} is a file"
        raise MindEvalError(f"{path} {what}; give a directory", field=option)
    try:
        tempfile.TemporaryDirectory(dir=existing).cleanup()
    except OSError as exc:
        raise MindEvalError(f"cannot write in {existing}: {exc.strerror or exc}", field=option) from None


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


def one_line_warning(message: Warning | str, category: type[Warning], *_args: object, **_kw: object) -> str:
    """A warning as the command lines print it: ``warning: MESSAGE``, one line, without Python's source line."""
    return f"warning: {message}\n"


def run_cli(parser: argparse.ArgumentParser, argv: list[str] | None) -> int:
    """Parse and dispatch; user mistakes print one clear line and exit 2, never a traceback; a
    warning (``RollupWarning``, ...) prints as one line (:func:`one_line_warning`)."""
    warnings.formatwarning = one_line_warning
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
    except Exception as exc:
        sa = sys.modules.get("sqlalchemy.exc")  # imported only by commands that open a store
        if sa is None or not isinstance(exc, sa.DatabaseError):
            raise
        # a store damaged after it was opened (its pages are read lazily)
        print(f"error: a store could not be read ({exc.orig}); it is damaged or not a MindEval store",
              file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted; re-run the same command to resume", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader of our output left (`... | head`): stop quietly, as Unix tools do
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so the interpreter's final flush does not complain again
        return 141


def main(argv: list[str] | None = None) -> int:
    return run_cli(build_parser(), argv)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
