"""Shared Streamlit helpers: the workspace, the signed-in person, safe text rendering.

Pages import this module and :mod:`annotation_app.services` only. All transcript,
profile and free text is shown through :func:`inert`, which escapes every Markdown
and HTML character, so text from models or files can never become markup or script.
"""

from __future__ import annotations

import re
import string
from datetime import datetime

import streamlit as st

from annotation_app.services import Workspace, default_db_url
from mindeval.store.annotations.models import Message, Viewer

TOKEN_PARAM = "s"
_PUNCT = re.compile("([" + re.escape(string.punctuation) + "])")


@st.cache_resource(show_spinner=False)
def _workspace(url: str) -> Workspace:
    return Workspace(url)


def workspace() -> Workspace:
    """The process-wide workspace of ``$MINDEVAL_APP_DB`` (migrated on first use)."""
    return _workspace(default_db_url())


def inert(text: str) -> str:
    """Markdown that displays ``text`` literally: no links, HTML, math or formatting."""
    escaped = _PUNCT.sub(r"\\\1", text)
    return escaped.replace("\r\n", "\n").replace("\n", "  \n")


def viewer() -> Viewer | None:
    """The signed-in person, from this browser session's token (kept in the URL for refresh)."""
    token = st.session_state.get("token") or st.query_params.get(TOKEN_PARAM)
    if not token:
        return None
    v = workspace().viewer(token)
    if v is None:
        st.session_state.pop("token", None)
        if TOKEN_PARAM in st.query_params:
            del st.query_params[TOKEN_PARAM]
        return None
    st.session_state["token"] = token
    if st.query_params.get(TOKEN_PARAM) != token:
        st.query_params[TOKEN_PARAM] = token
    return v


def require_viewer() -> Viewer:
    v = viewer()
    if v is None:
        st.info("Please sign in.")
        st.stop()
    return v


def require_admin() -> Viewer:
    v = require_viewer()
    if not v.is_admin:
        st.error("This page is for study admins.")
        st.stop()
    return v


def flash(kind: str, text: str) -> None:
    """Show a message once, on the next run (survives st.rerun / switch_page)."""
    st.session_state.setdefault("_flash", []).append((kind, text))


def show_flash() -> None:
    for kind, text in st.session_state.pop("_flash", []):
        getattr(st, kind)(text)


def saved_now() -> None:
    st.session_state["saved_at"] = datetime.now().strftime("%H:%M:%S")


def render_pairs(pairs: list[tuple[str, str]]) -> None:
    """Label/value lines (e.g. an intake profile), all inert."""
    st.markdown("  \n".join(f"**{inert(k)}:** {inert(v)}" for k, v in pairs))


def render_transcript(messages: list[Message], member_name: str, *, chat: bool = False) -> None:
    """The conversation, clinician and member clearly labelled, all text inert.

    ``chat=True`` uses chat bubbles (role-play, where the view follows the newest
    message); otherwise each turn is a bordered card read from the top (rating).
    """
    for n, m in enumerate(messages, start=1):
        if m.role == "clinician":
            who, icon, colour = "Clinician", ":material/medical_services:", "blue"
        else:
            who, icon, colour = inert(member_name), ":material/person:", "green"
        if chat:
            with st.chat_message("assistant" if m.role == "clinician" else "user", avatar=icon):
                st.markdown(f"**:{colour}[{who}]**  \n{inert(m.content)}")
        else:
            with st.container(border=True):
                st.markdown(f"{icon} **:{colour}[{who}]** · turn {n}  \n{inert(m.content)}")


def pick_study(studies, state_key: str, reset_key: str) -> int:
    """The chosen study id, remembered in session state; a selectbox when there are several."""
    ids = [p.study_id for p in studies]
    if st.session_state.get(state_key) not in ids:
        st.session_state[state_key] = ids[0]
    if len(studies) > 1:
        st.selectbox("Study", ids, format_func=lambda i: next(p.name for p in studies if p.study_id == i),
                     key=state_key, on_change=lambda: st.session_state.pop(reset_key, None))
    return st.session_state[state_key]


def admin_study_page(title: str, key: str):
    """Header of an admin page: title, the study list (stops when empty), the chosen study."""
    v = require_admin()
    ws = workspace()
    st.title(title, anchor=False)
    studies = ws.studies(v)
    if not studies:
        st.info("No studies yet.")
        st.stop()
    chosen = st.selectbox("Study", [s.name for s in studies], key=key)
    return v, ws, studies, chosen
