"""One script run of a tab writes at a time: the rating page never refuses its own autosave.

CI lost clicks in test_app_rate_browser.py::test_rapid_clicks_are_all_saved: with one tab, a save
was refused as stale. Streamlit's ``runner.fastReruns`` (on by default) started the next run of the
tab in a new thread while the old run was still inside its database write; the new run wrote at
the version the page knew before that write landed, was refused as if another tab had written,
and the page dropped the annotator's changes. The app turns fast reruns off, and the page's
version bookkeeping holds the tab's run lock, so even runs that do overlap (a run stopped by a
reconnect) write one after the other.
"""

from __future__ import annotations

import threading

import streamlit as st
from appkit import DEMO_CODE, radios, sign_in, viewer
from streamlit.web import cli

from annotation_app.services import Workspace
from mindeval.commands.app_launch import streamlit_command


def test_the_app_starts_the_next_run_of_a_tab_only_when_the_last_one_stopped():
    cmd = streamlit_command("127.0.0.1", 8501)
    params = cli.main_run.make_context("run", cmd[cmd.index("run") + 1:]).params  # as Streamlit reads them
    assert params["runner_fastReruns"] is False


def test_an_autosave_holds_the_tabs_run_lock_from_the_version_read_to_the_new_one(demo_ws, monkeypatch):
    """While a save is in the database, another run of the same tab cannot take the lock that
    reading `known`, writing at it and recording the new version hold; the save names the
    version the page shows and the page then knows the new one."""
    at = sign_in("demo", DEMO_CODE)
    at.button(key="open_1").click().run()
    free_during_save: list[bool] = []
    real = Workspace.save_value

    def save_value(self, *args, **kwargs):
        lock = st.session_state["_run_lock"]
        other = threading.Thread(target=lambda: free_during_save.append(_try_take(lock)))
        other.start()
        other.join()
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Workspace, "save_value", save_value)
    aid = at.session_state["assignment_id"]
    before = demo_ws.item(viewer(demo_ws, "demo", DEMO_CODE), aid).version
    first, second = list(radios(at).values())[:2]
    first.set_value(3).run()
    second.set_value(5).run()
    assert not at.exception, at.exception
    assert free_during_save == [False, False]
    item = demo_ws.item(viewer(demo_ws, "demo", DEMO_CODE), aid)
    assert item.version == before + 2 and at.session_state["rate_known"][aid] == item.version
    assert at.session_state["rate_refused"].get(aid, 0) == 0


def _try_take(lock) -> bool:
    if lock.acquire(blocking=False):
        lock.release()
        return True
    return False
