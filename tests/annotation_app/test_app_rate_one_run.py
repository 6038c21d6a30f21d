"""One script run of a tab writes at a time, and each form state once: the rating page never
refuses its own autosave.

CI lost clicks in test_app_rate_browser.py::test_rapid_clicks_are_all_saved: with one tab, a save
was refused as stale. Streamlit's ``runner.fastReruns`` (on by default) started the next run of the
tab in a new thread while the old run was still inside its database write; the new run wrote at
the version the page knew before that write landed, was refused as if another tab had written,
and the page dropped the annotator's changes. The app turns fast reruns off; the rating form
sends its whole state numbered by (tab, seq), applied at most once and in order. The browser test
makes the CI race deterministic (a save held on its way to the database until the next click
reaches the server).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from appkit import DEMO_CODE, form_send, rating_form, sign_in, viewer
from browserkit import (
    RATE_FORM,
    WAIT_MS,
    hold_server,
    rate_form_on,
    rate_form_stored,
    served_workspace,
    settle,
    whole_rating,
)
from browserkit import sign_in as browser_sign_in
from streamlit.web import cli

from mindeval.cli.commands.app_launch import streamlit_command


def test_the_app_starts_the_next_run_of_a_tab_only_when_the_last_one_stopped():
    cmd = streamlit_command("127.0.0.1", 8501)
    params = cli.main_run.make_context("run", cmd[cmd.index("run") + 1:]).params  # as Streamlit reads them
    assert params["runner_fastReruns"] is False


def test_a_form_state_is_applied_once_in_order_and_on_the_item_it_names(demo_ws):
    """The form's state carries (tab, seq) and its item: a state that reaches the server twice is
    applied once, an older one after a newer one changes nothing, and a state sent by the form of
    the transcript just left is stored on that transcript, not on the one the page moved to."""
    at = sign_in("demo", DEMO_CODE)
    at.button(key="open_1").click().run()
    v = viewer(demo_ws, "demo", DEMO_CODE)
    aid = at.session_state["assignment_id"]
    before = demo_ws.item(v, aid).version
    form_send(at, {"coherence_style": "3"}, seq=1)
    form_send(at, {"coherence_style": "5"}, seq=2)
    form_send(at, {"coherence_style": "3"}, seq=1)  # the first again, late: ignored
    form_send(at, {"coherence_style": "5"}, seq=2)  # the second again: applied once
    assert not at.exception, at.exception
    item = demo_ws.item(v, aid)
    assert item.values == {"coherence_style": 5} and item.version == before + 2
    assert rating_form(at)[1]["ack"] == {"apptest": 2}
    at.button(key="next").click().run()
    second = at.session_state["assignment_id"]
    form_send(at, {"coherence_style": "2"}, item=aid, seq=3)  # the previous transcript's form, late
    assert demo_ws.item(v, aid).values == {"coherence_style": 2}
    assert demo_ws.item(v, second).values == {}
    assert at.session_state["rate_refused"].get(aid, 0) == 0


# Loaded by the app's processes (first on their PYTHONPATH): holds the first score save of the
# tab on its way to the database, as a slow disk or a busy machine does, until the next click
# reaches the server. With fast reruns, a new run has started by then; the held save waits until
# that run has read the version and gone to write, then lands first, so the new run's write names
# an older version than stored (what CI hit). Without, the held save goes on (no run beside it).
GATE = """
import os, pathlib, time
_gate = pathlib.Path(os.environ["MINDEVAL_TEST_SAVE_GATE"])
try:
    from annotation_app.store import ratings
    from streamlit.runtime.scriptrunner_utils.script_requests import ScriptRequestType
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx
except ImportError:
    ratings = None

def _until(ok, seconds=20.0):
    end = time.monotonic() + seconds
    while not ok() and time.monotonic() < end:
        time.sleep(0.01)

def _save_value(*args, **kwargs):
    n = len(list(_gate.glob("save-*"))) + 1
    (_gate / f"save-{n}").touch()
    if (_gate / "hold").exists():
        if n == 1:
            requests = get_script_run_ctx().script_requests
            _until(lambda: requests._state != ScriptRequestType.CONTINUE)  # the next click arrived
            if requests._state == ScriptRequestType.STOP:  # fast reruns: the next run runs beside this one
                _until(lambda: (_gate / "save-2").exists())
        else:
            _until(lambda: (_gate / "done-1").exists())
    try:
        return _real(*args, **kwargs)
    finally:
        (_gate / f"done-{n}").touch()

if ratings is not None:
    _real = ratings.save_value
    ratings.save_value = _save_value
"""


@pytest.fixture
def gated_app(tmp_path, monkeypatch):
    site, gate = tmp_path / "site", tmp_path / "gate"
    site.mkdir()
    gate.mkdir()
    (site / "sitecustomize.py").write_text(GATE)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])))
    monkeypatch.setenv("MINDEVAL_TEST_SAVE_GATE", str(gate))
    for base, ws in served_workspace(tmp_path):
        yield base, ws, gate


@pytest.mark.browser
def test_a_click_while_the_last_save_is_on_its_way_is_stored_not_refused(gated_app, page):
    """One tab: the second click reaches the server while the first click's save is still on
    its way to the database. Both scores are stored and nothing is refused as stale (before: the
    run of the second click wrote beside the first's, was refused, and the page dropped it)."""
    base, ws, gate = gated_app
    browser_sign_in(page, base)
    page.get_by_role("button", name="Continue rating").click()
    form = page.locator(".mindeval-rate")
    form.locator(".rate-axis").nth(8).wait_for()
    settle(page)
    aid = int(form.get_attribute("data-item"))
    groups = form.locator(".rate-axis")
    (gate / "hold").touch()
    groups.nth(0).get_by_label("3", exact=True).click()
    _wait_for(gate / "save-1")  # the first save is on its way
    groups.nth(1).get_by_label("5", exact=True).click()
    page.wait_for_function("() => { const f = document.querySelector('.mindeval-rate');"
                           " return f.dataset.state === 'saved' && JSON.parse(f.dataset.stored)[1] === '5'; }",
                           timeout=60_000)
    assert form.get_attribute("data-refused") == "0"
    subs = ws.subaxes()
    whole_rating(ws, viewer(ws, "demo", DEMO_CODE), aid, {subs[0].id: 3, subs[1].id: 5})


def _wait_for(path: Path, seconds: float = 60.0) -> None:
    end = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < end, f"{path.name} did not appear"
        time.sleep(0.02)


@pytest.mark.browser
def test_a_submit_sent_again_while_its_answer_is_late_is_applied_once(tmp_path, page):
    """The form sends a Submit again when no answer came within 3 s (as under load). Here the
    server's answers are held until the form has sent it again: the rating is submitted once
    (revision 1), the page goes on to the next transcript, and the rating, opened again, shows as
    submitted with no message that it "was changed in another tab or device"."""
    for base, ws in served_workspace(tmp_path):
        v = viewer(ws, "demo", DEMO_CODE)
        held = hold_server(page)
        browser_sign_in(page, base)
        page.get_by_role("button", name="Continue rating").click()
        aid = rate_form_on(page)
        for sub in ws.item(v, aid).subaxes:  # a complete rating, stored before the page acts
            ws.save_value(v, aid, sub.id, 4)
        ws.save_text(v, aid, justification="Complete.")
        page.reload()
        rate_form_stored(page, ["4"] * 9)
        held["on"] = True
        page.locator(f"{RATE_FORM} button.rate-submit").click()
        end = time.monotonic() + WAIT_MS / 1000
        while held["reruns"] < 2:  # the Submit and its resend, both unanswered
            assert time.monotonic() < end, "the form never sent its Submit again"
            page.wait_for_timeout(100)
        held["release"]()
        rate_form_on(page)
        page.wait_for_function("(a) => document.querySelector('div.mindeval-rate')?.dataset.item !== String(a)",
                               arg=aid)  # on to the next transcript
        settle(page)
        assert ws.item(v, aid).state == "submitted" and ws.item(v, aid).revision == 1
        page.get_by_role("button", name="◀ Previous").click()
        rate_form_on(page, item=aid)
        page.get_by_text("Submitted (revision 1)").wait_for()
        settle(page)
        assert "changed in another tab or device" not in page.inner_text("body")
