"""Every subcommand's help, walked: one voice for options, defaults and placeholders."""

from __future__ import annotations

import argparse
import re

import pytest

from mindeval.cli import build_parser
from mindeval.cli.meta import build_parser as metaeval_parser

# Options whose default or meaning differs between commands on purpose, with the reason.
DIFFERENT = {
    "--out": "a directory for runs and reports, a file for profiles and exports",
    "--kind": "different choices per command (study kind, import kind)",
    "--k": "annotators per item (create-study) or per assignment (assign)",
    "--target": "metaeval compare reads it from the runs when not given; elsewhere it defaults to mindeval",
    "--port": "app (8501) and viewer (8502) listen on 127.0.0.1",
    "--axis": "metaeval power: the criterion to plan for (default average); mindeval correct: the axis corrected",
    "--zeros": "metaeval compare/power: unset (missing, or zero with --paper-compatible); metaeval judge: its field's "
               "default, missing",
    "--format": "app admin export: which ratings or sessions; mindeval export: where runs are published (hf, eee)",
    "--trusted-proxy-header": "app: unset (no proxy unless said); app serve: X-Forwarded-For, the header the nginx "
                              "site it writes sets",
}


def _walk(parser: argparse.ArgumentParser, name: str):
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub, p in action.choices.items():
                yield from _walk(p, f"{name} {sub}")


PARSERS = [*_walk(build_parser(), "mindeval"), *_walk(metaeval_parser(), "metaeval")]


def _visible(parser: argparse.ArgumentParser):
    return [a for a in parser._actions if a.option_strings and a.help != argparse.SUPPRESS
            and not isinstance(a, argparse._HelpAction)]


def _default(action: argparse.Action):
    """An option's default as its help shows it (a RunOptions field's option is absent from the
    namespace unless given: its field's default is ``shown_default``)."""
    return getattr(action, "shown_default", action.default)


def _placeholder(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    fmt = parser._get_formatter()
    return fmt._metavar_formatter(action, fmt._get_default_metavar_for_optional(action))(1)[0]


def test_every_subcommand_is_walked():
    names = {n for n, _ in PARSERS}
    assert {"mindeval run", "mindeval leaderboard", "mindeval view", "mindeval data download",
            "mindeval app admin export", "metaeval compare", "metaeval judge", "metaeval realism"} <= names


@pytest.mark.parametrize(("name", "parser"), PARSERS, ids=[n for n, _ in PARSERS])
def test_help_shows_each_default_once_and_typed_placeholders(name, parser):
    text = parser.format_help()
    assert text.startswith("usage: ")
    for action in _visible(parser):
        fmt = parser._get_formatter()
        fmt.add_argument(action)
        rendered = re.sub(r"\s+", " ", fmt.format_help())
        assert len(re.findall(r"\(default\b", rendered)) <= 1, f"{name} {action.option_strings}: {rendered}"
        if action.nargs != 0:
            ph = _placeholder(parser, action)
            assert ph.startswith("{") or ph == ph.upper(), f"{name} {action.option_strings}: {ph}"
            if action.metavar is None:  # named from the option: a type's placeholder, never OPTION_NAME
                assert "_" not in ph, f"{name} {action.option_strings}: {ph}"


def test_an_option_means_the_same_in_every_command():
    seen: dict[str, dict[tuple, list[str]]] = {}
    for name, parser in PARSERS:
        for action in _visible(parser):
            opt = max(action.option_strings, key=len)
            if opt in DIFFERENT:
                continue
            placeholder = _placeholder(parser, action) if action.nargs != 0 else ""
            # a required option has no default: only its placeholder must agree
            default = "required" if action.required else repr(_default(action))
            seen.setdefault(opt, {}).setdefault((placeholder, default), []).append(name)
    mixed = {opt: forms for opt, forms in seen.items()
             if len({ph for ph, _ in forms}) > 1 or len({d for _, d in forms if d != "required"}) > 1}
    assert mixed == {}


def _helps(option: str) -> dict[str, str]:
    return {name: re.sub(r"\s+", " ", a.help or "") for name, parser in PARSERS for a in _visible(parser)
            if option in a.option_strings}


def test_quiet_silences_progress_only_and_the_report_switch_has_its_own_name():
    quiet = _helps("--quiet")
    assert {"mindeval run", "mindeval judge", "mindeval data download"} <= set(quiet)
    assert set(quiet.values()) == {"no progress output"}, quiet
    assert "mindeval leaderboard" not in quiet
    assert _helps("--no-report") == {"mindeval leaderboard": "do not print the Markdown report on stdout"}


def test_fewshot_k_and_resamples_have_one_default_and_one_meaning():
    from mindeval.config import DEFAULT_FEWSHOT_K, DEFAULT_RESAMPLES

    for option, default, commands in (
            ("--fewshot-k", DEFAULT_FEWSHOT_K, {"mindeval run", "mindeval judge", "metaeval judge"}),
            ("--resamples", DEFAULT_RESAMPLES, {"mindeval leaderboard", "metaeval compare", "metaeval power"})):
        found = {name: a for name, parser in PARSERS for a in _visible(parser) if option in a.option_strings}
        assert set(found) == commands, option
        assert {_default(a) for a in found.values()} == {default}, option
    assert len(set(_helps("--fewshot-k").values())) == 1


def test_every_output_path_option_is_checked_before_any_work():
    """Every --out / --html is parsed by out_dir or out_file, whose problems are one line
    (tests/cli/test_cli_voice.py): a new command cannot bring back a traceback."""
    outputs = [(name, a) for name, parser in PARSERS for a in _visible(parser)
               if {"--out", "--html"} & set(a.option_strings)]
    assert len(outputs) >= 11
    unchecked = [f"{name} {a.option_strings}" for name, a in outputs
                 if getattr(a.type, "__name__", None) not in ("directory", "file")]
    assert unchecked == []
