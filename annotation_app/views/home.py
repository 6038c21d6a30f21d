"""Overview: the signed-in person's studies with their progress."""

from __future__ import annotations

import streamlit as st

from annotation_app import ui

v = ui.require_viewer()
ws = ui.workspace()
ui.show_flash()
st.title(f"Hello, {ui.inert(v.name)}", anchor=False)
work = ws.my_studies(v)
if not work:
    st.info("Nothing is assigned to you yet. Your study admin will let you know when there is work.")
for p in work:
    with st.container(border=True):
        st.subheader(ui.inert(p.name), anchor=False)
        if p.description:
            st.write(ui.inert(p.description))
        if p.kind == "rating" and (failed := ws.qualification(v, p.study_id).message()):
            st.error(failed)
        noun = "transcripts rated" if p.kind == "rating" else "sessions finished"
        st.progress(p.done / p.total if p.total else 0.0, text=f"{p.done} of {p.total} {noun}")
        label = "Continue rating" if p.kind == "rating" else "Continue role-play"
        if p.done == p.total and p.total:
            label = "Review" if p.kind == "rating" else "Open"
        if st.button(label, key=f"open_{p.study_id}", type="primary" if p.done < p.total else "secondary"):
            if p.kind == "rating":
                st.session_state["rate_study"] = p.study_id
                st.session_state.pop("assignment_id", None)
                st.switch_page("views/rate.py")
            else:
                st.session_state["roleplay_study"] = p.study_id
                st.session_state.pop("session_id", None)
                st.switch_page("views/roleplay.py")
