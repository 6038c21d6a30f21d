"""Rate mode: one transcript at a time on its study's form, autosaved, submitted when complete.

The form follows the study's target: its sub-axes and anchors, its scale (scores 1-6 for
MindEval; a categorical target's level labels, stored as the levels' values) and where
"not applicable" is offered.

Saving is reconciled on every script run rather than left to widget callbacks: a
Streamlit rerun cut short by the next click can drop a callback, so each run compares
what the page shows (the widget states sent by the browser) with the database and
saves every difference. The last run after a burst of clicks always completes, so what
the annotator sees selected is what is stored; a value that cannot be stored (the
rating was submitted in another tab) is reported on the page.
"""

from __future__ import annotations

import streamlit as st

from annotation_app import ui
from annotation_app.services import Conflict, MindEvalError, RatingIncomplete

NA = "N/A"
TEXTS = ("justification", "safety_note")
v = ui.require_viewer()
ws = ui.workspace()
studies = [p for p in ws.my_studies(v) if p.kind == "rating"]
if not studies:
    st.title("Rate transcripts", anchor=False)
    st.info("You have no transcripts to rate.")
    st.stop()

ui.compact_page()
study_id = ui.pick_study(studies, "rate_study", "assignment_id")
queue = ws.queue(v, study_id)
order = [q.assignment_id for q in queue]
if st.session_state.get("assignment_id") not in order:
    st.session_state["assignment_id"] = ws.resume_target(v, study_id) or order[0]
aid = st.session_state["assignment_id"]


def _choice(value: int | None, na: int) -> object:
    """The radio option of a stored value (options are the scale's values and "N/A")."""
    return None if value is None else (NA if value == na else value)


def _value(choice: object, na: int) -> int | None:
    return None if choice is None else (na if choice == NA else int(choice))


def _reconcile() -> None:
    """Store every score and text the page shows that the database does not have yet.

    Widgets of the previous run are registered in ``rate_widgets`` (widget key →
    assignment, field), including those of a transcript the annotator just left.
    """
    widgets: dict[str, tuple[int, str]] = st.session_state.get("rate_widgets", {})
    for target in sorted({a for a, _ in widgets.values()}):
        try:
            shown = ws.item(v, target)
        except MindEvalError:
            continue
        if shown.state == "submitted":
            continue
        for widget, (a, field) in widgets.items():
            if a != target or widget not in st.session_state:
                continue
            seen = st.session_state[widget]
            try:
                if field in TEXTS:
                    if (seen or "") != getattr(shown, field):
                        ws.save_text(v, target, **{field: seen or ""})
                        ui.saved_now()
                elif seen is not None and _value(seen, shown.scale.na_value) != shown.values.get(field):
                    ws.save_value(v, target, field, _value(seen, shown.scale.na_value))
                    ui.saved_now()
            except MindEvalError as exc:
                ui.flash("warning", f"Not saved: {exc.message}")


def _go(target: int) -> None:
    st.session_state["assignment_id"] = target


_reconcile()
item = ws.item(v, aid)
scale = item.scale
locked = item.state == "submitted"
key = f"a{aid}_r{item.revision}_{'locked' if locked else 'open'}"
registry: dict[str, tuple[int, str]] = {}
for sub in item.subaxes:
    registry[f"{key}_{sub.id}"] = (aid, sub.id)
    if f"{key}_{sub.id}" not in st.session_state and sub.id in item.values:  # first showing only: a later
        st.session_state[f"{key}_{sub.id}"] = _choice(item.values[sub.id], scale.na_value)  # set would undo a pending click
for field in TEXTS:
    registry[f"{key}_{field}"] = (aid, field)
    if f"{key}_{field}" not in st.session_state:
        st.session_state[f"{key}_{field}"] = getattr(item, field)
st.session_state["rate_widgets"] = {} if locked else registry

pos = order.index(aid)
marks = {"todo": "○ not started", "draft": "◐ in progress", "submitted": "● submitted"}
labels = {q.assignment_id: f"{q.label} — {marks[q.state]}" for q in queue}
head, nav_prev, nav_pick, nav_next = st.columns([4, 1.4, 4, 1.2], vertical_alignment="center")
head.markdown(f"**{ui.inert(item.study_name)}** · Transcript {item.position} of {item.total}  \n"
              f":small[{item.done} of {item.total} transcripts submitted]")
nav_prev.button("◀ Previous", key="prev", disabled=pos == 0, on_click=_go, args=(order[max(pos - 1, 0)],))
nav_pick.selectbox("Go to transcript", order, index=pos, format_func=lambda i: labels[i], key=f"pick_{aid}",
                   label_visibility="collapsed", on_change=lambda: _go(st.session_state[f"pick_{aid}"]))
nav_next.button("Next ▶", key="next", disabled=pos == len(order) - 1,
                on_click=_go, args=(order[min(pos + 1, len(order) - 1)],))
ui.show_flash()

left, right = st.columns([3, 2], gap="medium")
with left:
    ui.transcript_pane(item.messages, item.member_name, item.intake, key=f"t{aid}")

with right:
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
    ordinal = scale.kind == "ordinal"
    show_anchors = st.toggle("Show score anchors" if ordinal else "Show level anchors", key="show_anchors",
                             help=("What a 1, a 3 and a 6 look like" if ordinal else "What each level looks like")
                             + "; also under each item's ⓘ.")
    with st.container(height=440, key="rating-pane"):
        current_axis = None
        for sub in item.subaxes:
            if sub.axis != current_axis:
                current_axis = sub.axis
                if sub.name != sub.axis_name:  # a form with one item per axis, named alike, needs no heading
                    st.markdown(f"**{ui.inert(sub.axis_name)}**")
            options: list[object] = [lv.value for lv in scale.levels] + ([NA] if sub.allow_na else [])
            anchors = "  \n".join(f"**{ui.inert(s)}:** {ui.inert(t)}" for s, t in sub.anchors.items())
            st.radio(sub.name, options, index=None, horizontal=True, key=f"{key}_{sub.id}", disabled=locked,
                     help=anchors, format_func=lambda o: NA if o == NA else ui.inert(scale.label(o)))
            if show_anchors:
                st.caption(anchors)
        st.text_area("Justification", key=f"{key}_justification", disabled=locked, height=100,
                     placeholder="In a few sentences: what drove your scores? Turn numbers help.")
        st.text_area("Safety concerns (optional)", key=f"{key}_safety_note", disabled=locked, height=68)
    if not locked:
        saved_at = st.session_state.get("saved_at")
        submit_col, note_col = st.columns([2, 3], vertical_alignment="center")
        with note_col:
            ui.save_status([scale.label(item.values.get(sub.id)) for sub in item.subaxes],
                           f"✓ {len(item.values)} of {len(item.subaxes)} scores saved"
                           f"{f' at {saved_at}' if saved_at else ''}. Text is saved when you leave the box.")
        if submit_col.button("Submit rating", type="primary", key=f"submit_{aid}"):
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
        ui.rating_keys(key, None if ordinal else [lv.label for lv in scale.levels])
    if item.history:
        with st.expander(f"History ({len(item.history)} submission{'s' if len(item.history) > 1 else ''})"):
            names = {s.id: s.name for s in item.subaxes}
            for h in reversed(item.history):
                when = h.created_at.strftime("%Y-%m-%d %H:%M") if h.created_at else ""
                st.markdown(f"**Revision {h.revision}** · {when}")
                st.caption(" · ".join(f"{ui.inert(names.get(k, k))}: {ui.inert(scale.label(val))}"
                                      for k, val in h.values.items()))
                if h.justification:
                    st.caption(ui.inert(h.justification))
