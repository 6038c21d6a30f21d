"""Role-play mode: the annotator writes as the patient; the clinician model answers.

Every message is stored the moment it is sent, so a refresh, a closed tab or a
server restart loses nothing: the conversation simply continues. A message sent while
the clinician is still answering is stored in the session's queue, shown as waiting,
and sent once the reply is in; the page shows a stored reply by itself (it checks the
database every second while a reply is due).
"""

from __future__ import annotations

import streamlit as st

from annotation_app import ui
from annotation_app.services import Conflict, MindEvalError, ReplyFailed, TimeUp
from annotation_app.store.models import Message

URL_STUDY, URL_SESSION = "study", "session"  # ?study=ID&session=ID: a reload or restart comes back here


def _restore_from_url(study_ids: list[int]) -> None:
    """On a tab's first run of this page, take the study and session from the URL (checked
    against the annotator's own sessions below, like any other choice)."""
    if st.session_state.get("_roleplay_url_read"):
        return
    st.session_state["_roleplay_url_read"] = True
    try:
        study = int(st.query_params.get(URL_STUDY, ""))
        session = int(st.query_params.get(URL_SESSION, ""))
    except ValueError:
        return
    if study in study_ids:
        st.session_state["roleplay_study"] = study
        st.session_state["session_id"] = session


def _remember_in_url(study_id: int, session_id: int) -> None:
    if st.query_params.get(URL_STUDY) != str(study_id) or st.query_params.get(URL_SESSION) != str(session_id):
        st.query_params.update({URL_STUDY: str(study_id), URL_SESSION: str(session_id)})


v = ui.require_viewer()
ws = ui.workspace()
studies = [p for p in ws.my_studies(v) if p.kind == "roleplay"]
st.title("Role-play", anchor=False)
if not studies:
    st.info("You have no role-play sessions.")
    st.stop()
_restore_from_url([p.study_id for p in studies])
study_id = ui.pick_study(studies, "roleplay_study", "session_id")
sessions = ws.sessions(v, study_id)
order = [e.session_id for e in sessions]
# A message belongs to the session whose box it was typed in, whatever the list shows now.
typed_in = next((i for i in order if st.session_state.get(f"chat_{i}")), None)
if typed_in is not None:
    st.session_state["session_id"] = typed_in
if st.session_state.get("session_id") not in order:
    active = [e.session_id for e in sessions if e.status == "active"]
    todo = [e.session_id for e in sessions if e.status == "not_started"]
    st.session_state["session_id"] = (active or todo or order)[0]
sid = st.session_state["session_id"]
_remember_in_url(study_id, sid)
status_word = {"not_started": "not started", "active": "in progress", "finished": "finished"}
labels = {e.session_id: f"{e.position}. {e.member_name} — {status_word[e.status]}" for e in sessions}
ui.pick_by_id("Session", order, labels, "session_id")
ui.show_flash()
view = ws.roleplay(v, sid)
if typed_in is not None and view.status != "active":  # e.g. finished in another tab meanwhile
    st.warning("Not sent: this session is not in progress. Your text is kept here:  \n"
               + ui.inert(st.session_state[f"chat_{sid}"]))

brief, chat = st.columns([2, 3], gap="large")
with brief:
    st.subheader(f"You are playing {ui.inert(view.member_name)}", anchor=False)
    st.caption("Stay in character and answer as this person would. The clinician only knows the intake details.")
    with st.expander("Backstory", expanded=True):
        st.markdown(ui.inert(view.backstory) if view.backstory else "_No backstory for this profile._")
    with st.expander("Profile details", expanded=False):
        ui.render_pairs(view.attributes)

with chat:
    if view.status == "not_started":
        st.subheader("Ready when you are", anchor=False)
        st.write(f"The session lasts **{view.minutes} minutes** from the moment you start. "
                 "Read the brief first; you write the first message.")
        if st.button("Start session", type="primary", key=f"start_{sid}"):
            try:
                ws.start_session(v, sid)
            except MindEvalError as exc:
                ui.flash("error", exc.message)
            st.rerun()
        st.stop()

    if view.status == "active":
        if view.seconds_left is not None:  # at zero the clock reruns the page: the chat box is disabled
            ui.countdown(sid, view.seconds_left, view.time_up)
        if view.time_up:
            st.warning("Time is up. Please finish the session below.")
    else:
        st.success("This session is finished. Thank you!")

    chat_box = st.container(height=500)
    with chat_box:
        if not view.messages:
            st.caption(f"Write your first message as {ui.inert(view.member_name)} below.")
        ui.render_transcript(view.messages, view.member_name, chat=True)
        if view.status == "active" and view.replying:

            @st.fragment(run_every=1)
            def _writing() -> None:
                """The reply streamed so far (the page reran meanwhile), until the stored one replaces it."""
                partial = ws.roleplay(v, sid).partial
                if partial:
                    with st.chat_message("assistant", avatar=":material/medical_services:"):
                        st.markdown(f"**:blue[Clinician]** · writing…  \n{ui.inert(partial)}")

            _writing()
        if view.queued:
            with st.container(key="queued_messages"):
                ui.render_transcript([Message(role="patient", content=t) for t in view.queued], view.member_name,
                                     chat=True)
                st.caption(f"{len(view.queued)} message{'s' if len(view.queued) > 1 else ''} saved, waiting for "
                           "the clinician's reply; sent in order as soon as it arrives.")

    late = st.session_state.setdefault("late_messages", {}).get(sid, [])
    for text in late:
        st.warning(f"Not sent, because the time was up. Your text is kept here:  \n{ui.inert(text)}")

    def _answer(work) -> None:
        """Show the clinician's reply as it is written; report failures plainly."""
        with chat_box, st.chat_message("assistant", avatar=":material/medical_services:"):
            st.markdown("**:blue[Clinician]**")
            try:
                ui.stream_while(work)
            except TimeUp as exc:
                st.session_state["late_messages"].setdefault(sid, []).append(exc.text)
            except ReplyFailed as exc:
                ui.flash("error", f"{exc.message} with “Get the clinician's reply”. Your message is saved.")
            except (Conflict, MindEvalError) as exc:
                ui.flash("warning", exc.message)
        st.rerun()

    def _state(rp) -> tuple:
        return len(rp.messages), len(rp.queued), rp.replying, rp.awaiting_reply, rp.status

    pending = view.awaiting_reply or view.replying or bool(view.queued)
    if view.status == "active" and pending:

        @st.fragment(run_every=1)
        def _watch() -> None:
            """Show a reply (or a queued message turning into a turn) as soon as it is stored."""
            if _state(ws.roleplay(v, sid)) != _state(view):
                st.rerun()

        _watch()

    if view.status == "active":
        if view.replying:
            st.info("The clinician is writing a reply. You can keep writing: your messages are saved and "
                    "sent in order.")
        elif pending:
            st.info("Your last message is saved. The clinician's reply has not arrived yet.")
            if st.button("Get the clinician's reply", type="primary", key=f"retry_{sid}"):
                _answer(lambda on_text: ws.retry_reply(v, sid, on_text))
        # At zero the clock reruns the page and this box is shown disabled (ui.countdown); a message
        # that still arrives after the deadline is refused and kept on the page, never silently dropped.
        typed = st.session_state.get(f"chat_{sid}") if typed_in == sid else None  # a disabled box drops it
        text = st.chat_input(f"Write as {view.member_name}…", key=f"chat_{sid}", disabled=view.time_up)
        if view.time_up and typed:  # sent just after the deadline, before the clock's rerun: refused, kept
            text = typed
        if text and pending:  # the clinician is answering: the message waits in the queue
            try:
                ws.send_message(v, sid, text)
            except TimeUp as exc:
                st.session_state["late_messages"].setdefault(sid, []).append(exc.text)
            except MindEvalError as exc:
                ui.flash("warning", f"Not sent: {exc.message}. Your text is kept here:  \n{ui.inert(text)}")
            st.rerun()
        elif text:
            with chat_box:
                ui.render_transcript([Message(role="patient", content=text)], view.member_name, chat=True)
            _answer(lambda on_text: ws.send_message(v, sid, text, on_text))
        if st.button("Finish session", key=f"finish_{sid}"):
            try:
                ws.finish_session(v, sid)
            except MindEvalError as exc:
                ui.flash("warning", exc.message)
            else:
                ui.flash("success", "Session finished and saved. Thank you!")
            st.rerun()
