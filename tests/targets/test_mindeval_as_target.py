"""MindEval is a target like any other: every run directory carries its target block (an
older MindEval directory gets it when read, ``mindeval.rundir``), and code reads the target's
declared properties, never ``target is None``; what MindEval's pinned files need is declared
in its manifest (``legacy_files``, ``authors_release``) and refused where it would lie."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

import mindeval
from mindeval.errors import MindEvalError
from mindeval.resources import targets_dir
from mindeval.rundir import legacy_target, upgrade_config
from mindeval.targets import load_target, validate_target

ROOT = Path(mindeval.__file__).resolve().parents[1]
SPECIAL = re.compile(r"\btarget is (not )?None\b|\btarget_of\b|\bis_default\b")


def test_no_target_is_none_branches_anywhere():
    found: dict[str, int] = {}
    for pkg in ("mindeval", "metaeval", "annotation_app"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            n = len(SPECIAL.findall(path.read_text(encoding="utf-8")))
            if n:
                found[path.relative_to(ROOT).as_posix()] = n
    assert found == {}


def test_mindeval_declares_its_pinned_layout_and_a_missing_block_is_it():
    t = load_target("mindeval")
    assert t.manifest.legacy_files and t.manifest.authors_release and t.block() == legacy_target()
    info = legacy_target()
    assert info.name == "mindeval" and info.legacy_files and info.sha256 == t.sha256
    old = {"turns": 20}  # a config written before run directories carried their target
    assert upgrade_config(old) == {"turns": 20, "target": info.model_dump(mode="json")}
    assert upgrade_config({**old, "target": {"name": "crisis"}})["target"] == {"name": "crisis"}
    crisis = load_target("crisis")
    assert not crisis.manifest.legacy_files and not crisis.manifest.authors_release
    block = crisis.block()
    assert block is not None and "legacy_files" not in block.model_dump()


def _copy(tmp_path: Path, name: str, edit) -> Path:
    folder = tmp_path / name
    shutil.copytree(targets_dir() / "mindeval", folder)
    manifest = folder / "target.yaml"
    text = manifest.read_text(encoding="utf-8").replace("name: mindeval", f"name: {name}")
    manifest.write_text(edit(text), encoding="utf-8")
    return folder


def test_a_copy_keeping_legacy_files_is_refused_naming_the_line(tmp_path):
    folder = _copy(tmp_path, "mycopy", lambda t: t)
    line = next(n for n, s in enumerate((folder / "target.yaml").read_text().splitlines(), 1)
                if s.startswith("legacy_files"))
    with pytest.raises(MindEvalError) as exc:
        load_target(folder)
    assert str(exc.value).startswith(f"{folder / 'target.yaml'}:{line}:legacy_files: legacy_files is the built-in")
    assert [p.field for p in validate_target(folder)] == ["legacy_files"]
    # without it, the copy is an ordinary target: its runs record a block
    fixed = _copy(tmp_path, "fixed", lambda t: t.replace("legacy_files: true\n", ""))
    assert validate_target(fixed) == []
    assert load_target(fixed).block().name == "fixed"


def test_authors_release_needs_mindevals_dimensions(tmp_path):
    folder = _copy(tmp_path, "other", lambda t: t.replace("legacy_files: true\n", ""))
    shutil.copy(targets_dir() / "crisis" / "guidelines.yaml", folder / "guidelines.yaml")
    manifest = folder / "target.yaml"
    manifest.write_text(manifest.read_text().replace("guidelines: builtin:guidelines.yaml",
                                                     "guidelines: guidelines.yaml"))
    assert "authors_release" in [p.field for p in validate_target(folder)]


def test_a_run_directory_made_before_target_blocks_is_read_resumed_and_upgraded(tmp_path):
    """A MindEval run written before run directories carried their target (no block in
    config.json nor in the store) reads as mindeval's, resumes with no call repeated, and is
    written back with its block."""
    import json

    from sqlalchemy import select

    from mindeval.cli import main
    from mindeval.records import AXES
    from mindeval.rundir import read_run
    from mindeval.store.db import Database, sqlite_url
    from mindeval.store.tables import RunRow

    out = tmp_path / "run"
    args = ["run", "--patient", "fake/echo", "--clinician", "fake/echo", "--judge", "fake/judge", "--profiles",
            "demo", "--limit", "2", "--turns", "2", "--concurrency", "1", "--quiet", "--out", str(out)]
    assert main(args) == 0
    cfg = json.loads((out / "config.json").read_text())
    block = cfg["config"].pop("target")  # as the code before target blocks wrote it
    (out / "config.json").write_text(json.dumps(cfg, indent=2))
    db = Database(sqlite_url(out / "run.db"))
    with db.write() as s:
        for row in s.scalars(select(RunRow)):
            row.config_json = {k: v for k, v in row.config_json.items() if k != "target"}
    db.close()
    run = read_run(out)
    assert run.target == legacy_target() and run.axes == AXES and len(run.judgments) == 2
    assert main(args) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["resumed"] and summary["calls_made"] == 0 and summary["run_id"] == cfg["run_id"]
    again = json.loads((out / "config.json").read_text())
    assert again["config"]["target"] == block and again["config_hash"] == cfg["config_hash"]
