"""A store shared by several output directories (``--db`` elsewhere: PostgreSQL, or one SQLite
file): a fresh directory starts its own run whatever other directories' runs hold, and a
directory re-run with other options is still refused with a diff (its own recorded run)."""

from __future__ import annotations

import json

import pytest

from mindeval.cli import main

FAKE = ["--patient", "fake/echo", "--clinician", "fake/echo", "--judge", "fake/judge", "--limit", "1", "--quiet"]


@pytest.mark.parametrize("db", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_a_fresh_directory_in_a_shared_store_starts_its_own_run(tmp_path, db, request, capsys):
    url = f"sqlite:///{tmp_path / 'shared.db'}" if db == "sqlite" else request.getfixturevalue("pg_url")
    a, b = tmp_path / "a", tmp_path / "b"
    assert main(["run", *FAKE, "--turns", "2", "--db", url, "--out", str(a)]) == 0
    # another directory, other options: its own new run (before: refused, "this output directory
    # holds a run with a different configuration", naming the other directory's run)
    assert main(["run", *FAKE, "--turns", "4", "--db", url, "--out", str(b)]) == 0
    run_a, run_b = (json.loads((d / "config.json").read_text())["run_id"] for d in (a, b))
    assert run_a != run_b
    assert json.loads((b / "summary.json").read_text())["calls_made"] > 0
    capsys.readouterr()
    # the first directory re-run with other options: refused with the diff of its own run
    assert main(["run", *FAKE, "--turns", "6", "--db", url, "--out", str(a)]) == 2
    assert "turns: 2 -> 6" in capsys.readouterr().err
    # and re-run as it was: resumed, nothing bought again
    assert main(["run", *FAKE, "--turns", "2", "--db", url, "--out", str(a)]) == 0
    assert json.loads((a / "summary.json").read_text())["calls_made"] == 0
