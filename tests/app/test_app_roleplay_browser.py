"""Role-play in a real browser (clock) and with the real embedded clinician (slow)."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from appkit import DEMO_CODE, free_port, make_workspace, start_app, stop, viewer, wait_healthy
from browserkit import open_browser, settle, sign_in
from sqlalchemy import update

from mindeval.store.annotations import RoleplaySessionRow, utcnow


@pytest.fixture
def page(tmp_path):
    yield from open_browser(tmp_path)


@pytest.mark.browser
def test_the_clock_shows_minutes_and_seconds_and_disables_the_box_at_zero(page, tmp_path):
    url = f"sqlite:///{tmp_path / 'clock.db'}"
    ws = make_workspace(url)
    v = viewer(ws, "demo", DEMO_CODE)
    sid = ws.sessions(v, 2)[0].session_id
    ws.start_session(v, sid)
    port = free_port()
    proc = start_app(url, port, tmp_path / "app.log")
    try:
        wait_healthy(port, proc)
        sign_in(page, f"http://127.0.0.1:{port}/")
        with ws.db.write() as s:
            s.execute(update(RoleplaySessionRow).where(RoleplaySessionRow.id == sid)
                      .values(deadline_at=utcnow() + timedelta(seconds=12)))
        page.get_by_role("link", name="Role-play").click()
        box = page.get_by_placeholder(re.compile("Write as"))
        box.wait_for()
        settle(page)
        clock = page.locator("[data-mindeval-left]")
        assert re.fullmatch(r"⏱ 0:(0\d|1[0-2]) left", clock.inner_text()), clock.inner_text()
        box.fill("A thought I had not sent yet")
        page.wait_for_function("() => document.querySelector('[data-mindeval-left]').textContent.includes('0:00')",
                               timeout=20_000)
        page.wait_for_timeout(300)  # "at once": within one tick of the clock
        assert page.locator('[data-testid="stChatInput"] textarea').is_disabled()
        assert page.get_by_text("A thought I had not sent yet").count() >= 1
        assert "kept here" in page.inner_text("body")
        assert ws.roleplay(v, sid).messages == []
    finally:
        stop(proc)
        ws.close()


PLACEHOLDER = re.compile(r"\[insert|<\|im_|\[your|^\s*(A|Q|User|Assistant|Clinician|Patient)\s*:", re.I | re.M)


@pytest.mark.slow
def test_three_turns_with_the_embedded_clinician_read_like_a_conversation(tmp_path):
    ws = make_workspace(f"sqlite:///{tmp_path / 'embedded.db'}", clinician="local/smollm2")
    v = viewer(ws, "demo", DEMO_CODE)
    sid = ws.sessions(v, 2)[0].session_id
    ws.start_session(v, sid)
    streamed: list[str] = []
    for text in ("Hi. I have not been sleeping well and work is a lot.",
                 "Mostly at night. I keep thinking about deadlines.",
                 "I tried tea and reading, but it does not help."):
        pieces: list[str] = []
        ws.send_message(v, sid, text, pieces.append)
        streamed.append("".join(pieces))
    replies = [m.content for m in ws.roleplay(v, sid).messages if m.role == "clinician"]
    ws.close()
    assert len(replies) == 3 and all(r.strip() for r in replies)
    lines = [ln.strip().lower() for r in replies for ln in r.splitlines() if ln.strip()]
    assert len(lines) == len(set(lines)), f"a line is repeated: {replies}"
    assert not any(PLACEHOLDER.search(r) for r in replies), replies
    assert all(r.startswith(s.strip()[:20]) for r, s in zip(replies, streamed)), (replies, streamed)
    assert any(streamed), "nothing was streamed while the replies were written"
