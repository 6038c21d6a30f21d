"""One run configuration model, one set of names: the options of ``mindeval run``, ``mindeval
judge`` and ``metaeval judge``, the fields of :class:`RunOptions` (the keys of a run file and the
Python API) and the table of keys in ``docs/configuration.md`` agree, every option reaches its
field, and a run file's unknown or repeated key is one line ``file:line:key``."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest

from mindeval.cli import build_parser as mindeval_parser
from mindeval.cli import main
from mindeval.cli.meta import build_parser as metaeval_parser
from mindeval.cli.options import options_of
from mindeval.errors import MindEvalError
from mindeval.records import CONFIG_FILE, RunConfig
from mindeval.run_options import ROLE_FIELDS, RunOptions, cli_option, option_keys
from mindeval.runfile import read_run_file

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
NOT_A_KEY = {"--config", "-h"}  # --config names the run file itself


def _sub(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[name]


PARSERS = {"r": lambda: _sub(mindeval_parser(), "run"), "j": lambda: _sub(mindeval_parser(), "judge"),
           "m": lambda: _sub(metaeval_parser(), "judge")}


def _visible(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {a.option_strings[0]: a for a in parser._actions if a.option_strings and a.help != argparse.SUPPRESS}


def _table() -> dict[str, tuple[str, str]]:
    """``docs/configuration.md``'s keys (``ROLE.x`` expanded): key -> (option, commands)."""
    rows: dict[str, tuple[str, str]] = {}
    for line in DOC.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 5 or not cells[0].startswith("`"):
            continue
        key, option, commands = cells[0].strip("`"), cells[1].strip("`"), cells[2]
        for role in (ROLE_FIELDS if key.startswith("ROLE.") else ("",)):
            k = key.replace("ROLE", role)
            assert k not in rows, f"{k} documented twice"
            cmds = ("r" if role != "judge" else "r j m") if commands == "as `ROLE`" or commands.startswith("r; judge") \
                else commands
            rows[k] = (option.replace("ROLE", role) if option != "—" else "", cmds)
    return rows


def test_the_documented_keys_are_the_models_fields_and_the_options_names():
    table = _table()
    assert sorted(table) == sorted(option_keys())
    for key, (option, _) in table.items():
        assert option == (cli_option(key) or ""), key


@pytest.mark.parametrize("command", list(PARSERS))
def test_every_option_of_a_command_is_a_documented_key(command):
    table = _table()
    by_option = {opt: key for key, (opt, _) in table.items() if opt}
    visible = _visible(PARSERS[command]())
    assert set(visible) - NOT_A_KEY <= set(by_option), "options without a key"
    for opt in by_option:  # the table says which commands offer each option
        key = by_option[opt]
        offered = re.findall(r"\b[rjm]\b", table[key][1].split("(")[0])
        assert (opt in visible) == (command in offered), (command, opt)


def _value(action: argparse.Action, tmp: Path) -> list[str]:
    """Command-line words that give ``action`` a value other than its default."""
    if isinstance(action, argparse._StoreTrueAction):
        return [action.option_strings[0]]
    if action.choices:
        return [action.option_strings[0], [c for c in action.choices if c != action.default][-1]]
    name = action.option_strings[0]
    special = {"--out": str(tmp / "other"), "--db": "sqlite:///x.db", "--assume-reply-tokens": "judge=5",
               "--patient": "fake/echo", "--clinician": "fake/echo", "--judge": "fake/judge:x",
               "--annotations": "b.jsonl", "--fewshot-file": "f.jsonl"}
    special |= {name: "http://127.0.0.1:9/v1"} if name.endswith("api-base") else {}
    for text in ([special[name]] if name in special else ["2", "3", "0.5", "a-text"]):
        try:
            parsed = action.type(text) if action.type else text
        except (ValueError, TypeError, MindEvalError):
            continue
        if parsed != action.default:
            return [name, text]
    raise AssertionError(f"no test value for {name}")


@pytest.mark.parametrize("command", list(PARSERS))
def test_every_option_reaches_its_field(command, tmp_path):
    parser = PARSERS[command]()
    table = _table()
    by_option = {opt: key for key, (opt, _) in table.items() if opt}
    required = {"j": ["SOURCE", "--judge", "fake/judge", "--out", str(tmp_path / "o")],
                "m": ["--annotations", "a.jsonl", "--judge", "fake/judge", "--out", str(tmp_path / "o")]}.get(command, [])
    base = options_of(parser.parse_args(required))
    for opt, action in _visible(parser).items():
        if opt in NOT_A_KEY:
            continue
        key = by_option[opt]
        given = options_of(parser.parse_args([*required, *_value(action, tmp_path)]))
        field, _, setting = key.partition(".")
        got, default = getattr(given, field), getattr(base, field)
        if setting:
            got, default = getattr(got, setting or "model"), getattr(default, setting or "model")
        assert got != default, f"{command} {opt} does not reach {key}"


def test_config_json_records_the_options_by_their_names(tmp_path):
    """A benchmark run's ``config.json``: each key of ``config`` is an option's name or a resolved
    value the documentation lists."""
    run = tmp_path / "run"
    assert main(["run", "--patient", "fake/echo", "--clinician", "fake/echo", "--judge", "fake/judge",
                 "--profiles", "demo", "--limit", "1", "--turns", "2", "--quiet", "--out", str(run)]) == 0
    recorded = RunConfig.read(run / CONFIG_FILE).model_dump(mode="json")
    resolved = {"prompts", "profile_ids", "profiles_source", "profiles_sha256", "guidelines_version", "opening_line",
                "fewshot_sha256", "fewshot_source", "answer_prompt", "package_version"}
    text = DOC.read_text().split("## What `config.json` records")[1]
    for key in recorded:
        assert key in RunOptions.model_fields or key in resolved, key
        assert f"`{key}`" in text, key
    for role in ROLE_FIELDS:
        assert set(recorded[role]) <= {k.split(".")[1] for k in option_keys() if k.startswith(role + ".")}


RATED = {"annotations_sha256", "interaction_ids", "fewshot_interaction_ids", "fewshot_scores", "mapping_version"}


def test_a_judge_runs_config_json_is_the_same_model(tmp_path, shared_data):
    """A judge run over rated interactions records the same model: option names, the resolved
    values above, and what it judged (each listed in the documentation)."""
    assert main(["judge", str(shared_data / "human_annotations.jsonl"), "--judge", "fake/judge", "--quiet",
                 "--fewshot-k", "1", "--out", str(tmp_path / "mj")]) == 0
    recorded = RunConfig.read(tmp_path / "mj" / CONFIG_FILE).model_dump(mode="json")
    text = DOC.read_text().split("## What `config.json` records")[1]
    assert RATED <= set(recorded) and not {"patient", "clinician", "turns", "profile_ids"} & set(recorded)
    for key in recorded:
        assert key in RunOptions.model_fields or key in RATED or key in {"prompts", "fewshot_sha256",
                                                                         "fewshot_source", "package_version"}, key
        assert f"`{key}`" in text, key


# ------------------------------------------------------------------ unknown and repeated keys

CASES = {
    "unknown.yaml": ("clinician: fake/echo\nturns: 2\nturnz: 4\nout: D\n", 3, "turnz"),
    "unknown-role-setting.yaml": ("clinician: fake/echo\njudge:\n  model: fake/judge\n  temprature: 0.5\n", 4,
                                  "judge.temprature"),
    "twice.yaml": ("clinician: fake/echo\nturns: 2\nseed: 1\nturns: 3\n", 4, "turns"),
    "twice-nested.yaml": ("judge:\n  model: fake/judge\n  model: fake/echo\n", 3, "model"),
    "old-and-new-name.yaml": ("fewshot: a.jsonl\nfewshot_file: b.jsonl\n", 2, "fewshot_file"),
    "unknown.json": ('{\n  "clinician": "fake/echo",\n  "fewshot_files": "x"\n}\n', 3, "fewshot_files"),
    "twice.json": ('{\n  "seed": 1,\n  "turns": 2,\n  "seed": 2\n}\n', 4, "seed"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_an_unknown_or_repeated_key_is_file_line_key(tmp_path, name, capsys):
    text, line, key = CASES[name]
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(MindEvalError) as exc:
        read_run_file(path)
    assert (exc.value.path, exc.value.line, exc.value.field) == (str(path), line, key)
    assert main(["run", "--config", str(path)]) == 2  # the command line: that one line, no traceback
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path}:{line}:{key}: ") and "Traceback" not in err


def test_old_run_file_keys_are_read_under_their_new_names(tmp_path):
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"clinicians": ["fake/echo", "fake/echo:b"], "judge": "fake/judge", "db_url": "sqlite:///x.db",
                                "fewshot": "f.jsonl", "progress": False, "out": str(tmp_path / "o")}))
    keys, replay = read_run_file(path)
    assert replay is None
    assert (keys["db"], keys["fewshot_file"], keys["quiet"]) == ("sqlite:///x.db", "f.jsonl", True)
    assert [m if isinstance(m, str) else m["model"] for m in keys["clinician"]] == ["fake/echo", "fake/echo:b"]
