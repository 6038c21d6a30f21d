"""MindEval annotation app: the Streamlit entry point (``mindeval app`` starts it).

Signed-out visitors see only the sign-in page; annotators see their own work;
admins also see the study pages. The database URL comes from ``$MINDEVAL_APP_DB``.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from annotation_app import ui

HERE = Path(__file__).resolve().parent

st.set_page_config(page_title="MindEval annotation", page_icon=":material/spa:", layout="wide")


def _page(name: str, title: str, icon: str, default: bool = False) -> st.Page:
    return st.Page(str(HERE / "views" / f"{name}.py"), title=title, icon=icon, default=default)


ui.check_proxy_header()
viewer = ui.viewer()
if viewer is None:
    nav = st.navigation([_page("signin", "Sign in", ":material/login:", default=True)], position="hidden")
else:
    pages = {
        "Your work": [
            _page("home", "Overview", ":material/home:", default=True),
            _page("rate", "Rate transcripts", ":material/rate_review:"),
            _page("roleplay", "Role-play", ":material/forum:"),
        ]
    }
    if viewer.is_admin:
        pages["Study admin"] = [
            _page("admin_studies", "Studies", ":material/folder_open:"),
            _page("admin_people", "People", ":material/group:"),
            _page("admin_results", "Results", ":material/bar_chart:"),
            _page("admin_review", "Disagreements", ":material/balance:"),
            _page("admin_export", "Export", ":material/download:"),
        ]
    nav = st.navigation(pages)
    with st.sidebar:
        st.caption(f"Signed in as **{ui.inert(viewer.name)}**")
        if viewer.is_admin:
            ui.proxy_notice()
        if st.button("Sign out", key="sign_out"):
            ui.sign_out()
            st.rerun()
ui.follow_handoff()
ui.run_page(nav)
