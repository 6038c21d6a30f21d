"""Role-play in a real browser (clock) and with the real embedded clinician (slow)."""

from __future__ import annotations

import json
import re
import threading
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

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
from browserkit import open_browser, settle, sign_in
from sqlalchemy import update

from annotation_app.store import RoleplaySessionRow, utcnow
from annotation_app.store.tables import StudyRow


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
        clock = page.locator(".mindeval-clock .clock-time")
        assert re.fullmatch(r"⏱ 0:(0\d|1[0-2]) left", clock.inner_text()), clock.inner_text()
        box.fill("A thought I had not sent yet")
        # at zero the clock reruns the page, which shows the box disabled, the draft still in it
        page.wait_for_function("""() => document.querySelector('.mindeval-clock')?.textContent.includes('0:00')
            && document.querySelector('.mindeval-clock').dataset.up === '1'""", timeout=60_000)
        box.wait_for()
        page.wait_for_function("(b) => b.disabled", arg=box.element_handle(), timeout=60_000)
        assert box.input_value() == "A thought I had not sent yet"
        assert page.get_by_text("Time is up. Please finish the session below.").is_visible()
        assert ws.roleplay(v, sid).messages == []
        # a later page run rendering more seconds left never winds the clock back
        with ws.db.write() as s:
            s.execute(update(RoleplaySessionRow).where(RoleplaySessionRow.id == sid)
                      .values(deadline_at=utcnow() + timedelta(seconds=30)))
        render = page.locator(".mindeval-clock").get_attribute("data-render")
        page.get_by_role("heading", name="Role-play").click()
        page.keyboard.press("r")  # Streamlit's rerun key: the run renders 30 s left
        page.wait_for_function("(r) => document.querySelector('.mindeval-clock').dataset.render !== r", arg=render,
                               timeout=60_000)
        assert "0:00" in clock.inner_text(), clock.inner_text()
    finally:
        stop(proc)
        ws.close()


class GatedClinician:
    """An HTTP clinician on 127.0.0.1 that holds every reply until :meth:`release` (then answers
    ``Reply N`` at once), so a test can act while a reply is being written."""

    def __init__(self) -> None:
        self.arrived = threading.Event()
        self.gate = threading.Event()
        self.requests: list[list[dict]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                outer.requests.append(body["messages"])
                n = len(outer.requests)
                outer.arrived.set()
                outer.gate.wait(120)
                data = json.dumps({"content": f"Reply {n}."}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/reply"

    def release(self) -> None:
        self.gate.set()

    def close(self) -> None:
        self.gate.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.mark.browser
def test_a_message_sent_while_the_reply_is_written_is_stored_and_answered_in_order(page, tmp_path):
    clinician = GatedClinician()
    url = f"sqlite:///{tmp_path / 'queue.db'}"
    ws = make_workspace(url, clinician=clinician.url)
    v = viewer(ws, "demo", DEMO_CODE)
    sid = ws.sessions(v, 2)[0].session_id
    ws.start_session(v, sid)
    port = free_port()
    proc = start_app(url, port, tmp_path / "app.log")
    try:
        wait_healthy(port, proc)
        sign_in(page, f"http://127.0.0.1:{port}/")
        page.get_by_role("link", name="Role-play").click()
        box = page.get_by_placeholder(re.compile("Write as"))
        box.wait_for()
        settle(page)
        box.fill("I have not slept for days.")
        box.press("Enter")
        assert clinician.arrived.wait(90), "the clinician was never asked"
        # the reply is being written: the patient goes on writing, as fast as a person would
        box = page.get_by_placeholder(re.compile("Write as"))
        box.fill("And I keep waking at four.")
        box.press("Enter")
        wait_for(lambda: ws.roleplay(v, sid).queued == ["And I keep waking at four."])  # stored at once
        page.get_by_text("waiting for the clinician's reply").wait_for()
        assert [m.content for m in ws.roleplay(v, sid).messages] == ["I have not slept for days."]

        clinician.release()
        # both replies reach the page by themselves: nobody presses "Get the clinician's reply"
        page.get_by_text("Reply 2.").wait_for(timeout=90_000)
        settle(page)
        assert page.get_by_role("button", name="Get the clinician's reply").count() == 0
        assert "has not arrived yet" not in page.inner_text("body")
        rp = ws.roleplay(v, sid)
        assert [(m.role, m.content) for m in rp.messages] == [
            ("patient", "I have not slept for days."), ("clinician", "Reply 1."),
            ("patient", "And I keep waking at four."), ("clinician", "Reply 2.")]
        assert rp.queued == [] and not rp.awaiting_reply
        assert clinician.requests[1][-1] == {"role": "user", "content": "And I keep waking at four."}
    finally:
        stop(proc)
        clinician.close()
        ws.close()


PLACEHOLDER = re.compile(r"\[insert|<\|im_|\[your|^\s*(A|Q|User|Assistant|Clinician|Patient)\s*:", re.I | re.M)


@pytest.mark.slow
def test_three_turns_with_the_embedded_clinician_read_like_a_conversation(tmp_path):
    ws = make_workspace(f"sqlite:///{tmp_path / 'embedded.db'}", clinician="local/smollm2")
    # Replies of at most 64 tokens (the role default is 128): the same real model, prompt and
    # clean-up end to end, half the decoding on a loaded machine.
    with ws.db.write() as s:
        s.execute(update(StudyRow).where(StudyRow.kind == "roleplay").values(clinician_max_tokens=64))
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
