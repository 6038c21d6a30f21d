"""A correction made in the run viewer in headless Chromium: refused without a reason, then saved;
it changes the `--with-corrections` leaderboard, is listed with its provenance in the export, and
the judge's own record (run store and judgments.jsonl) is unchanged."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys

import pytest
from appkit import ROOT, free_port, stop, wait_healthy
from browserkit import choose, open_browser, settle

from mindeval.leaderboard import build_leaderboard
from mindeval.publish import load_published
from mindeval.publish.hf import write_hf

pytestmark = pytest.mark.browser
SHOTS = ROOT / "test-artifacts"
RUN = ROOT / "tests" / "fixtures" / "main_665ffb1" / "corr_run"  # a run made by main 665ffb1 (store version 2)


def _judge_rows(db) -> list:
    with sqlite3.connect(db) as c:
        return c.execute("SELECT interaction_id, sample, scores_json, raw_text, parse_status FROM judgments "
                         "ORDER BY id").fetchall()


@pytest.fixture
def run(tmp_path):
    out = tmp_path / "run"
    shutil.copytree(RUN, out)
    return out


@pytest.fixture
def browser_page(run, tmp_path):
    yield from open_browser(tmp_path)


def test_a_correction_made_in_the_browser_reaches_the_leaderboard_and_the_export(run, browser_page, tmp_path):
    first = json.loads((run / "judgments.jsonl").read_text().splitlines()[0])
    iid, judged = first["interaction_id"], first["scores"]["CAC"]
    assert judged != 6
    before_rows, before_file = _judge_rows(run / "run.db"), (run / "judgments.jsonl").read_bytes()
    judge_only = build_leaderboard([run]).table.systems[0].results["CAC"].mean

    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "USER": "tester"}
    log = (tmp_path / "view.log").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "mindeval", "view", str(run), "--port", str(port)],
                            stdout=log, stderr=subprocess.STDOUT, env=env, cwd=tmp_path)
    try:
        wait_healthy(port, proc)
        page = browser_page
        page.goto(f"http://127.0.0.1:{port}/")
        page.get_by_text("2 of 2 conversations").wait_for()
        settle(page)
        choose(page, page.get_by_role("combobox", name="Open a conversation"), re.compile("marisol", re.IGNORECASE))
        judge = page.locator(".st-key-judge-0")
        judge.wait_for()
        settle(page)
        judge.get_by_text("Correct a judge value").click()
        choose(page, judge.get_by_role("combobox", name="Value to correct"), re.compile(r"^CAC \(conversation score"))
        judge.get_by_label("Corrected value").fill("6")
        judge.get_by_role("button", name="Save correction").click()  # no reason: refused
        page.get_by_text("A correction needs a reason").wait_for()
        settle(page)
        assert "corrections" not in _tables(run / "run.db") or _count(run) == 0  # nothing stored
        judge.get_by_label("Reason (required)").fill("the clinician reflected the patient's feelings accurately")
        judge.get_by_label("Your name").fill("dr reviewer")
        judge.get_by_role("button", name="Save correction").click()
        settle(page)
        SHOTS.mkdir(exist_ok=True)
        page.screenshot(path=str(SHOTS / "view-correct.png"), full_page=True)
        page.get_by_text(re.compile(rf"Saved: dr reviewer \(self-declared\) .*CAC {judged} → 6")).wait_for()
        settle(page)
        page.get_by_text("Corrections (newest last").wait_for()
    finally:
        stop(proc)

    # the judge's record is unchanged: the judgments table and judgments.jsonl
    assert _judge_rows(run / "run.db") == before_rows
    assert (run / "judgments.jsonl").read_bytes() == before_file
    # the leaderboard: the judge's values by default, the correction with --with-corrections
    assert build_leaderboard([run]).table.systems[0].results["CAC"].mean == judge_only
    fixed = build_leaderboard([run], with_corrections=True)
    other = json.loads((run / "judgments.jsonl").read_text().splitlines()[1])["scores"]["CAC"]
    assert fixed.table.systems[0].results["CAC"].mean == pytest.approx((6 + other) / 2)
    assert fixed.runs[0].corrections.model_dump() == {"corrections": 1, "scores": 1, "conversations": 1}
    # the export lists it with its provenance
    out = tmp_path / "export"
    write_hf(load_published([run]), out)
    rows = [json.loads(x) for x in (out / "corrections.jsonl").read_text().splitlines()]
    assert len(rows) == 1
    row = rows[0]
    assert (row["interaction_id"], row["axis"], row["from"], row["to"], row["who"], row["unit"]) == \
        (iid, "CAC", judged, 6, "dr reviewer", "conversation")
    assert row["reason"] == "the clinician reflected the patient's feelings accurately" and row["at"]
    assert row["who_source"] == "self-declared"  # a typed name is the reviewer's own word
    assert "| dr reviewer | self-declared |" in (out / "README.md").read_text()


def _tables(db) -> set[str]:
    with sqlite3.connect(db) as c:
        return {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _count(run) -> int:
    with sqlite3.connect(run / "run.db") as c:
        return c.execute("SELECT count(*) FROM corrections").fetchone()[0]
