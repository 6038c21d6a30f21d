"""A leaderboard column is one spec (mindeval.leaderboard.columns) rendered by every format.

The worked example of docs/architecture.md ("adding a leaderboard column") is the real "failed" entry:
failed conversations per system, computed from the loaded run, in Markdown, LaTeX, CSV and JSON.
"""

from __future__ import annotations

import csv
import json

from leaderboard_rundirs import uniform, write_run

from mindeval.leaderboard import StatsSettings, build_leaderboard, columns, write_outputs


def test_the_failed_column_is_one_entry_in_every_format(tmp_path):
    """``COLUMNS``' "failed" entry: shown when a run has a failed conversation, in every format."""
    ids = [f"p{i:02d}" for i in range(10)]
    a = write_run(tmp_path / "a", "vendor/a", uniform(4, 10), profile_ids=ids)
    b = write_run(tmp_path / "b", "vendor/b", {p: [3, 3, 3, 3, 3] for p in ids if p != "p04"}, profile_ids=ids,
                  failed_interactions=["p04"])
    assert [c.key for c in columns.COLUMNS].count("failed") == 1
    lb = build_leaderboard([a, b], StatsSettings(seed=1), allow_incomplete=True)
    out = tmp_path / "board"
    write_outputs(lb, out)
    md = (out / "leaderboard.md").read_text()
    assert "| # | System | n | Scored | Average | CAC | EPC | AR | TRA | ASCQ | Failed |" in md
    assert "| 10/10 | **4.00** (1) |" in md and md.count(" | 1 |\n") == 1
    tex = (out / "leaderboard.tex").read_text()
    assert r"Model & Average & CAC & EPC & AR & TRA & ASCQ & Failed \\" in tex and "{lrrrrrrr}" in tex
    rows = {r["system"]: r for r in csv.DictReader((out / "leaderboard.csv").open())}
    assert (rows["vendor/a"]["n_failed"], rows["vendor/b"]["n_failed"]) == ("0", "1")
    assert json.loads((out / "leaderboard.json").read_text())["columns"] == {"failed": {"vendor/a": 0, "vendor/b": 1}}


def test_without_a_failed_conversation_there_is_no_failed_column_nor_columns_key(tmp_path):
    ids = [f"p{i:02d}" for i in range(10)]
    lb = build_leaderboard([write_run(tmp_path / "a", "vendor/a", uniform(4, 10), profile_ids=ids)],
                           StatsSettings(seed=1))
    write_outputs(lb, tmp_path / "board")
    assert "columns" not in json.loads((tmp_path / "board" / "leaderboard.json").read_text())
    assert "Failed" not in (tmp_path / "board" / "leaderboard.md").read_text()
    assert lb.run_data["vendor/a"].n_interactions == 10
