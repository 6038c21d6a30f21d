"""Role-play in a real browser: the session on screen is the one chosen (by id, kept in the URL),
through a newly started session, a reload and a server restart; no message is ever dropped."""

from __future__ import annotations

import re

import pytest
from appkit import (
    DEMO_CODE,
    free_port,
    make_workspace,
    start_app,
    stop,
    viewer,
    wait_for,
    wait_healthy,
)
from browserkit import choose, open_browser, settle, sign_in
from playwright.sync_api import TimeoutError as PlaywrightTimeout


@pytest.fixture
def page(tmp_path):
    for p in open_browser(tmp_path):
        p.set_default_timeout(90_000)  # a rerun on a loaded machine takes seconds
        yield p


def _choose_session(page, label: str) -> None:
    choose(page, page.locator('[data-testid="stSelectbox"]').filter(has_text="Session"), label)


def rerun_until(page, condition: str, arg, tries: int = 30) -> None:
    """Press Streamlit's rerun key (R, outside any text box) until ``condition(arg)`` holds in the
    page (a page still reconnecting ignores the key)."""
    for _ in range(tries):
        page.get_by_role("heading", name="Role-play").click()
        page.keyboard.press("r")
        try:
            page.wait_for_function(condition, arg=arg, timeout=3_000)
            return
        except PlaywrightTimeout:
            continue
    pytest.fail("no page run arrived")


def _playing(page, name: str) -> None:
    """Wait until the page shows ``name``'s session with its chat box."""
    page.get_by_role("heading", name=f"You are playing {name}").wait_for()
    page.get_by_placeholder(f"Write as {name}…").wait_for()
    settle(page)


def _send(page, name: str, text: str) -> None:
    box = page.get_by_placeholder(f"Write as {name}…")
    box.fill(text)
    box.press("Enter")


@pytest.mark.browser
def test_the_first_message_of_a_newly_started_session_is_stored_in_that_session(page, tmp_path):
    url = f"sqlite:///{tmp_path / 'start.db'}"
    ws = make_workspace(url)
    v = viewer(ws, "demo", DEMO_CODE)
    first, second = ws.sessions(v, 2)[:2]
    ws.start_session(v, first.session_id)
    ws.send_message(v, first.session_id, "Session one, before.")
    port = free_port()
    proc = start_app(url, port, tmp_path / "app.log")
    try:
        wait_healthy(port, proc)
        sign_in(page, f"http://127.0.0.1:{port}/")
        page.get_by_role("link", name="Role-play").click()
        _playing(page, first.member_name)  # the session in progress opens first
        _choose_session(page, f"2. {second.member_name} — not started")
        page.get_by_role("button", name="Start session").click()
        _playing(page, second.member_name)
        _send(page, second.member_name, "Hello, this is my first message.")
        got = wait_for(lambda: ws.roleplay(v, second.session_id).messages)
        assert [(m.role, m.content) for m in got][0] == ("patient", "Hello, this is my first message.")
        settle(page)
        _playing(page, second.member_name)  # the page stays on the session played
        assert page.get_by_text("Hello, this is my first message.").count() >= 1
        assert [m.content for m in ws.roleplay(v, first.session_id).messages][0] == "Session one, before."
        assert len(ws.roleplay(v, first.session_id).messages) == 2  # nothing landed in session one
        # a second message goes to the same session too: a turn, or queued while the first reply is
        # written (the app's first reply loads the model client, slow on a loaded machine)
        _send(page, second.member_name, "And a second one.")

        def patient_texts() -> list[str]:
            rp = ws.roleplay(v, second.session_id)
            return [m.content for m in rp.messages if m.role == "patient"] + rp.queued

        wait_for(lambda: patient_texts() == ["Hello, this is my first message.", "And a second one."])
    finally:
        stop(proc)
        ws.close()


@pytest.mark.browser
def test_a_reload_and_a_server_restart_come_back_to_the_session_being_played(page, tmp_path):
    url = f"sqlite:///{tmp_path / 'reload.db'}"
    ws = make_workspace(url)
    v = viewer(ws, "demo", DEMO_CODE)
    first, second = ws.sessions(v, 2)[:2]
    for e in (first, second):
        ws.start_session(v, e.session_id)
    port = free_port()
    log = tmp_path / "app.log"
    proc = start_app(url, port, log)
    try:
        wait_healthy(port, proc)
        sign_in(page, f"http://127.0.0.1:{port}/")
        page.get_by_role("link", name="Role-play").click()
        _playing(page, first.member_name)
        _choose_session(page, f"2. {second.member_name} — in progress")
        _playing(page, second.member_name)

        page.reload()
        _playing(page, second.member_name)

        # the server restarts; the open page reconnects by itself, and its next run (here Streamlit's
        # rerun key, pressed until the run arrives) comes back to the same session
        render = page.locator(".mindeval-clock").get_attribute("data-render")  # this page run's
        stop(proc)
        proc = start_app(url, port, tmp_path / "app2.log")
        wait_healthy(port, proc)
        rerun_until(page, "(r) => document.querySelector('.mindeval-clock')?.dataset.render !== r", render)
        _playing(page, second.member_name)
        assert re.search(rf"[?&]session={second.session_id}\b", page.url), page.url  # the choice is in the URL
        _send(page, second.member_name, "Still me, after the restart.")
        wait_for(lambda: [m.content for m in ws.roleplay(v, second.session_id).messages][:1]
               == ["Still me, after the restart."])
        assert ws.roleplay(v, first.session_id).messages == []
    finally:
        stop(proc)
        ws.close()
