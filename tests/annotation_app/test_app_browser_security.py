"""A real browser against the running app: the session lives in an HttpOnly cookie, not the URL;
copied links sign nobody in; sign-out revokes; no framing; links and bidi tricks in transcripts are inert.
"""

from __future__ import annotations

import json
import time
import urllib.request

import pytest
from appkit import ADMIN_CODE, free_port, start_app, stop, wait_healthy
from browserkit import CHROMIUM, FLAGS, playwright_api, settle, sign_in

from annotation_app.handoff import COOKIE, SESSION_ROUTE
from annotation_app.services import SYSTEM, Workspace

pytestmark = pytest.mark.browser
ALICE = "ALICE-CODE-1111"
TRICKY = ("See https://evil.example/login or www.evil.example, or write to help@evil.example. "
          "My file is called abc\u202etxt.exe and that is all.")


def _workspace(url: str, tmp_path) -> None:
    ws = Workspace(url)
    ws.add_annotator(SYSTEM, "admin", admin=True, code=ADMIN_CODE)
    ws.add_annotator(SYSTEM, "alice", code=ALICE)
    ws.create_study(SYSTEM, "S", "rating", k=1)
    row = {"id": "i0", "run_id": "r1", "profile_id": "robin", "model": "vendor/clinician",
           "member_attributes": {"name": "Robin", "age": 40}, "status": "complete",
           "messages": [{"role": "user", "content": TRICKY}, {"role": "assistant", "content": "I see."}]}
    path = tmp_path / "items.jsonl"
    path.write_text(json.dumps(row) + "\n")
    ws.import_path(SYSTEM, "S", path)
    ws.assign(SYSTEM, "S")
    ws.close()


@pytest.fixture
def chromium():
    with playwright_api().sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        yield browser
        browser.close()


def _headers(url: str) -> dict[str, str]:
    with urllib.request.urlopen(url, timeout=10) as r:
        return {k.lower(): v for k, v in r.headers.items()}


def _signed_out(page) -> bool:
    page.get_by_label("Your name").wait_for()
    return page.get_by_text("Hello, alice").count() == 0


def test_session_cookie_copied_links_sign_out_headers_and_inert_links(chromium, tmp_path):
    url = f"sqlite:///{tmp_path / 'sec.db'}"
    _workspace(url, tmp_path)
    port = free_port()
    base = f"http://127.0.0.1:{port}/"
    started = time.perf_counter()
    proc = start_app(url, port, tmp_path / "app.log")
    try:
        healthy = wait_healthy(port, proc)
        a_ctx = chromium.new_context(viewport={"width": 1400, "height": 1000})
        a = a_ctx.new_page()
        a.set_default_timeout(90_000)
        a.goto(base)
        a.get_by_label("Your name").wait_for()
        usable = time.perf_counter() - started

        # Framing is refused on every response, pages and API alike.
        for path in ("", "_stcore/health", "rate"):
            h = _headers(base + path)
            assert h.get("x-frame-options") == "DENY", path
            assert "frame-ancestors 'none'" in h.get("content-security-policy", ""), path

        visited: list[str] = []
        a.on("request", lambda req: visited.append(req.url))
        sign_in(a, base, "alice", ALICE)
        cookies = {c["name"]: c for c in a_ctx.cookies()}
        session = cookies[COOKIE]
        assert session["httpOnly"] and session["sameSite"] == "Strict"
        assert session["value"] not in a.url and "s=" not in a.url
        assert COOKIE not in a.evaluate("() => document.cookie")  # scripts cannot read it
        assert not any(session["value"] in u for u in visited)  # never in any URL
        a.reload()
        a.get_by_text("Hello, alice").wait_for()  # a refresh keeps the sign-in

        # Everything the first browser visited, opened in a second browser, signs nobody in.
        b_ctx = chromium.new_context()
        b = b_ctx.new_page()
        b.set_default_timeout(90_000)
        pages = {u for u in visited if u.startswith(base) and "/_stcore/" not in u and "/static/" not in u
                 and "." not in u.split("/")[-1].split("?")[0]}
        assert any(SESSION_ROUTE in u for u in pages)  # the one-time ticket link is among them
        for link in pages:
            b.goto(link)
            settle(b)
            assert _signed_out(b), link

        # Transcript text: bare URLs, www names and e-mail addresses are not links; bidi controls are shown.
        a.get_by_role("button", name="Continue rating").click()
        a.locator("div.mindeval-rate .rate-axis").first.wait_for()  # the rating form is on screen
        settle(a)
        assert a.locator("a[href*='evil']").count() == 0
        assert a.get_by_text("[U+202E]", exact=False).count() >= 1
        assert a.get_by_text("evil.example/login", exact=False).count() >= 1

        # Sign-out revokes the token: the old cookie, replayed in a third browser, is worthless.
        a.get_by_role("button", name="Sign out").click()
        a.get_by_label("Your name").wait_for()
        a.wait_for_load_state()
        assert COOKIE not in {c["name"] for c in a_ctx.cookies()}
        c_ctx = chromium.new_context()
        c_ctx.add_cookies([{"name": COOKIE, "value": session["value"], "url": base}])
        c = c_ctx.new_page()
        c.goto(base)
        settle(c)
        assert _signed_out(c)
    finally:
        stop(proc)
    print(f"server healthy {healthy:.2f}s, usable sign-in page in Chromium {usable:.2f}s after start")
