"""The rating page in a real browser: rapid clicks are never lost, keyboard rating (1-6 and a
categorical form's levels), layout."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from appkit import (
    DEMO_CODE,
    SYSTEM,
    add_target_study,
    free_port,
    make_workspace,
    start_app,
    stop,
    viewer,
    wait_healthy,
)
from browserkit import SHOWN_SCORES_JS, open_browser, saved, settle, sign_in

from annotation_app.services import Workspace

pytestmark = pytest.mark.browser


@pytest.fixture
def app(tmp_path):
    """A running app on the demo workspace: (base URL, workspace for reading the database)."""
    url = f"sqlite:///{tmp_path / 'rate.db'}"
    make_workspace(url).close()
    port = free_port()
    proc = start_app(url, port, tmp_path / "app.log")
    try:
        wait_healthy(port, proc)
        ws = Workspace(url)
        yield f"http://127.0.0.1:{port}/", ws
        ws.close()
    finally:
        stop(proc)


@pytest.fixture
def page(tmp_path):
    yield from open_browser(tmp_path, 1280, 720)


def open_rating(page, base: str) -> None:
    sign_in(page, base)
    page.get_by_role("button", name="Continue rating").click()
    page.locator('.st-key-rating-pane [data-testid="stRadio"]').nth(8).wait_for()
    settle(page)


def shown_vs_saved(page, ws: Workspace) -> tuple[list, list]:
    """(scores the page shows as chosen, scores in the database) of the transcript on screen."""
    v = viewer(ws, "demo", DEMO_CODE)
    pos = int(re.search(r"Transcript (\d+) of", page.inner_text("body")).group(1))
    aid = ws.queue(v, 1)[pos - 1].assignment_id
    saved = ws.item(v, aid).values
    shown = page.evaluate(SHOWN_SCORES_JS)
    db = [None if sub.id not in saved else ("N/A" if saved[sub.id] == 0 else str(saved[sub.id]))
          for sub in ws.subaxes()]
    return shown, db


def test_rapid_clicks_are_all_saved(app, page):
    base, ws = app
    open_rating(page, base)
    rng = random.Random(12)
    mismatches = []
    for n in range(20):
        if n and n % 4 == 0:  # also on fresh transcripts (their first save creates the rating)
            page.get_by_role("button", name="Next ▶").click()
            settle(page)
        groups = page.locator('[data-testid="stRadio"]')
        groups.nth(8).wait_for()
        assert groups.count() == 9
        for i in range(9):
            groups.nth(i).locator("label").filter(has_text=re.compile(rf"^{rng.randint(1, 6)}$")).click()
            page.wait_for_timeout(rng.randint(60, 100))
        saved(page)
        shown, db = shown_vs_saved(page, ws)
        if shown != db:
            mismatches.append((n, shown, db))
    assert mismatches == [], f"{len(mismatches)} of 20 passes lost a click: {mismatches}"


def test_keyboard_rating_lands_in_the_database(app, page):
    base, ws = app
    open_rating(page, base)
    keys = []
    for n, sub in enumerate(ws.subaxes()):
        keys.append("n" if sub.allow_na and n % 2 else str(1 + n % 6))
    for k in keys:
        page.keyboard.press(k)
        page.wait_for_timeout(40)
    saved(page)
    shown, db = shown_vs_saved(page, ws)
    want = ["N/A" if k == "n" else k for k in keys]
    assert shown == db == want
    assert page.evaluate("() => document.activeElement.getAttribute('aria-label')") == "Justification"
    page.keyboard.type("Kind, a little rushed.")  # no click: the last score moved on to the text box
    page.keyboard.press("Control+Enter")
    page.get_by_text("Rating submitted").wait_for()
    v = viewer(ws, "demo", DEMO_CODE)
    first = ws.queue(v, 1)[0].assignment_id
    item = ws.item(v, first)
    assert item.state == "submitted" and item.justification == "Kind, a little rushed."
    assert [item.values[s.id] for s in ws.subaxes()] == [0 if k == "n" else int(k) for k in keys]


def test_three_subaxes_fit_at_1280x720_and_turns_can_be_found(app, page):
    base, ws = app
    open_rating(page, base)
    visible = page.evaluate("""() => {
      const pane = document.querySelector('.st-key-rating-pane').getBoundingClientRect();
      return [...document.querySelectorAll('.st-key-rating-pane [data-testid="stRadio"]')]
        .map(g => g.getBoundingClientRect())
        .filter(r => r.top >= Math.max(0, pane.top) && r.bottom <= Math.min(window.innerHeight, pane.bottom)).length;
    }""")
    Path("test-artifacts").mkdir(exist_ok=True)
    page.screenshot(path="test-artifacts/rate-1280x720.png")
    assert visible >= 3, f"only {visible} sub-axes visible without scrolling"

    n_turns = page.locator('[class*="st-key-turn-"]').count()
    page.get_by_placeholder(re.compile("Jump to turn")).click()
    page.get_by_role("option", name=str(n_turns), exact=True).click()
    settle(page)
    page.wait_for_timeout(600)
    in_view = page.evaluate(f"""() => {{
      const pane = document.querySelector('.st-key-transcript-pane').getBoundingClientRect();
      const r = document.querySelector('.st-key-turn-{n_turns}').getBoundingClientRect();
      return r.top >= pane.top - 1 && r.top < pane.bottom; }}""")
    assert in_view, "the chosen turn was not scrolled into view"

    page.get_by_placeholder("Search the transcript").fill("zzz-not-there")
    page.keyboard.press("Enter")
    page.get_by_text(re.compile(r"0 of \d+ turns contain")).wait_for()
    assert page.locator('[class*="st-key-turn-"]').count() == 0


@pytest.fixture
def target_app(tmp_path):
    """A running app whose only study rates on a categorical target's form (``demo`` rates it)."""
    url = f"sqlite:///{tmp_path / 'target.db'}"
    ws = Workspace(url)
    ws.add_annotator(SYSTEM, "demo", code=DEMO_CODE)
    add_target_study(ws)
    port = free_port()
    proc = start_app(url, port, tmp_path / "app.log")
    try:
        wait_healthy(port, proc)
        yield f"http://127.0.0.1:{port}/", ws
    finally:
        stop(proc)
        ws.close()


def test_a_categorical_form_is_rated_with_the_keyboard(target_app, page):
    base, ws = target_app
    study = ws.studies(SYSTEM)[0]
    g = ws.guidelines(study.id)
    subs = g.human_subaxes
    sign_in(page, base)
    page.get_by_role("button", name="Continue rating").click()
    page.locator('.st-key-rating-pane [data-testid="stRadio"]').nth(len(subs) - 1).wait_for()
    settle(page)
    body = page.inner_text("body")
    assert all(lv.label in body for lv in g.levels)
    assert "1 = Best practice · 2 = Suboptimal · 3 = Potential for harm" in body
    # key n picks the n-th level; N marks N/A where the form offers it, and is ignored elsewhere
    keys = ["3" if n % 2 == 0 else ("n" if s.allow_na else "2") for n, s in enumerate(subs)]
    assert "n" in keys and "3" in keys
    page.keyboard.press("n")  # the first sub-axis takes no N/A: nothing happens, focus stays
    for k in keys:
        page.keyboard.press(k)
        page.wait_for_timeout(40)
    saved(page)
    v = viewer(ws, "demo", DEMO_CODE)
    aid = ws.queue(v, study.id)[0].assignment_id
    item = ws.item(v, aid)
    na = item.scale.na_value
    want = [na if k == "n" else g.levels[int(k) - 1].value for k in keys]
    assert [item.values.get(s.id) for s in subs] == want
    assert page.evaluate(SHOWN_SCORES_JS) == ["N/A" if k == "n" else g.levels[int(k) - 1].label for k in keys]
    assert page.evaluate("() => document.activeElement.getAttribute('aria-label')") == "Justification"
    page.keyboard.type("Missed the goodbye in turn 3.")
    page.keyboard.press("Control+Enter")
    page.get_by_text("Rating submitted").wait_for()
    item = ws.item(v, aid)
    assert item.state == "submitted" and [item.values[s.id] for s in subs] == want
    assert 0 in want and g.is_harm(0)  # the harm level was rated by key, stored as its value 0
