"""Safety net II: a cost cap nothing switches off, damaged stores and binary files as one line,
a wrong type in a target file reported by `validate` as by `run`, the version that made a run kept."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from mindeval import __version__
from mindeval.cli import main
from mindeval.cli.meta import main as metaeval_main
from tests.support.errors import one_line_error

ECHO = ["--patient", "fake/echo", "--clinician", "fake/echo", "--judge", "fake/judge", "--quiet"]
TOY = Path(__file__).resolve().parents[1] / "fixtures" / "targets" / "toy"


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN", "0", "-1"])
def test_max_cost_must_be_finite_and_positive_in_run(tmp_path, capsys, value):
    out = tmp_path / "D"
    assert main(["run", *ECHO, "--limit", "1", "--turns", "1", f"--max-cost={value}", "--out", str(out)]) == 2
    assert "--max-cost" in one_line_error(capsys)
    assert not (out / "run.db").exists()  # refused before anything is written


@pytest.mark.parametrize("value", ["nan", "inf", "-1"])
def test_max_cost_is_checked_by_metaeval_judge(tmp_path, capsys, value, shared_data):
    out = tmp_path / "J"
    rc = metaeval_main(["judge", "--annotations", str(shared_data / "human_annotations.jsonl"),
                        "--judge", "fake/judge", f"--max-cost={value}", "--out", str(out)])
    assert rc == 2 and "--max-cost" in one_line_error(capsys)
    assert not (out / "run.db").exists()


def test_stopped_line_reports_what_the_table_and_store_say(tmp_path, capsys, monkeypatch):
    from mindeval.llm import cost

    priced = (cost.Prices(1e-4, 1e-4, 1e-5), 1e-4)  # every model priced: the budget and the table both count
    monkeypatch.setattr(cost, "_lookup", lambda model: priced)
    out = tmp_path / "D"
    args = [*ECHO[:-1], "--limit", "3", "--turns", "4", "--concurrency", "4", "--out", str(out)]
    assert main(["run", *args, "--max-cost", "0.6"]) == 1
    printed = capsys.readouterr().out
    s = json.loads((out / "summary.json").read_text())
    table = sum(v["cost_usd"] for v in s["tokens"].values() if v["cost_usd"])
    stopped = next(ln for ln in printed.splitlines() if ln.startswith("STOPPED:"))
    assert f"spent ${table:.4f} in all" in stopped


def damage(db: Path) -> None:
    data = bytearray(db.read_bytes())
    data[100:4096 * 2] = b"\xff" * (4096 * 2 - 100)  # the first pages: the schema is unreadable
    db.write_bytes(bytes(data))


@pytest.fixture
def damaged_run(tmp_path) -> Path:
    out = tmp_path / "D"
    assert main(["run", *ECHO, "--limit", "1", "--turns", "1", "--out", str(out)]) == 0
    for extra in out.glob("run.db-*"):
        extra.unlink()
    damage(out / "run.db")
    return out


@pytest.mark.parametrize("command", [
    ["export", "{out}", "--format", "hf", "--out", "{tmp}/E"],
    ["view", "{out}", "--html", "{tmp}/v.html"],
    ["correct", "{out}", "--list"],
    ["run", *ECHO, "--limit", "1", "--turns", "1", "--out", "{out}"],
])
def test_a_damaged_store_is_one_line_in_every_command(damaged_run, tmp_path, capsys, command):
    before = (damaged_run / "run.db").read_bytes()
    argv = [a.format(out=damaged_run, tmp=tmp_path) for a in command]
    assert main(argv) == 2
    assert "damaged or not a MindEval store" in one_line_error(capsys)
    assert (damaged_run / "run.db").read_bytes() == before


def test_a_foreign_file_as_store_is_one_line(tmp_path, capsys):
    out = tmp_path / "D"
    assert main(["run", *ECHO, "--limit", "1", "--turns", "1", "--out", str(out)]) == 0
    (out / "run.db").write_bytes(b"this is not a database at all" * 200)
    assert main(["view", str(out), "--html", str(tmp_path / "v.html")]) == 2
    assert "damaged or not a MindEval store" in one_line_error(capsys)


def test_a_binary_prompt_file_is_one_line_naming_it(tmp_path, capsys):
    bad = tmp_path / "judge.txt"
    bad.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe binary")
    out = tmp_path / "D"
    assert main(["run", *ECHO, "--limit", "1", "--turns", "1", "--judge-prompt", str(bad), "--out", str(out)]) == 2
    err = one_line_error(capsys)
    assert str(bad) in err and "not UTF-8" in err


def test_a_binary_run_file_is_one_line_naming_it(tmp_path, capsys):
    bad = tmp_path / "run.yaml"
    bad.write_bytes(b"seed: \xff\xfe\x00")
    assert main(["run", "--config", str(bad)]) == 2
    err = one_line_error(capsys)
    assert str(bad) in err and "not UTF-8" in err


@pytest.mark.parametrize("field,value", [("sessions", "two"), ("turns", "many"), ("repeats", [1])])
def test_validate_reports_a_wrong_type_as_run_does(tmp_path, capsys, field, value):
    toy = Path(shutil.copytree(TOY, tmp_path / "toy"))
    manifest = toy / "target.yaml"
    text = manifest.read_text()
    manifest.write_text(text + f"\n{field}: {json.dumps(value)}\n")
    assert main(["targets", "validate", str(toy)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and f"{manifest}:" in err and field in err


def test_a_resumed_run_keeps_the_version_that_started_it(tmp_path, capsys):
    from sqlalchemy import create_engine, text

    out = tmp_path / "D"
    args = ["run", *ECHO[:-1], "--limit", "1", "--turns", "1", "--out", str(out)]
    assert main(args) == 0
    engine = create_engine(f"sqlite:///{out / 'run.db'}")
    with engine.begin() as conn:
        conn.execute(text("UPDATE runs SET package_version = '9.9.9'"))
    engine.dispose()
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert json.loads((out / "config.json").read_text())["config"]["package_version"] == "9.9.9"
    assert f"started by mindeval 9.9.9; mindeval {__version__} resumes it" in printed
