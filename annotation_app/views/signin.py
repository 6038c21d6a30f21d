"""Sign-in page: a name and a personal access code."""

from __future__ import annotations

import streamlit as st

from annotation_app import ui
from annotation_app.services import SignInThrottled

st.title("MindEval annotation", anchor=False)
st.write(
    "Welcome. Sign in with the name and the personal access code your study admin gave you. "
    "Everything you do is saved as you go, so you can stop at any time and continue later."
)
with st.form("sign_in", clear_on_submit=False):
    name = st.text_input("Your name", key="signin_name")
    code = st.text_input("Access code", type="password", key="signin_code")
    submitted = st.form_submit_button("Sign in", type="primary")
if submitted:
    try:
        done = ui.workspace().sign_in(name or "", code or "", client=ui.client_address())
    except SignInThrottled as exc:
        st.error(exc.message[0].upper() + exc.message[1:] + ".")
        st.stop()
    if done is None:
        st.error("That name and access code do not match. Please check them, or ask your study admin for a new code.")
    else:
        st.session_state.pop("signin_code", None)
        ui.signed_in(done.token)
        st.rerun()
