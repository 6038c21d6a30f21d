"""The bad-input catalogue of every OTHER command-line option and positional argument of ``mindeval``
and ``metaeval`` (the options that are :class:`~mindeval.run_options.RunOptions` fields, of
``mindeval run``/``mindeval judge``/``metaeval judge``, are in ``test_bad_inputs.py``): each bad value
is refused with one line naming the option (or the file/field) and exit 2, without a traceback and
without writing anything.

A new option must extend :data:`CATALOGUE` (keyed by program, command path and option string, e.g.
``"mindeval leaderboard --test"``; a positional by its name): ``test_every_cli_option_has_a_bad_input_case``
walks the parsers and fails until it does. A flag has no bad value: ``--flag=x`` (argparse refuses it).
A known gap is a case marked ``gap``: it is expected to fail (strict), so fixing it shows here.
Placeholders: ``{tmp}`` the test's empty working directory (it holds ``a_file``), ``{run}`` a finished
fake run, ``{data}`` the authors' data release, ``{db}`` a SQLite URL in ``{tmp}``.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import NamedTuple

import pytest

from mindeval.cli import build_parser as mindeval_parser
from mindeval.cli import main as mindeval_main
from mindeval.cli.meta import build_parser as metaeval_parser
from mindeval.cli.meta import main as metaeval_main
from mindeval.run_options import RunOptions

ROOT = Path(__file__).resolve().parents[2]


class Case(NamedTuple):
    argv: list[str]  # the arguments after the program name
    names: str = ""  # what the one line must name ("" = the option string, or the bad value of a positional)
    gap: str = ""  # a known gap: the case is expected to fail until it is fixed


ADMIN = ["app", "admin", "--db", "{db}"]
APP = ["app", "--db", "{db}"]
SERVE = ["app", "serve", "--db", "{db}"]
DOWNLOAD = ["data", "download", "--base-url", "http://127.0.0.1:9/"]  # a closed loopback port: never the network
SAMPLE = ["profiles", "sample", "--n", "2", "-o", "{tmp}/p.jsonl"]
GENERATE = ["profiles", "generate", "{plain}", "-o", "{tmp}/g.jsonl", "--model", "fake/echo"]
LEADERBOARD = ["leaderboard", "{run}", "--out", "{tmp}/lb", "--no-report"]
EXPORT = ["export", "{run}", "--format", "hf", "--out", "{tmp}/ex"]
CORRECT = ["correct", "{run}", "--interaction", "{interaction}"]
COMPARE = ["compare", "--judges", "A={run}", "B={run}", "--out", "{tmp}/cmp", "--no-plots"]
POWER = ["power", "--humans", "{data}/human_annotations.jsonl", "--judges", "A={run}", "B={run}",
         "--out", "{tmp}/pw"]
REALISM = ["realism", "--human-turns", "{data}/human_user_turns.jsonl", "--patient", "fake/echo",
           "--out", "{tmp}/re", "--limit", "40"]


def flag(base: list[str], option: str) -> list[Case]:
    return [Case([*base, f"{option}=x"])]


CATALOGUE: dict[str, list[Case]] = {
    # mindeval run/judge: only the options that are not RunOptions fields
    "mindeval run --config": [Case(["run", "--config", "{tmp}/nosuch.yaml"], names="nosuch.yaml")],
    "mindeval judge sources": [Case(["judge", "{tmp}/nosuch", "--judge", "fake/judge", "--out", "{tmp}/j"],
                                    names="nosuch")],
    # profiles
    "mindeval profiles sample --n": [Case([*SAMPLE, "--n", "0"]), Case([*SAMPLE, "--n", "two"])],
    "mindeval profiles sample --seed": [Case([*SAMPLE, "--seed", "x"])],
    "mindeval profiles sample -o": [Case([*SAMPLE, "-o", "{tmp}"], names="-o")],
    "mindeval profiles sample --out": [Case([*SAMPLE, "--out", "{tmp}/a_file/x.jsonl"], names="--out")],
    "mindeval profiles sample --pool": [Case([*SAMPLE, "--pool", "{tmp}/nosuch.jsonl"], names="nosuch.jsonl")],
    "mindeval profiles generate source": [Case(["profiles", "generate", "{tmp}/nosuch.jsonl", "-o", "{tmp}/g.jsonl",
                                                "--model", "fake/echo"], names="nosuch.jsonl")],
    "mindeval profiles generate -o": [Case([*GENERATE, "-o", "{tmp}"], names="-o")],
    "mindeval profiles generate --out": [Case([*GENERATE, "--out", "{tmp}/a_file/g.jsonl"])],
    "mindeval profiles generate --model": [Case([*GENERATE, "--model", "nosuchprovider"])],
    "mindeval profiles generate --temperature": [Case([*GENERATE, "--temperature", "hot"])],
    "mindeval profiles generate --max-tokens": [Case([*GENERATE, "--max-tokens", "0"])],
    "mindeval profiles generate --reasoning-effort": [Case([*GENERATE, "--reasoning-effort", "bogus"])],
    "mindeval profiles generate --api-base": [Case([*GENERATE, "--api-base", "not a url"])],
    "mindeval profiles generate --retries": [Case([*GENERATE, "--retries", "-1"])],
    "mindeval profiles generate --prompt": [Case([*GENERATE, "--prompt", "nosuch/p@v9"])],
    "mindeval profiles generate --seed": [Case([*GENERATE, "--seed", "x"])],
    "mindeval profiles generate --concurrency": [Case([*GENERATE, "--concurrency", "0"])],
    "mindeval profiles generate --db": [Case([*GENERATE, "--db", "nosuch://x"])],
    "mindeval profiles generate --regenerate": flag(GENERATE, "--regenerate"),
    "mindeval profiles generate --new-run": flag(GENERATE, "--new-run"),
    "mindeval profiles generate --overwrite": flag(GENERATE, "--overwrite"),
    "mindeval profiles generate --quiet": flag(GENERATE, "--quiet"),
    "mindeval profiles stats source": [Case(["profiles", "stats", "{tmp}/nosuch.jsonl"], names="nosuch.jsonl")],
    "mindeval profiles stats --against": [Case(["profiles", "stats", "demo", "--against", "{tmp}/nosuch.jsonl"],
                                               names="nosuch.jsonl")],
    "mindeval profiles stats --top": [Case(["profiles", "stats", "demo", "--top", "0"])],
    "mindeval profiles stats --pool": [Case(["profiles", "stats", "demo", "--pool", "{tmp}/nosuch.jsonl"],
                                            names="nosuch.jsonl")],
    "mindeval profiles stats --json": flag(["profiles", "stats", "demo"], "--json"),
    "mindeval profiles validate source": [Case(["profiles", "validate", "{tmp}/nosuch.jsonl"], names="nosuch.jsonl")],
    "mindeval profiles validate --target": [Case(["profiles", "validate", "demo", "--target", "nosuch"])],
    "mindeval profiles validate --backstory": flag(["profiles", "validate", "demo"], "--backstory"),
    # data
    "mindeval data download files": [Case([*DOWNLOAD, "nosuch.bin", "--cache-dir", "{tmp}/c"],
                                          names="nosuch.bin")],
    "mindeval data download --cache-dir": [Case([*DOWNLOAD, "--cache-dir", "{tmp}/a_file"])],
    "mindeval data download --base-url": [Case(["data", "download", "--cache-dir", "{tmp}/c", "--base-url",
                                                "not a url"])],
    "mindeval data download --sha256": [Case([*DOWNLOAD, "--cache-dir", "{tmp}/c", "--sha256", "xyz"])],
    "mindeval data download --timeout": [Case([*DOWNLOAD, "--cache-dir", "{tmp}/c", "--timeout", "0"]),
                                         Case([*DOWNLOAD, "--cache-dir", "{tmp}/c", "--timeout", "nan"])],
    "mindeval data download --quiet": flag(DOWNLOAD, "--quiet"),
    "mindeval data status --cache-dir": [Case(["data", "status", "--cache-dir", "{tmp}/a_file"])],
    # leaderboard
    "mindeval leaderboard runs": [Case(["leaderboard", "{tmp}/nosuch", "--out", "{tmp}/lb"], names="nosuch")],
    "mindeval leaderboard --out": [Case(["leaderboard", "{run}", "--out", "{tmp}/a_file"])],
    "mindeval leaderboard --resamples": [Case([*LEADERBOARD, "--resamples", "0"])],
    "mindeval leaderboard --test": [Case([*LEADERBOARD, "--test", "bogus"])],
    "mindeval leaderboard --seed": [Case([*LEADERBOARD, "--seed", "x"])],
    "mindeval leaderboard --alpha": [Case([*LEADERBOARD, "--alpha", "2"]), Case([*LEADERBOARD, "--alpha", "nan"])],
    "mindeval leaderboard --sided": [Case([*LEADERBOARD, "--sided", "three"])],
    "mindeval leaderboard --allow-mixed": flag(LEADERBOARD, "--allow-mixed"),
    "mindeval leaderboard --allow-incomplete": flag(LEADERBOARD, "--allow-incomplete"),
    "mindeval leaderboard --compare-to": [Case([*LEADERBOARD, "--compare-to", "{tmp}/nosuch"], names="nosuch")],
    "mindeval leaderboard --by": [Case([*LEADERBOARD, "--by", "bogus"]),
                                  Case([*LEADERBOARD, "--by", "session"])],  # a one-session run: no sessions
    "mindeval leaderboard --humans": [Case([*LEADERBOARD, "--humans", "{tmp}/nosuch.jsonl"], names="nosuch.jsonl")],
    "mindeval leaderboard --study": [Case([*LEADERBOARD, "--study", "x"])],
    "mindeval leaderboard --plan-width": [Case([*LEADERBOARD, "--plan-width", "-1"])],
    "mindeval leaderboard --with-corrections": flag(LEADERBOARD, "--with-corrections"),
    "mindeval leaderboard --no-report": flag(LEADERBOARD, "--no-report"),
    "mindeval leaderboard --plots": flag(LEADERBOARD, "--plots"),
    "mindeval leaderboard --quiet": flag(LEADERBOARD, "--quiet"),
    # export
    "mindeval export runs": [Case(["export", "{tmp}/nosuch", "--format", "hf", "--out", "{tmp}/ex"], names="nosuch")],
    "mindeval export --format": [Case([*EXPORT, "--format", "bogus"])],
    "mindeval export --out": [Case([*EXPORT, "--out", "{tmp}/a_file"])],
    "mindeval export --overwrite": flag(EXPORT, "--overwrite"),
    "mindeval export --organization": [Case([*EXPORT, "--format", "eee", "--organization", ""])],
    "mindeval export --relationship": [Case([*EXPORT, "--relationship", "bogus"])],
    # app
    "mindeval app --host": [Case([*APP, "--host", "not a host"])],
    "mindeval app --port": [Case([*APP, "--port", "0"]), Case([*APP, "--port", "70000"])],
    "mindeval app --db": [Case(["app", "--db", "nosuch://x"])],
    "mindeval app --seed-demo": flag(APP, "--seed-demo"),
    "mindeval app --demo-clinician": [Case([*APP, "--seed-demo", "--demo-clinician", "nosuchprovider"])],
    "mindeval app --trusted-proxy-header": [Case([*APP, "--trusted-proxy-header", "not a header"])],
    "mindeval app serve --db": [Case(["app", "serve", "--db", "nosuch://x"])],
    "mindeval app serve --processes": [Case([*SERVE, "--processes", "0"])],
    "mindeval app serve --port": [Case([*SERVE, "--port", "0"])],
    "mindeval app serve --nginx-conf": [Case([*SERVE, "--nginx-conf", "{tmp}"])],
    "mindeval app serve --listen": [Case([*SERVE, "--nginx-conf", "{tmp}/n.conf", "--listen", "a;b"])],
    "mindeval app serve --server-name": [Case([*SERVE, "--nginx-conf", "{tmp}/n.conf",
                                               "--server-name", "a b;"])],
    "mindeval app serve --trusted-proxy-header": [Case([*SERVE, "--nginx-conf", "{tmp}/n.conf",
                                                        "--trusted-proxy-header", "not a header"])],
    "mindeval app admin --db": [Case(["app", "admin", "--db", "nosuch://x", "list"])],
    "mindeval app admin create-study name": [Case([*ADMIN, "create-study", " "], names="name")],
    "mindeval app admin create-study --kind": [Case([*ADMIN, "create-study", "s", "--kind", "bogus"])],
    "mindeval app admin create-study --k": [Case([*ADMIN, "create-study", "s", "--k", "0"])],
    "mindeval app admin create-study --seed": [Case([*ADMIN, "create-study", "s", "--seed", "x"])],
    "mindeval app admin create-study --description": [Case([*ADMIN, "create-study", "s", "--description", "\x00"])],
    "mindeval app admin create-study --target": [Case([*ADMIN, "create-study", "s", "--target", "nosuch"])],
    "mindeval app admin create-study --clinician-model": [Case([*ADMIN, "create-study", "s", "--kind", "roleplay",
                                                                "--clinician-model", "nosuchprovider"])],
    "mindeval app admin create-study --clinician-max-tokens": [Case([*ADMIN, "create-study", "s",
                                                                     "--clinician-max-tokens", "0"])],
    "mindeval app admin create-study --clinician-temperature": [Case([*ADMIN, "create-study", "s",
                                                                      "--clinician-temperature", "hot"])],
    "mindeval app admin create-study --minutes": [Case([*ADMIN, "create-study", "s", "--minutes", "0"])],
    "mindeval app admin add-annotator name": [Case([*ADMIN, "add-annotator", " "], names="name")],
    "mindeval app admin add-annotator --admin": flag([*ADMIN, "add-annotator", "a"], "--admin"),
    "mindeval app admin add-annotator --code-env": [Case([*ADMIN, "add-annotator", "a", "--code-env",
                                                          "MINDEVAL_TEST_NO_SUCH_VAR"], names="MINDEVAL_TEST_NO_SUCH_VAR")],
    "mindeval app admin reset-code name": [Case([*ADMIN, "reset-code", "nosuch"], names="nosuch")],
    "mindeval app admin reset-code --code-env": [Case([*ADMIN, "reset-code", "a", "--code-env",
                                                       "MINDEVAL_TEST_NO_SUCH_VAR"], names="MINDEVAL_TEST_NO_SUCH_VAR")],
    "mindeval app admin assign study": [Case([*ADMIN, "assign", "nosuch"], names="nosuch")],
    "mindeval app admin assign --k": [Case([*ADMIN, "assign", "s", "--k", "0"])],
    "mindeval app admin assign --annotators": [Case([*ADMIN, "assign", "s", "--annotators", ","])],
    "mindeval app admin assign --per-system": [Case([*ADMIN, "assign", "s", "--per-system", "0"])],
    "mindeval app admin gold study": [Case([*ADMIN, "gold", "nosuch"], names="nosuch")],
    "mindeval app admin gold --file": [Case([*ADMIN, "gold", "s", "--file", "{tmp}/nosuch.jsonl"],
                                            names="nosuch.jsonl")],
    "mindeval app admin gold --replace": flag([*ADMIN, "gold", "s"], "--replace"),
    "mindeval app admin gold --rate": [Case([*ADMIN, "gold", "s", "--rate", "2"])],
    "mindeval app admin gold --qualify": [Case([*ADMIN, "gold", "s", "--qualify", "-1"])],
    "mindeval app admin gold --qualify-pass": [Case([*ADMIN, "gold", "s", "--qualify-pass", "2"])],
    "mindeval app admin import study": [Case([*ADMIN, "import", "nosuch", "{run}"], names="nosuch")],
    "mindeval app admin import path": [Case([*ADMIN, "import", "s", "{tmp}/nosuch"], names="nosuch")],
    "mindeval app admin import --kind": [Case([*ADMIN, "import", "s", "{run}", "--kind", "bogus"])],
    "mindeval app admin import --map-annotator": [Case([*ADMIN, "import", "s", "{run}", "--kind", "ratings",
                                                        "--map-annotator", "noequals"])],
    "mindeval app admin add-sessions rating_study": [Case([*ADMIN, "add-sessions", "nosuch", "r"], names="nosuch")],
    "mindeval app admin add-sessions roleplay_study": [Case([*ADMIN, "add-sessions", "s", "nosuch"],
                                                            names="nosuch")],
    "mindeval app admin export study": [Case([*ADMIN, "export", "nosuch", "--format", "csv", "--out", "{tmp}/e.csv"],
                                             names="nosuch")],
    "mindeval app admin export --format": [Case([*ADMIN, "export", "s", "--format", "bogus", "--out", "{tmp}/e"])],
    "mindeval app admin export --out": [Case([*ADMIN, "export", "s", "--format", "csv", "--out", "{tmp}"])],
    "mindeval app admin list what": [Case([*ADMIN, "list", "bogus"], names="bogus")],
    "mindeval app admin list study": [Case([*ADMIN, "list", "items", "nosuch"], names="nosuch")],
    "mindeval app admin results study": [Case([*ADMIN, "results", "nosuch"], names="nosuch")],
    # targets, view, correct
    "mindeval targets validate path": [Case(["targets", "validate", "{tmp}/nosuch"], names="nosuch")],
    "mindeval view runs": [Case(["view", "{tmp}/nosuch", "--html", "{tmp}/v.html"], names="nosuch")],
    "mindeval view --html": [Case(["view", "{run}", "--html", "{tmp}"])],
    "mindeval view --host": [Case(["view", "{run}", "--host", "not a host"])],
    "mindeval view --port": [Case(["view", "{run}", "--port", "0"])],
    "mindeval correct run": [Case(["correct", "{tmp}/nosuch", "--list"], names="nosuch")],
    "mindeval correct --interaction": [Case(["correct", "{run}", "--interaction", "nosuch", "--axis",
                                             "CAC", "--to", "3", "--reason", "r", "--who", "me"],
                                            names="nosuch")],
    "mindeval correct --axis": [Case([*CORRECT, "--axis", "bogus", "--to", "3", "--reason", "r", "--who", "me"])],
    "mindeval correct --to": [Case([*CORRECT, "--axis", "CAC", "--to", "9", "--reason", "r",
                                    "--who", "me"])],
    "mindeval correct --reason": [Case([*CORRECT, "--axis", "CAC", "--to", "3", "--reason", " ",
                                        "--who", "me"])],
    "mindeval correct --reply": [Case(["correct", "{run}", "--reply", "x"])],
    "mindeval correct --question": [Case([*CORRECT, "--axis", "CAC", "--question", "bogus", "--to", "3", "--reason", "r",
                                          "--who", "me"])],
    "mindeval correct --sample": [Case(["correct", "{run}", "--sample", "x"])],
    "mindeval correct --who": [Case(["correct", "{run}", "--who", " ", "--list"])],
    "mindeval correct --db": [Case(["correct", "{run}", "--db", "nosuch://x", "--list"])],
    "mindeval correct --list": flag(["correct", "{run}"], "--list"),
    # metaeval compare
    "metaeval compare --humans": [Case([*COMPARE, "--humans", "{tmp}/nosuch.jsonl"], names="nosuch.jsonl")],
    "metaeval compare --target": [Case([*COMPARE, "--target", "nosuch"])],
    "metaeval compare --judges": [Case(["compare", "--judges", "A={tmp}/nosuch", "--out", "{tmp}/cmp"],
                                       names="nosuch")],
    "metaeval compare --study": [Case([*COMPARE, "--study", "x"])],
    "metaeval compare --mapping": [Case([*COMPARE, "--mapping", "{tmp}/nosuch.yaml"], names="nosuch.yaml")],
    "metaeval compare --zeros": [Case([*COMPARE, "--zeros", "bogus"])],
    "metaeval compare --tau": [Case([*COMPARE, "--tau", "z"])],
    "metaeval compare --mipsa-ties": [Case([*COMPARE, "--mipsa-ties", "bogus"])],
    "metaeval compare --paper-compatible": flag(COMPARE, "--paper-compatible"),
    "metaeval compare --exclude": [Case([*COMPARE, "--exclude", "nosuch"])],
    "metaeval compare --reference": [Case([*COMPARE, "--reference", "nosuch"])],
    "metaeval compare --self-system": [Case([*COMPARE, "--self-system", "noequals"])],
    "metaeval compare --resamples": [Case([*COMPARE, "--resamples", "-1"])],
    "metaeval compare --ci": [Case([*COMPARE, "--ci", "95"])],
    "metaeval compare --seed": [Case([*COMPARE, "--seed", "x"])],
    "metaeval compare --alpha": [Case([*COMPARE, "--alpha", "0"])],
    "metaeval compare --margin": [Case([*COMPARE, "--margin", "nan"])],
    "metaeval compare --epsilon": [Case([*COMPARE, "--epsilon", "1"])],
    "metaeval compare --min-gold-accuracy": [Case([*COMPARE, "--min-gold-accuracy", "2"])],
    "metaeval compare --no-alpha": flag(COMPARE, "--no-alpha"),
    "metaeval compare --no-plots": flag(COMPARE, "--no-plots"),
    "metaeval compare --out": [Case([*COMPARE, "--out", "{tmp}/a_file"])],
    # metaeval power
    "metaeval power --humans": [Case(["power", "--humans", "{tmp}/nosuch.jsonl", "--judges", "A={run}"],
                                     names="nosuch.jsonl")],
    "metaeval power --judges": [Case(["power", "--humans", "{data}/human_annotations.jsonl", "--judges",
                                      "A={tmp}/nosuch"], names="nosuch")],
    "metaeval power --pair": [Case([*POWER, "--pair", "X", "Y"])],
    "metaeval power --delta": [Case([*POWER, "--delta", "-1"])],
    "metaeval power --power": [Case([*POWER, "--power", "1"])],
    "metaeval power --alpha": [Case([*POWER, "--alpha", "x"])],
    "metaeval power --metric": [Case([*POWER, "--metric", "bogus"])],
    "metaeval power --axis": [Case([*POWER, "--axis", "bogus"])],
    "metaeval power --resamples": [Case([*POWER, "--resamples", "0"])],
    "metaeval power --seed": [Case([*POWER, "--seed", "x"])],
    "metaeval power --study": [Case([*POWER, "--study", "x"])],
    "metaeval power --mapping": [Case([*POWER, "--mapping", "{tmp}/nosuch.yaml"], names="nosuch.yaml")],
    "metaeval power --zeros": [Case([*POWER, "--zeros", "bogus"])],
    "metaeval power --tau": [Case([*POWER, "--tau", "z"])],
    "metaeval power --mipsa-ties": [Case([*POWER, "--mipsa-ties", "bogus"])],
    "metaeval power --target": [Case([*POWER, "--target", "nosuch"])],
    "metaeval power --out": [Case([*POWER, "--out", "{tmp}/a_file"])],
    # metaeval realism
    "metaeval realism --human-turns": [Case([*REALISM, "--human-turns", "{tmp}/nosuch.jsonl"], names="nosuch.jsonl")],
    "metaeval realism --study": [Case([*REALISM, "--study", "x"])],
    "metaeval realism --patient": [Case([*REALISM, "--patient", "nosuchprovider"])],
    "metaeval realism --patient-temperature": [Case([*REALISM, "--patient-temperature", "hot"])],
    "metaeval realism --temperature": [Case([*REALISM, "--temperature", "-1"])],
    "metaeval realism --patient-max-tokens": [Case([*REALISM, "--patient-max-tokens", "0"])],
    "metaeval realism --max-tokens": [Case([*REALISM, "--max-tokens", "x"])],
    "metaeval realism --patient-reasoning-effort": [Case([*REALISM, "--patient-reasoning-effort", "bogus"])],
    "metaeval realism --reasoning-effort": [Case([*REALISM, "--reasoning-effort", "bogus"])],
    "metaeval realism --patient-api-base": [Case([*REALISM, "--patient-api-base", "ftp://x"])],
    "metaeval realism --patient-timeout": [Case([*REALISM, "--patient-timeout", "0"])],
    "metaeval realism --patient-rpm": [Case([*REALISM, "--patient-rpm", "0"])],
    "metaeval realism --patient-tpm": [Case([*REALISM, "--patient-tpm", "x"])],
    "metaeval realism --api-base": [Case([*REALISM, "--api-base", "not a url"])],
    "metaeval realism --variants": [Case([*REALISM, "--variants", "bogus"])],
    "metaeval realism --embedder": [Case([*REALISM, "--embedder", "nosuch"])],
    "metaeval realism --limit": [Case([*REALISM, "--limit", "0"])],
    "metaeval realism --opener": [Case([*REALISM, "--opener", "${{nosuch}}"])],
    "metaeval realism --seed": [Case([*REALISM, "--seed", "x"])],
    "metaeval realism --out": [Case([*REALISM, "--out", "{tmp}/a_file"])],
    "metaeval realism --db": [Case([*REALISM, "--db", "nosuch://x"])],
    "metaeval realism --new-run": flag(REALISM, "--new-run"),
    "metaeval realism --overwrite": flag(REALISM, "--overwrite"),
    "metaeval realism --concurrency": [Case([*REALISM, "--concurrency", "0"])],
}

COVERED_ELSEWHERE = {"mindeval run", "mindeval judge", "metaeval judge"}  # their RunOptions fields: test_bad_inputs


def _walk(parser: argparse.ArgumentParser, path: str):
    """(command path, option string or positional name) of every option, through the sub-commands."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _walk(sub, f"{path} {name}")
        elif isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
            continue
        elif path in COVERED_ELSEWHERE and action.dest.split(".")[0] in RunOptions.model_fields:
            continue
        else:
            for option in action.option_strings or [action.dest]:
                yield f"{path} {option}"


def walked() -> list[str]:
    return [*_walk(mindeval_parser(), "mindeval"), *_walk(metaeval_parser(), "metaeval")]


def test_every_cli_option_has_a_bad_input_case():
    """A new option without a bad value in the catalogue fails here: add one."""
    options = walked()
    missing = sorted(set(options) - set(CATALOGUE))
    assert not missing, f"add a bad-input case to tests/cli/test_bad_cli_inputs.py CATALOGUE for {missing}"
    assert not set(CATALOGUE) - set(options), "a catalogue entry names no option"


CASES = [pytest.param(key, case, id=f"{key}-{k}".replace(" ", "_"),
                      marks=[pytest.mark.xfail(strict=True, reason=case.gap)] if case.gap else [])
         for key, cases in CATALOGUE.items() for k, case in enumerate(cases)]


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished fake run (one profile, two turns), shared read-only by the cases."""
    out = tmp_path_factory.mktemp("run") / "run"
    mp = pytest.MonkeyPatch()
    mp.setenv("MINDEVAL_CACHE_DIR", str(out.parent / "cache"))
    try:
        assert mindeval_main(["run", "--quiet", "--profiles", "demo", "--limit", "1", "--turns", "2",
                              "--patient", "fake/echo", "--clinician", "fake/echo", "--judge", "fake/judge",
                              "--out", str(out)]) == 0
    finally:
        mp.undo()
    profiles = [json.loads(line) for line in (ROOT / "data" / "demo_profiles.jsonl").read_text().splitlines()[:1]]
    plain = [{k: v for k, v in p.items() if not k.startswith("member_narrative")} for p in profiles]
    (out.parent / "plain.jsonl").write_text("".join(json.dumps(p) + "\n" for p in plain))  # no backstory yet
    return out


class Launched(Exception):
    """A command got as far as starting a server: the bad value was accepted."""


def _launched(*_args: object, **_kwargs: object) -> None:
    raise Launched


def _interaction(run: Path) -> str:
    with closing(sqlite3.connect(run / "run.db")) as db:
        return db.execute("SELECT id FROM interactions LIMIT 1").fetchone()[0]


def _snapshot(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_size for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize(("key", "case"), CASES)
def test_a_bad_option_is_one_line_exit_2_and_nothing_is_written(key, case, finished_run, shared_data, tmp_path,
                                                                capsys, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("MINDEVAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-dummy")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # an embedder name is looked up locally only: never the network
    monkeypatch.delenv("MINDEVAL_TEST_NO_SUCH_VAR", raising=False)
    (work / "a_file").write_text("in the way")
    values = {"tmp": work, "run": finished_run, "data": shared_data, "db": f"sqlite:///{work}/x.db",
              "plain": finished_run.parent / "plain.jsonl", "interaction": _interaction(finished_run)}
    argv = [a.format(**values) for a in case.argv]
    monkeypatch.setattr("os.execve", _launched)  # a bad value that reaches the server launch fails, not replaces pytest
    monkeypatch.setattr("annotation_app.supervisor.AppProcesses.run", _launched)
    monkeypatch.setattr("metaeval.realism.embed", _launched)  # no embedding model
    if "{db}" in case.argv and "create-study" not in case.argv:  # a study 's', a role-play study 'r', annotator 'a'
        for setup in (["create-study", "s"], ["create-study", "r", "--kind", "roleplay"], ["add-annotator", "a"]):
            assert mindeval_main([*ADMIN[:3], values["db"], *setup]) == 0
        if "assign" in case.argv:
            assert mindeval_main([*ADMIN[:3], values["db"], "import", "s", str(finished_run)]) == 0
        capsys.readouterr()
    run_before = _snapshot(finished_run)
    program, option = key.split(" ")[0], key.split(" ")[-1]
    before = _snapshot(work)
    code = (mindeval_main if program == "mindeval" else metaeval_main)(argv)
    err = capsys.readouterr().err
    after = set(_snapshot(work)) - set(before) | {"a_file"}
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith("warning:")]
    assert code == 2, (code, err)
    assert len(lines) == 1 and "Traceback" not in err, err
    at = max((i for i, a in enumerate(case.argv[:-1]) if a == option), default=len(argv) - 2)
    bad = argv[at + 1]  # the value after the option's last occurrence (or the last argument)
    bare = option.lstrip("-")  # "--qualify-pass": "qualify-pass", "qualify_pass", or the bad value quoted
    names = {case.names} if case.names else {bare, bare.replace("-", "_"), repr(bad)}
    assert any(n in lines[0] for n in names) or (len(bad) > 3 and bad in lines[0]), (names, lines[0])
    assert {f for f in after if not f.startswith("x.db")} == {"a_file"}, sorted(after)  # nothing written
    assert (work / "a_file").read_text() == "in the way"
    assert _snapshot(finished_run) == run_before
