"""Helpers of the real-browser tests: headless Chromium through playwright, Streamlit settling."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from appkit import DEMO_CODE, free_port, make_workspace, start_app, stop, wait_healthy
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from annotation_app.handoff import SESSION_ROUTE

CHROMIUM = os.environ.get("MINDEVAL_CHROMIUM", "/usr/bin/chromium")
# The longest one observable change may take (a rerun, a save, a reload) with two CPU hogs and other
# workers' browsers, servers and the embedded model beside it; a passing wait returns at once.
WAIT_MS = int(os.environ.get("MINDEVAL_BROWSER_WAIT_MS", "180000"))
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]


def chromium_context(p, profile_dir: str, width: int = 1400, height: int = 1000):
    """A persistent headless Chromium context (Debian's chromium, no downloads)."""
    return p.chromium.launch_persistent_context(profile_dir, executable_path=CHROMIUM, args=FLAGS, headless=True,
                                                viewport={"width": width, "height": height})


def playwright_api():
    """playwright's sync API, or skip (fail in CI) when Chromium is missing."""
    if not Path(CHROMIUM).is_file() and not shutil.which("chromium"):
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("chromium is missing in CI: scripts/services.sh should have installed it")
        pytest.skip("no chromium (scripts/services.sh installs it)")
    return pytest.importorskip("playwright.sync_api")


def open_browser(tmp_path: Path, width: int = 1400, height: int = 1000):
    """Generator of one page (skips when chromium or playwright is missing; fails in CI)."""
    with playwright_api().sync_playwright() as p:
        ctx = chromium_context(p, tempfile.mkdtemp(dir=tmp_path), width, height)
        page = ctx.new_page()
        page.set_default_timeout(WAIT_MS)
        yield page
        ctx.close()


@contextmanager
def open_pages(tmp_path: Path, n: int, width: int = 1400, height: int = 1000):
    """``n`` pages, each in a browser profile of its own (its own cookies: one person each)."""
    with playwright_api().sync_playwright() as p:
        ctxs = [chromium_context(p, tempfile.mkdtemp(dir=tmp_path), width, height) for _ in range(n)]
        try:
            pages = [ctx.new_page() for ctx in ctxs]
            for page in pages:
                page.set_default_timeout(WAIT_MS)
            yield pages
        finally:
            for ctx in ctxs:
                ctx.close()


IDLE_JS = ("() => !document.querySelector('[data-testid=\"stStatusWidget\"] button')"
           " && !document.querySelector('[data-testid=\"stSpinner\"]')"
           " && !document.querySelector('[data-testid=\"stSkeleton\"]')")  # widget code still loading


def settle(page, quiet_ms: int = 400) -> None:
    """Wait until Streamlit has finished re-running the script and stays idle for ``quiet_ms``."""
    page.wait_for_timeout(250)
    while True:
        page.wait_for_function(IDLE_JS, timeout=WAIT_MS)
        page.wait_for_timeout(quiet_ms)
        if page.evaluate(IDLE_JS):
            return


def choose(page, box, option, search: str = "") -> None:
    """Open the select box ``box`` (a locator), type ``search`` (a long list shows only its first
    options) and click its option ``option`` (a name or a pattern; the first match), then settle.
    A rerun that re-renders the box closes its list, so the box is clicked again until the option
    is on screen (within WAIT_MS)."""
    wanted = page.get_by_role("option", name=option).first
    deadline = time.monotonic() + WAIT_MS / 1000
    while True:
        settle(page)
        box.click()
        if search:
            page.keyboard.type(search)
        try:
            wanted.wait_for(state="visible", timeout=10_000)
            break
        except PlaywrightTimeout:
            if time.monotonic() > deadline:
                raise AssertionError(f"the option {option!r} never appeared in its list") from None
            page.keyboard.press("Escape")  # a list that did open without it: close before trying again
    wanted.click()
    settle(page)


def sign_in(page, base: str, name: str = "demo", code: str = DEMO_CODE) -> None:
    """Sign in through the form and wait until the browser holds the session cookie
    (the page reloads once through the one-time cookie route)."""
    page.goto(base)
    page.get_by_label("Your name").fill(name)
    page.get_by_label("Access code").fill(code)
    with page.expect_response(lambda r: SESSION_ROUTE in r.url):
        page.get_by_role("button", name="Sign in").click()
    page.wait_for_load_state()
    page.get_by_text(f"Hello, {name}").wait_for()
    settle(page)


# The rating form (annotation_app/assets/forms/rate.js): one component, its state on its root's dataset.
FORM = ".mindeval-rate"

# The label each radio field of the rating form shows as chosen, in form order (None = none).
SHOWN_SCORES_JS = """() => [...document.querySelectorAll('.mindeval-rate fieldset.rate-axis[data-radio]')].map(g => {
  const i = g.querySelector('input:checked'); return i ? i.value : null; })"""


def form_attr(page, name: str):
    """The rating form's ``data-<name>`` (JSON-decoded where it is JSON; ``item``/``version``/``refused`` as int)."""
    raw = page.get_attribute(FORM, f"data-{name}")
    if name in ("item", "version", "refused"):
        return int(raw)
    return json.loads(raw) if name in ("fields", "stored", "shown", "texts") else raw


def saved(page) -> None:
    """Wait until the rating form confirms everything it shows is stored (and Streamlit is idle)."""
    settle(page)
    page.wait_for_function("() => document.querySelector('.mindeval-rate')?.dataset.state === 'saved'",
                           timeout=WAIT_MS)
    settle(page)


def stored(page, expected: list, timeout: int = WAIT_MS) -> None:
    """Wait until the rating form shows ``expected`` as chosen (labels in form order, None = unset),
    says the same is stored, and has nothing left to save. A timeout says what the page showed,
    what it said was stored and what it still kept to send."""
    want = ["" if x is None else x for x in expected]
    try:
        page.wait_for_function(
            """(want) => {
              const r = document.querySelector('.mindeval-rate');
              if (!r || r.dataset.state !== 'saved' || !r.dataset.stored) return false;
              const shown = [...r.querySelectorAll('fieldset.rate-axis[data-radio]')].map(g => {
                const i = g.querySelector('input:checked'); return i ? i.value : ''; });
              const w = JSON.stringify(want);
              return r.dataset.stored === w && r.dataset.shown === w && JSON.stringify(shown) === w;
            }""", arg=want, timeout=timeout)
    except PlaywrightTimeout:
        raise AssertionError(f"after {timeout // 1000} s the page had not stored {want}: {page_state(page)}") from None


# What the rating page shows and keeps, for a failure message: the form's dataset, changes kept
# to send, whether Streamlit is running, its alerts.
PAGE_STATE_JS = """() => ({
  forms: [...document.querySelectorAll('.mindeval-rate')].map(r => ({...r.dataset})),
  kept: Object.fromEntries(Object.keys(localStorage).filter(k => k.startsWith('mindeval-form:'))
    .map(k => [k, localStorage.getItem(k)])),
  running: !!document.querySelector('[data-testid="stStatusWidget"] button'),
  alerts: [...document.querySelectorAll('[data-testid="stAlert"]')].map(a => a.innerText.slice(0, 300)),
})"""


def page_state(page) -> dict:
    """The rating page's state as PAGE_STATE_JS reads it (or why it could not be read)."""
    try:
        return page.evaluate(PAGE_STATE_JS)
    except Exception as exc:  # noqa: BLE001 - a failure message must not hide the failure
        return {"unreadable": str(exc)}


def pane_ready(page, n: int) -> None:
    """Wait until the rating form is on screen with exactly ``n`` radio fields and its state."""
    page.wait_for_function(
        """(n) => { const r = document.querySelector('.mindeval-rate');
          return !!r && !!r.dataset.state && r.querySelectorAll('fieldset.rate-axis[data-radio]').length === n
            && JSON.parse(r.dataset.fields || '[]').length === n; }""", arg=n, timeout=WAIT_MS)


def pick(page, field: str, label: str) -> None:
    """Click the label ``label`` of the form's field ``field`` (the mouse, as a person does)."""
    page.locator(f'{FORM} fieldset[data-sub="{field}"] label').filter(
        has=page.locator(f'input[value="{label}"]')).click()


def whole_rating(ws, viewer, aid: int, values: dict, justification: str = "", safety_note: str = "") -> None:
    """Assert the WHOLE stored rating of ``aid``: exactly ``values`` (sub-axis id → stored value;
    every other sub-axis unset) and exactly these texts. A score on a field nobody acted on fails."""
    item = ws.item(viewer, aid)
    got = {"values": dict(item.values), "justification": item.justification or "",
           "safety_note": item.safety_note or ""}
    want = {"values": dict(values), "justification": justification, "safety_note": safety_note}
    assert got == want, f"stored rating of assignment {aid}: {got}, expected exactly {want}"


# Nothing the rating form keeps in the browser to send (assets/forms/rate.js), everything shown stored.
NOTHING_WAITING_JS = """() => document.querySelector('.mindeval-rate')?.dataset.state === 'saved'
  && Object.keys(localStorage).filter(k => k.startsWith('mindeval-form:')).length === 0"""


def block_sends(page, only: bytes | None = None) -> dict:
    """Route the page's Streamlit websocket through playwright; while ``flag["on"]`` what the page
    sends (only the messages holding ``only`` when given, e.g. ``b"rate_form"``: the rating form's
    state) never reaches the server (a connection that drops messages, the page still thinks it
    is online); while ``flag["answers"]`` what the server sends holding ``only`` (everything when
    not given) never reaches the page (what was sent is applied, its answer lost). Set before the
    page connects."""
    flag = {"on": False, "answers": False}

    def held(m, way: str) -> bool:
        if not flag[way]:
            return False
        return only is None or only in (m if isinstance(m, bytes) else m.encode())

    def handler(ws):
        server = ws.connect_to_server()
        ws.on_message(lambda m: None if held(m, "on") else server.send(m))
        server.on_message(lambda m: None if held(m, "answers") else ws.send(m))

    page.route_web_socket("**/_stcore/stream", handler)
    return flag


def page_errors(page) -> list:
    """Uncaught errors of the page's scripts, collected as they happen."""
    errors: list = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    return errors


def served_workspace(tmp_path: Path, name: str = "rate", url: str | None = None, **workspace):
    """A running app on the demo workspace (``make_workspace(url, **workspace)``; SQLite in
    ``tmp_path`` unless ``url`` names a database): yields the base URL and a ``Workspace`` for
    reading its database; the app stops afterwards."""
    from annotation_app.services import Workspace

    url = url or f"sqlite:///{tmp_path / f'{name}.db'}"
    make_workspace(url, **workspace).close()
    port = free_port()
    proc = start_app(url, port, tmp_path / "app.log")
    try:
        wait_healthy(port, proc)
        ws = Workspace(url)
        yield f"http://127.0.0.1:{port}/", ws
        ws.close()
    finally:
        stop(proc)


# Streamlit's own frontend error when a fragment's output arrives for a place a newer run removed;
# the rating form reloads itself on it (assets/forms/rate.js; tested by
# test_a_page_whose_streamlit_tree_broke_reloads_itself_and_sends_what_it_kept). The test still
# asserts everything it checks after the reload; the error is reported as a warning.
RECOVERED_ERRORS = ("Cannot set a node at a delta path",)


def checked_page(tmp_path: Path, width: int = 1280, height: int = 720):
    """A page whose scripts raise no uncaught error during the test (checked when it ends),
    except Streamlit's broken-tree error, which the rating form recovers from by reloading."""
    for pg in open_browser(tmp_path, width, height):
        errors = page_errors(pg)
        yield pg
        recovered = [e for e in errors if any(r in e for r in RECOVERED_ERRORS)]
        if recovered and "mindeval-form-reloaded" in (pg.evaluate("() => Object.keys(sessionStorage)") or []):
            import warnings

            warnings.warn(f"the page reloaded itself after Streamlit's frontend error: {recovered}", stacklevel=1)
            errors = [e for e in errors if e not in recovered]
        assert errors == [], f"uncaught errors in the page: {errors}"


# --- The rating form component (annotation_app/assets/forms/rate.js): its root's dataset says
# what it shows (data-fields, data-shown), what Python last sent as stored (data-stored) and
# whether anything is still on its way (data-state "saving" | "saved").
RATE_FORM = "div.mindeval-rate"

# What the form shows and keeps, for a failure message.
RATE_FORM_STATE_JS = """() => {
  const r = document.querySelector('div.mindeval-rate');
  return {
    form: r ? Object.fromEntries(['state', 'item', 'owner', 'version', 'refused', 'fields', 'stored', 'shown', 'texts']
      .map(a => [a, r.dataset[a] ?? null])) : null,
    status: r?.querySelector('.rate-status')?.textContent ?? null,
    kept: Object.fromEntries(Object.keys(localStorage).filter(k => k.startsWith('mindeval-form:'))
      .map(k => [k, localStorage.getItem(k)])),
    running: !!document.querySelector('[data-testid="stStatusWidget"] button'),
    alerts: [...document.querySelectorAll('[data-testid="stAlert"]')].map(a => a.innerText.slice(0, 300)),
  };
}"""


def rate_form_state(page) -> dict:
    """The rating form's state as RATE_FORM_STATE_JS reads it (or why it could not be read)."""
    try:
        return page.evaluate(RATE_FORM_STATE_JS)
    except Exception as exc:  # noqa: BLE001 - a failure message must not hide the failure
        return {"unreadable": str(exc)}


def _rate_wait(page, js: str, arg, what: str, timeout: int) -> None:
    try:
        page.wait_for_function(js, arg=arg, timeout=timeout)
    except PlaywrightTimeout:
        raise AssertionError(f"after {timeout // 1000} s {what}: {rate_form_state(page)}") from None


def rate_form_on(page, fields: list[str] | None = None, item: int | None = None, timeout: int = WAIT_MS) -> int:
    """Wait until the rating form is on screen (on ``item`` when given) showing exactly ``fields``
    (field ids in order: one radio group or check box each; any when ``None``); its item."""
    _rate_wait(page, """([want, item]) => { const r = document.querySelector('div.mindeval-rate');
      if (!r || !r.dataset.fields || (item !== null && r.dataset.item !== String(item))) return false;
      if (want === null) return true;
      const boxes = [...r.querySelectorAll('.rate-axis[data-sub]')].map(g => g.dataset.sub);
      return r.dataset.fields === JSON.stringify(want) && JSON.stringify(boxes) === JSON.stringify(want); }""",
               [fields, item], f"the form did not show item {item} with fields {fields}", timeout)
    return int(page.get_attribute(RATE_FORM, "data-item"))


def rate_form_saved(page, timeout: int = WAIT_MS) -> None:
    """Wait until the form has nothing left to send: everything it shows is what Python says is
    stored, every send acknowledged, no change kept in the browser."""
    _rate_wait(page, """() => document.querySelector('div.mindeval-rate')?.dataset.state === 'saved'
      && !Object.keys(localStorage).some(k => k.startsWith('mindeval-form:'))""", None,
               "the form still had something to save", timeout)


def rate_form_stored(page, expected: list, timeout: int = WAIT_MS) -> None:
    """Wait until the form shows ``expected`` (labels in field order, None = unset), Python says
    the same is stored and nothing is left to send."""
    want = ["" if x is None else x for x in expected]
    _rate_wait(page, """(want) => { const r = document.querySelector('div.mindeval-rate');
      return !!r && r.dataset.state === 'saved' && r.dataset.stored === JSON.stringify(want)
        && r.dataset.shown === JSON.stringify(want)
        && !Object.keys(localStorage).some(k => k.startsWith('mindeval-form:')); }""", want,
               f"the form had not stored {want}", timeout)


def rate_pick(page, field: str, label: str) -> None:
    """Click the option ``label`` of the form's field ``field`` (a radio group) with the mouse."""
    page.locator(f'{RATE_FORM} fieldset.rate-axis[data-sub="{field}"] label').filter(
        has=page.locator(f'input[value="{label}"]')).click()


def rate_toggle(page, field: str) -> None:
    """Click the check box of the form's flag field ``field`` with the mouse."""
    page.locator(f'{RATE_FORM} .rate-check[data-sub="{field}"] label').click()


def rate_focus_on(page, field: str, timeout: int = WAIT_MS) -> None:
    """Wait until the form highlights ``field`` (where its keys act)."""
    _rate_wait(page, "(f) => document.querySelector('div.mindeval-rate .rate-focus')?.dataset.sub === f", field,
               f"the form did not highlight {field}", timeout)


def hold_server(page) -> dict:
    """Route the page's Streamlit websocket through playwright; while ``flag["on"]`` what the server
    sends is held back (the page keeps its last render, as under load) and ``release()`` delivers it
    in order. ``flag["reruns"]`` counts the page's rerun requests sent while held (e.g. a trigger
    and its resends), ``flag["finished"]`` the script runs the server finished meanwhile. Set
    before the page connects."""
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    flag: dict = {"on": False, "held": [], "reruns": 0, "finished": 0}

    def handler(ws):
        server = ws.connect_to_server()

        def up(m):
            if flag["on"] and isinstance(m, bytes) and BackMsg.FromString(m).WhichOneof("type") == "rerun_script":
                flag["reruns"] += 1
            server.send(m)

        def down(m):
            if flag["on"]:
                flag["held"].append(m)
                if isinstance(m, bytes) and ForwardMsg.FromString(m).WhichOneof("type") == "script_finished":
                    flag["finished"] += 1
            else:
                ws.send(m)

        ws.on_message(up)
        server.on_message(down)
        flag["client"] = ws

    def release():
        flag["on"] = False
        while flag["held"]:
            flag["client"].send(flag["held"].pop(0))

    page.route_web_socket("**/_stcore/stream", handler)
    flag["release"] = release
    return flag


def nothing_waiting(page, timeout: int = WAIT_MS) -> None:
    """Wait for NOTHING_WAITING_JS; a timeout says what the page showed and kept."""
    try:
        page.wait_for_function(NOTHING_WAITING_JS, timeout=timeout)
    except PlaywrightTimeout:
        raise AssertionError(f"after {timeout // 1000} s the page still kept changes: {page_state(page)}") from None
