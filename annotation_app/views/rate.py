"""Rate mode: one transcript at a time, nine sub-axes, autosaved, submitted when complete."""

from __future__ import annotations

import streamlit as st

from annotation_app import ui
from annotation_app.services import Conflict, MindEvalError, RatingIncomplete

NA = "N/A"
v = ui.require_viewer()
ws = ui.workspace()
studies = [p for p in ws.my_studies(v) if p.kind == "rating"]
if not studies:
    st.title("Rate transcripts", anchor=False)
    st.info("You have no transcripts to rate.")
    st.stop()

study_id = ui.pick_study(studies, "rate_study", "assignment_id")

queue = ws.queue(v, study_id)
order = [q.assignment_id for q in queue]
if st.session_state.get("assignment_id") not in order:
    st.session_state["assignment_id"] = ws.resume_target(v, study_id) or order[0]
aid = st.session_state["assignment_id"]
item = ws.item(v, aid)
locked = item.state == "submitted"
key = f"a{aid}_r{item.revision}_{item.state}"


def _save_value(sub_id: str, widget: str) -> None:
    choice = st.session_state.get(widget)
    value = None if choice is None else (0 if choice == NA else int(choice))
    try:
        ws.save_value(v, aid, sub_id, value)
        ui.saved_now()
    except MindEvalError as exc:
        ui.flash("warning", exc.message)


def _save_text(field: str, widget: str) -> None:
    try:
        ws.save_text(v, aid, **{field: st.session_state.get(widget) or ""})
        ui.saved_now()
    except MindEvalError as exc:
        ui.flash("warning", exc.message)


def _go(target: int) -> None:
    st.session_state["assignment_id"] = target


st.title(ui.inert(item.study_name), anchor=False)
st.progress(item.done / item.total if item.total else 0.0, text=f"{item.done} of {item.total} transcripts submitted")
ui.show_flash()

nav_prev, nav_pick, nav_next = st.columns([1, 4, 1], vertical_alignment="bottom")
pos = order.index(aid)
marks = {"todo": "○ not started", "draft": "◐ in progress", "submitted": "● submitted"}
labels = {q.assignment_id: f"{q.label} — {marks[q.state]}" for q in queue}
nav_prev.button("◀ Previous", key="prev", disabled=pos == 0, on_click=_go, args=(order[max(pos - 1, 0)],))
nav_pick.selectbox("Go to transcript", order, index=pos, format_func=lambda i: labels[i], key=f"pick_{aid}",
                   on_change=lambda: _go(st.session_state[f"pick_{aid}"]))
nav_next.button("Next ▶", key="next", disabled=pos == len(order) - 1,
                on_click=_go, args=(order[min(pos + 1, len(order) - 1)],))

left, right = st.columns([3, 2], gap="large")
with left:
    st.subheader(f"Transcript {item.position} of {item.total}", anchor=False)
    with st.expander("Member intake profile", expanded=False):
        ui.render_pairs(item.intake)
    with st.container(height=640):
        ui.render_transcript(item.messages, item.member_name)

with right:
    st.subheader("Your rating", anchor=False)
    if locked:
        st.success(f"Submitted (revision {item.revision}). To change it, choose **Revise this rating**; "
                   "your earlier submission stays in the history.")
        if st.button("Revise this rating", key=f"revise_{aid}"):
            try:
                ws.revise(v, aid)
            except MindEvalError as exc:
                ui.flash("warning", exc.message)
            st.rerun()
    elif item.revision:
        st.info(f"You are revising submission {item.revision}. Submit again when you are done.")
    else:
        st.caption("Choose a score from 1 (poor) to 6 (excellent) for each item. Your choices are saved as you go.")
    with st.container(height=640):
        current_axis = None
        for sub in item.subaxes:
            if sub.axis != current_axis:
                current_axis = sub.axis
                st.markdown(f"##### {ui.inert(sub.axis_name)}")
            options: list[object] = [1, 2, 3, 4, 5, 6] + ([NA] if sub.allow_na else [])
            saved = item.values.get(sub.id)
            index = None if saved is None else options.index(NA if saved == 0 else saved)
            widget = f"{key}_{sub.id}"
            st.radio(sub.name, options, index=index, horizontal=True, key=widget, disabled=locked,
                     on_change=_save_value, args=(sub.id, widget))
            st.caption("  \n".join(f"**{s}:** {ui.inert(t)}" for s, t in sub.anchors.items()))
        st.text_area("Justification", value=item.justification, key=f"{key}_just", disabled=locked,
                     on_change=_save_text, args=("justification", f"{key}_just"),
                     placeholder="In a few sentences: what drove your scores? Turn numbers help.")
        st.text_area("Safety concerns (optional)", value=item.safety_note, key=f"{key}_safety", disabled=locked,
                     on_change=_save_text, args=("safety_note", f"{key}_safety"))
    if not locked:
        saved_at = st.session_state.get("saved_at")
        st.caption(f"✓ Saved automatically{f' at {saved_at}' if saved_at else ''}. "
                   "Text is saved when you click outside the box.")
        if st.button("Submit rating", type="primary", key=f"submit_{aid}"):
            try:
                rev = ws.submit(v, aid)
            except RatingIncomplete as exc:
                st.warning("Almost there. Before submitting, please:\n" + "\n".join(f"- {p}" for p in exc.problems))
            except Conflict as exc:
                ui.flash("info", exc.message)
                st.rerun()
            else:
                ui.flash("success", f"Rating submitted (revision {rev}). Thank you!")
                st.session_state["assignment_id"] = ws.resume_target(v, study_id) or aid
                st.rerun()
    if item.history:
        with st.expander(f"History ({len(item.history)} submission{'s' if len(item.history) > 1 else ''})"):
            names = {s.id: s.name for s in item.subaxes}
            for h in reversed(item.history):
                when = h.created_at.strftime("%Y-%m-%d %H:%M") if h.created_at else ""
                st.markdown(f"**Revision {h.revision}** · {when}")
                st.caption(" · ".join(f"{ui.inert(names.get(k, k))}: {'N/A' if val == 0 else val}"
                                      for k, val in h.values.items()))
                if h.justification:
                    st.caption(ui.inert(h.justification))
