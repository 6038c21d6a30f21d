"""A real browser: start the app, sign in, rate one item, role-play one message, restart, screenshot.

Needs Debian's Chromium (installed by scripts/services.sh) driven by Python playwright.
"""

from __future__ import annotations

import json
import re
import time

import pytest
from appkit import ROOT, free_port, make_workspace, start_app, stop, wait_healthy
from browserkit import (
    RATE_FORM,
    rate_form_on,
    rate_form_saved,
    rate_form_stored,
    rate_pick,
    settle,
    sign_in,
)
from sqlalchemy import select, update

from annotation_app.store import RatingRow
from annotation_app.store.tables import StudyRow
from mindeval.store.tables import TurnRow

pytestmark = pytest.mark.browser
SCREENSHOT = ROOT / "test-artifacts" / "app.png"
# markup a sanitiser would cut (an attribute holding "</title" once never showed as saved)
JUSTIFICATION = 'Clear and kind, but rushed </script> </title> <!-- "q" & 🙂 ]]> towards advice.'
HOSTILE = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2"> I feel **on edge**.'


def rate_one(page) -> None:
    """Score all nine sub-axes 4 with the mouse, write a justification, submit; every step waits
    on what the form says is stored (rate.js's dataset), then on the page moving on."""
    page.get_by_role("button", name="Continue rating").click()
    aid = rate_form_on(page)
    fields = json.loads(page.get_attribute(RATE_FORM, "data-fields"))
    assert len(fields) == 9
    for field in fields:
        rate_pick(page, field, "4")
    rate_form_stored(page, ["4"] * 9)
    page.get_by_label("Justification").fill(JUSTIFICATION)
    page.get_by_text("Keys:").click()  # leaving the box sends it
    rate_form_saved(page)
    assert json.loads(page.get_attribute(RATE_FORM, "data-texts"))["justification"] == JUSTIFICATION  # byte for byte
    page.locator(f"{RATE_FORM} button.rate-submit").click()
    # what the page keeps showing once the submission is stored (the "Rating submitted" notice is
    # shown by one run only): the form on the next transcript and the header's count
    page.wait_for_function("(a) => (document.querySelector('div.mindeval-rate')?.dataset.item ?? String(a))"
                           " !== String(a)", arg=aid)
    page.get_by_text(re.compile(r"^1 of \d+ transcripts submitted")).wait_for()


def roleplay_one(page, reply_pattern: str, timeout_ms: int) -> None:
    page.get_by_role("link", name="Role-play").click()
    page.get_by_role("button", name="Start session").click()
    settle(page)
    chat = page.get_by_placeholder(re.compile("Write as"))
    chat.fill(HOSTILE)
    chat.press("Enter")
    page.get_by_text(re.compile(reply_pattern)).first.wait_for(timeout=timeout_ms)
    settle(page)


def test_sign_in_rate_roleplay_restart_and_screenshot(browser_page, tmp_path):
    url = f"sqlite:///{tmp_path / 'browser.db'}"
    make_workspace(url, clinician="fake/echo").close()
    port = free_port()
    proc = start_app(url, port, tmp_path / "app.log")
    try:
        cold = wait_healthy(port, proc)
        base = f"http://127.0.0.1:{port}/"
        page = browser_page
        sign_in(page, base)
        rate_one(page)
        roleplay_one(page, r"Reply 1", 60_000)
        assert page.evaluate("() => window.__pwned") is None  # the script never ran
        assert page.get_by_text("<script>", exact=False).count() >= 1  # shown as text
        SCREENSHOT.parent.mkdir(exist_ok=True)
        page.screenshot(path=str(SCREENSHOT), full_page=True)
    finally:
        stop(proc)
    print(f"cold start {cold:.2f}s")

    from annotation_app.services import Workspace

    ws = Workspace(url)
    with ws.db.read() as s:
        assert [(r.state, r.justification) for r in s.scalars(select(RatingRow))] == [("submitted", JUSTIFICATION)]
        assert [t.author for t in s.scalars(select(TurnRow).order_by(TurnRow.idx))] == ["human", "model"]
    ws.close()

    port2 = free_port()  # a server restart: the conversation is still there
    proc = start_app(url, port2, tmp_path / "app2.log")
    try:
        wait_healthy(port2, proc)
        page.goto(f"http://127.0.0.1:{port2}/roleplay")  # the session cookie still signs in
        page.get_by_text(re.compile("Reply 1")).first.wait_for()
        assert page.get_by_text("on edge", exact=False).count() >= 1
    finally:
        stop(proc)


@pytest.mark.slow
def test_roleplay_with_the_embedded_model(browser_page, tmp_path):
    url = f"sqlite:///{tmp_path / 'slow.db'}"
    ws = make_workspace(url, clinician="local/smollm2")
    with ws.db.write() as s:  # replies of at most 64 tokens (role default 128): the same model end to end
        s.execute(update(StudyRow).where(StudyRow.kind == "roleplay").values(clinician_max_tokens=64))
    ws.close()
    port = free_port()
    proc = start_app(url, port, tmp_path / "app.log")
    try:
        wait_healthy(port, proc)
        page = browser_page
        sign_in(page, f"http://127.0.0.1:{port}/")
        started = time.perf_counter()
        roleplay_one(page, r"^Clinician", 240_000)
        page.wait_for_function("() => document.querySelectorAll('[data-testid=\"stChatMessage\"]').length >= 2",
                               timeout=240_000)
        print(f"embedded reply in {time.perf_counter() - started:.1f}s")
    finally:
        stop(proc)
