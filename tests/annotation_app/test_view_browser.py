"""`mindeval view` in headless Chromium: open runs, filter failed conversations, open one."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from appkit import ROOT, free_port, stop, wait_healthy
from browserkit import choose, open_browser, settle

from tests.support.viewruns import make_runs

pytestmark = pytest.mark.browser
SHOTS = ROOT / "test-artifacts"


@pytest.fixture
def runs(tmp_path):
    return make_runs(tmp_path / "runs")  # before the browser: playwright's sync API holds an event loop


@pytest.fixture
def browser_page(runs, tmp_path):
    yield from open_browser(tmp_path)


def test_open_filter_failed_and_open_one(runs, browser_page, tmp_path):
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    log = (tmp_path / "view.log").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "mindeval", "view", *map(str, runs.values()), "--port", str(port)],
                            stdout=log, stderr=subprocess.STDOUT, env=env, cwd=tmp_path)
    try:
        wait_healthy(port, proc)
        page = browser_page
        page.goto(f"http://127.0.0.1:{port}/")
        page.get_by_text("12 of 12 conversations").wait_for()
        settle(page)
        SHOTS.mkdir(exist_ok=True)
        page.screenshot(path=str(SHOTS / "view-list.png"), full_page=True)

        page.get_by_text("Failed only").click()
        page.get_by_text("6 of 12 conversations").wait_for()
        settle(page)
        choose(page, page.get_by_role("combobox", name="Open a conversation"), re.compile("^badclin"))
        page.get_by_text("interaction: clinician fake/error: simulated provider failure").wait_for()
        settle(page)
        page.screenshot(path=str(SHOTS / "view-failed.png"), full_page=True)

        page.get_by_text("All", exact=True).click()
        page.get_by_text("12 of 12 conversations").wait_for()
        settle(page)
        choose(page, page.get_by_role("combobox", name="Open a conversation"), re.compile("^hostile"))
        page.locator(".st-key-turn-3").wait_for()
        settle(page)
        assert page.evaluate("() => window.__pwned") is None  # the clinician's markup never ran
        assert "<script>window.__pwned = 1</script>" in page.locator(".st-key-turn-3").inner_text()
        assert page.locator(".st-key-judge-0").get_by_text('"CAC"').count() >= 1  # the judge's full reply
        page.screenshot(path=str(SHOTS / "view-hostile.png"), full_page=True)
    finally:
        stop(proc)
