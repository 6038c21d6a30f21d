"""Admin: annotators and their access codes (shown once, stored only as a hash)."""

from __future__ import annotations

import streamlit as st

from annotation_app import ui
from annotation_app.services import MindEvalError

v = ui.require_admin()
ws = ui.workspace()
st.title("People", anchor=False)

people = ws.annotators(v)
st.dataframe(
    [{"Name": p.name, "Role": "admin" if p.is_admin else "annotator",
      "Can sign in": "yes" if p.can_sign_in else "no (imported)", "Active": "yes" if p.active else "no"}
     for p in people],
    hide_index=True, width="stretch",
)

st.subheader("Add a person", anchor=False)
with st.form("add_person", clear_on_submit=True):
    name = st.text_input("Name")
    admin = st.checkbox("Study admin")
    if st.form_submit_button("Add", type="primary"):
        try:
            info, code = ws.add_annotator(v, name, admin=admin)
        except MindEvalError as exc:
            st.error(str(exc))
        else:
            st.success(f"{info.name} can now sign in with this access code. Copy it now: it is shown only once.")
            st.code(code, language=None)

st.subheader("New access code", anchor=False)
with st.form("reset_code", clear_on_submit=True):
    who = st.selectbox("Person", [p.name for p in people if p.origin == "created"])
    if st.form_submit_button("Make a new code"):
        try:
            code = ws.reset_code(v, who)
        except MindEvalError as exc:
            st.error(str(exc))
        else:
            st.success(f"New code for {who} (the old one no longer works). Copy it now: it is shown only once.")
            st.code(code, language=None)
