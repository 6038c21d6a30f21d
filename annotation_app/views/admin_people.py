"""Admin: annotators and their access codes (shown once, stored only as a hash), and the sign-in log."""

from __future__ import annotations

import streamlit as st

from annotation_app import ui
from annotation_app.services import MindEvalError

v = ui.require_admin()
ws = ui.workspace()
st.title("People", anchor=False)
ui.show_flash()
fresh = st.session_state.pop("_new_code", None)  # shown once, right after the action
if fresh:
    st.success(fresh[0])
    st.code(fresh[1], language=None)


def _add() -> None:
    try:
        info, code = ws.add_annotator(v, st.session_state.get("add_name") or "",
                                      admin=bool(st.session_state.get("add_admin")))
    except MindEvalError as exc:
        ui.flash("error", exc.message)
        return
    st.session_state["_new_code"] = (
        f"{info.name} can now sign in with this access code. Copy it now: it is shown only once.", code)
    st.session_state["add_name"], st.session_state["add_admin"] = "", False


def _reset() -> None:
    who = st.session_state.get("reset_who")
    try:
        code = ws.reset_code(v, who or "")
    except MindEvalError as exc:
        ui.flash("error", exc.message)
        return
    st.session_state["_new_code"] = (
        f"New code for {who}: the old one no longer works and {who} is signed out everywhere. "
        "Copy it now: it is shown only once.", code)
    st.session_state["reset_who"], st.session_state["reset_sure"] = None, False


people = ws.annotators(v)
st.dataframe(
    [{"Name": p.name, "Role": "admin" if p.is_admin else "annotator",
      "Can sign in": "yes" if p.can_sign_in else "no (imported)", "Active": "yes" if p.active else "no"}
     for p in people],
    hide_index=True, width="stretch",
)

st.subheader("Add a person", anchor=False)
with st.form("add_person"):
    st.text_input("Name", key="add_name")
    st.checkbox("Study admin", key="add_admin")
    st.form_submit_button("Add", type="primary", on_click=_add)

st.subheader("New access code", anchor=False)
who = st.selectbox("Whose code?", [p.name for p in people if p.origin == "created"], index=None,
                   placeholder="Choose a person", key="reset_who")
sure = st.checkbox(f"Yes, replace {who}'s code: the old code stops working at once." if who
                   else "Choose a person first.", key="reset_sure", disabled=who is None)
st.button("Make a new code", key="reset_go", disabled=not (who and sure), on_click=_reset)

st.subheader("Failed sign-ins", anchor=False)
events = ws.signin_events(v, 50)
if events:
    st.caption("The newest 50 failed or slowed-down attempts (the codes typed are never stored).")
    st.dataframe([{"Time (UTC)": e.at.strftime("%Y-%m-%d %H:%M:%S"), "Name typed": e.name, "From": e.client,
                   "Outcome": e.outcome} for e in events], hide_index=True, width="stretch")
else:
    st.caption("None so far.")
