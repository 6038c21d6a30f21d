"""Figures trust only what they verified: the leaderboard and ``mindeval export`` refuse a run whose
``config.json`` was edited after the run (against its recorded hash and the run store), in one
line naming the file and the field, exit 2; a ``package_version`` is shown as recorded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mindeval.cli import main
from tests.support.errors import one_line_error


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("edited")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MINDEVAL_CACHE_DIR", str(root / "cache"))
        mp.chdir(root)
        for name, clinician in (("a", "fake/echo"), ("b", "fake/echo:other")):
            assert main(["run", "--quiet", "--profiles", "demo", "--turns", "2", "--clinician", clinician,
                         "--patient", "fake/echo", "--judge", "fake/judge", "--out", str(root / name)]) == 0
    return root


def _copy(made: Path, tmp_path: Path) -> tuple[Path, Path]:
    import shutil

    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(made / "a", a)
    shutil.copytree(made / "b", b)
    return a, b


def _edit(run: Path, change) -> bytes:
    data = json.loads((run / "config.json").read_text())
    change(data)
    (run / "config.json").write_text(json.dumps(data, indent=2))
    return (run / "run.db").read_bytes()


EDITS = {
    "turns": (lambda d: d["config"].update(turns=12), "config.json:config.turns: edited after the run"),
    "judge": (lambda d: d["config"]["judge"].update(model="fake/other"), "config.json:config.judge.model: edited"),
    "config_hash": (lambda d: d.update(config_hash="0" * 64), "config.json:config_hash: edited after the run"),
}


@pytest.mark.parametrize("what", sorted(EDITS))
@pytest.mark.parametrize("command", ["leaderboard", "export"])
def test_an_edited_config_is_refused_in_one_line_naming_file_and_field(made, tmp_path, capsys, what, command):
    a, b = _copy(made, tmp_path)
    change, expected = EDITS[what]
    store = _edit(b, change)
    argv = [command, str(a), str(b)] + (["--no-report"] if command == "leaderboard" else
                                         ["--format", "hf", "--out", str(tmp_path / "hf")])
    assert main(argv) == 2
    err = one_line_error(capsys)
    assert f"{b}/{expected}" in err
    assert (b / "run.db").read_bytes() == store  # verifying changes nothing
    assert not (tmp_path / "hf").exists() or not any((tmp_path / "hf").iterdir())


def test_the_same_edit_without_the_store_is_caught_by_the_hash(made, tmp_path, capsys):
    a, b = _copy(made, tmp_path)
    _edit(b, lambda d: (EDITS["turns"][0](d), d.update(database=f"sqlite:///{tmp_path}/moved.db")))
    (b / "run.db").unlink()  # a store moved away: the file's own hash still tells
    assert main(["leaderboard", str(a), str(b), "--no-report"]) == 2
    assert f"{b}/config.json:config_hash: edited after the run" in one_line_error(capsys)


def test_a_store_without_the_run_is_refused(made, tmp_path, capsys):
    a, b = _copy(made, tmp_path)
    (b / "run.db").write_bytes((a / "run.db").read_bytes())
    assert main(["leaderboard", str(a), str(b), "--no-report"]) == 2
    assert f"{b}/config.json:run_id: edited after the run" in one_line_error(capsys)


def test_a_foreign_package_version_is_kept_and_shown_as_recorded(made, tmp_path, capsys):
    a, b = _copy(made, tmp_path)
    _edit(b, lambda d: d["config"].update(package_version="9.9.9"))  # not hashed: the version that made it
    before = (b / "config.json").read_bytes()
    assert main(["leaderboard", str(a), str(b), "--no-report"]) == 0
    assert main(["export", str(a), str(b), "--format", "hf", "--out", str(tmp_path / "hf")]) == 0
    versions = {json.loads(line)["run_id"]: json.loads(line)["mindeval_version"]
                for line in (tmp_path / "hf" / "runs.jsonl").read_text().splitlines()}
    assert json.loads(before)["run_id"] in versions and "9.9.9" in versions.values()
    assert (b / "config.json").read_bytes() == before  # never rewritten
