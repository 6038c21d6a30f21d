"""Rate mode: one transcript at a time on its study's form, autosaved, submitted when complete.

The form follows the study's target: its sub-axes and anchors, its scale (scores 1-6 for
MindEval; a categorical target's level labels, stored as the levels' values), where "not
applicable" is offered, and the judge's unit (questions, one reply at a time).

The form is one component (:func:`annotation_app.forms.rating_form`, assets/forms/rate.js)
that owns its state: every change is sent as the form's whole state ``(tab, seq, item,
values, texts)``, Submit and a step to another reply as triggers that name their item. Each
``(tab, seq)`` is applied at most once (:meth:`Workspace.first_time`) by
:func:`annotation_app.rate_form.apply`, on the item it names, at the rating version this tab
last saw: a newer stored version (another tab or device saved meanwhile) refuses it, and the
form reloads what is stored with a message saying what changed. The form lives in a fragment:
a change reruns the form only, and its answer (what is stored, the highest ``seq`` applied)
is one small message. The browser keeps every change until it is acknowledged and sends it
again after a reload or a reconnect (see rate.js). The URL names the study and transcript.
"""

from __future__ import annotations

import streamlit as st

from annotation_app import active_time, forms, ui
from annotation_app import rate_form as rf
from annotation_app import unit_form as uf
from annotation_app.services import Conflict, MindEvalError, RatingIncomplete, Stale
from mindeval.targets.rubric_text import render_rubric, render_scale

FORM = "rate_form"
v = ui.require_viewer()
ws = ui.workspace()
studies = [p for p in ws.my_studies(v) if p.kind == "rating"]
if not studies:
    st.title("Rate transcripts", anchor=False)
    st.info("You have no transcripts to rate.")
    st.stop()

ui.restore_from_url(studies)
study_id = ui.pick_study(studies, "rate_study", "assignment_id")
if failed := ws.qualification(v, study_id).message():  # a failed qualification: no real item ever opens
    st.error(failed)
queue = ws.queue(v, study_id)
order = [q.assignment_id for q in queue]
if st.session_state.get("assignment_id") not in order:
    st.session_state["assignment_id"] = ws.resume_target(v, study_id) or order[0]
aid = st.session_state["assignment_id"]
# assignment → the version this session's last write made (else the form's own `version` counts)
known: dict[int, int] = st.session_state.setdefault("rate_known", {})
refused: dict[int, int] = st.session_state.setdefault("rate_refused", {})  # stale writes refused, per assignment
acks: dict[int, dict[str, int]] = st.session_state.setdefault("rate_ack", {})  # assignment → tab → seq applied
notes: dict[int, tuple[str, str]] = st.session_state.setdefault("rate_note", {})  # assignment → the form's message


def _stale(act: forms.RateAction) -> None:
    """Another tab or device stored a newer version: the form reloads it; say what changed."""
    item = ws.item(v, act.item)
    changes = [f"- {ui.inert(name)} is now “{ui.inert(now)}”; this page had (copy it if you need it): “{ui.inert(seen)}”"
               if text else f"- {ui.inert(name)} is now **{ui.inert(now) if now else 'not set'}** "
               f"(this page showed {ui.inert(seen)})"
               for name, now, seen, text in rf.stale_changes(item, ws.guidelines(item.study_id), act)]
    notes[act.item] = ("warning", "This rating was changed in another tab or device, so your last change was "
                       "**not saved**. The form now shows what is stored; please check it and enter your change "
                       "again." + ("\n\n" + "\n".join(changes) if changes else ""))
    refused[act.item] = refused.get(act.item, 0) + 1  # the browser drops its copies of the refused changes
    known.pop(act.item, None)


def _version(act: forms.RateAction) -> int | None:
    """The version a write of ``act`` is based on: this session's last write of the item, else the
    version the form showed, past its own tab's earlier writes (:func:`rate_form.base_version`: a
    browser back on a new session, after a reload or a reconnect, keeps its own)."""
    return known[act.item] if act.item in known else rf.base_version(ws, v, act)


def _apply(act: forms.RateAction) -> bool:
    """Store the form's state on the item it names; ``False`` when refused or failed."""
    try:
        version, writes = rf.apply(ws, v, act, _version(act))
    except Stale:
        _stale(act)
        return False
    except MindEvalError as exc:
        notes[act.item] = ("warning", f"Not saved: {exc.message}")
        return False
    if writes:  # (a state that wrote nothing leaves it: its base may be older than what is stored)
        known[act.item] = version
        ui.saved_now()
        notes.pop(act.item, None)
    return True


def _take(event: str) -> forms.RateAction | None:
    """The form's ``event`` if this tab has not sent it before (acknowledged either way)."""
    act = forms.action(FORM, event, forms.RateAction)
    if act is None:
        return None
    seen = acks.setdefault(act.item, {})
    first = ws.first_time(v, act.tab, act.seq)
    seen[act.tab] = max(seen.get(act.tab, 0), act.seq)
    return act if first else None


def _on_state() -> None:
    if act := _take("form"):
        _apply(act)
        ws.applied(v, act.tab, act.seq)


def _on_step() -> None:
    """A step to another reply: what the form shows is stored first."""
    if (act := _take("step")) and act.reply is not None and _apply(act):
        st.session_state[f"reply_pos_{act.item}"] = act.reply
        st.session_state["rate_moved"] = True
    if act:
        ws.applied(v, act.tab, act.seq)


def _on_submit() -> None:
    if act := _take("submit"):
        _submit(act)
        ws.applied(v, act.tab, act.seq)


def _submit(act: forms.RateAction) -> None:
    """Store what the form shows, then submit at the version this tab saw; every outcome says so."""
    if not _apply(act):
        return
    active_time.track(ws, v, act.item, True, flush_at=0.0)
    try:
        rev = ws.submit(v, act.item, version=_version(act))
    except RatingIncomplete as exc:
        notes[act.item] = ("warning", "Almost there. Before submitting, please:\n"
                           + "\n".join(f"- {p}" for p in exc.problems))
    except Stale:
        _stale(act)
    except Conflict as exc:
        notes[act.item] = ("info", exc.message)
    except MindEvalError as exc:
        notes[act.item] = ("warning", f"Not submitted: {exc.message}")
    else:
        notes.pop(act.item, None)
        ui.flash("success", f"Rating submitted (revision {rev}). Thank you!")
        st.session_state["assignment_id"] = ws.resume_target(v, study_id) or act.item
        st.session_state["rate_moved"] = True


@st.fragment
def _form(target: int) -> None:
    """The form and its message: a change reruns only this."""
    if st.session_state.pop("rate_moved", False):
        st.rerun(scope="app")  # submitted, or another reply: the whole page follows
    item = ws.item(v, target)
    active_time.track(ws, v, target, item.state != "todo")
    form = rf.build(item, ws.guidelines(study_id), f"{v.id}:{study_id}:{target}", refused=refused.get(target, 0),
                    ack=acks.get(target, {}), show_anchors=bool(st.session_state.get("show_anchors")),
                    saved_at=st.session_state.get("saved_at"))
    forms.rating_form(form, _on_state, _on_submit, _on_step, key=FORM)
    if note := notes.get(target):
        getattr(st, note[0])(note[1])


item = ws.item(v, aid)
scale = item.scale
locked = item.state == "submitted"
ui.remember_in_url(study_id, aid)
g = ws.guidelines(study_id)
pos = order.index(aid)
marks = {"todo": "○ not started", "draft": "◐ in progress", "submitted": "● submitted"}
labels = {q.assignment_id: f"{q.label} — {marks[q.state]}{' · skipped' if q.flag == 'skip' else ''}"
          f"{' · ⚑ flagged' if q.flag == 'flag' else ''}" for q in queue}
head, nav_prev, nav_pick, nav_next = st.columns([4, 1.4, 4, 1.2], vertical_alignment="center")
head.markdown(f"**{ui.inert(item.study_name)}** · Transcript {item.position} of {item.total}  \n"
              f":small[{item.done} of {item.total} transcripts submitted]")


def _go(target: int) -> None:
    st.session_state["assignment_id"] = target


nav_prev.button("◀ Previous", key="prev", disabled=pos == 0, on_click=_go, args=(order[max(pos - 1, 0)],))
nav_pick.selectbox("Go to transcript", order, index=pos, format_func=lambda i: labels[i], key=f"pick_{aid}",
                   label_visibility="collapsed", on_change=lambda: _go(st.session_state[f"pick_{aid}"]))
nav_next.button("Next ▶", key="next", disabled=pos == len(order) - 1,
                on_click=_go, args=(order[min(pos + 1, len(order) - 1)],))
ui.show_flash()

with st.sidebar:
    with st.expander("Guidelines (full text)", icon=":material/menu_book:"):
        st.caption(f"Guidelines version {ui.inert(g.version)}")
        st.markdown(ui.inert(render_scale(g)))
        st.markdown(ui.inert(render_rubric(g)))


# Skip / flag / revise act in callbacks, which Streamlit runs before the page script.
def _unflag(target: int) -> None:
    try:
        ws.set_flag(v, target, None)
    except MindEvalError as exc:
        ui.flash("warning", exc.message)


def _flag(target: int) -> None:
    kind = st.session_state.get(f"flagkind_{target}", "flag")
    try:
        ws.set_flag(v, target, kind, st.session_state.get(f"flagreason_{target}", ""))
    except MindEvalError as exc:
        ui.flash("warning", exc.message)
        return
    ui.flash("info", "Skipped: the study admin sees your reason." if kind == "skip"
             else "Flagged: the study admin sees your reason.")
    if kind == "skip":
        nxt = ws.resume_target(v, study_id)
        st.session_state["assignment_id"] = nxt if nxt is not None else target


def _revise(target: int) -> None:
    try:
        ws.revise(v, target)
    except MindEvalError as exc:
        ui.flash("warning", exc.message)
    known.pop(target, None)  # the form opens on the revised version


left, right = st.columns([3, 2], gap="medium")
with left:
    if item.unit == "reply":  # the conversation up to the reply under rating, never a later turn
        shown_messages = uf.reply_messages(item)
        ui.transcript_pane(shown_messages, item.member_name, item.intake, key=f"t{aid}", end=True)
    else:
        ui.transcript_pane(item.messages, item.member_name, item.intake, key=f"t{aid}")

with right:
    ordinal = scale.kind == "ordinal"
    tools_anchor, tools_flag = st.columns([3, 2], vertical_alignment="center")
    tools_anchor.toggle("Show score anchors" if ordinal else "Show level anchors", key="show_anchors",
                        help=("What a 1, a 3 and a 6 look like" if ordinal else
                              "What each level looks like") + "; also under each item's ⓘ.")
    with tools_flag.popover("⚑ Skip / flag" if not item.flag else f"⚑ {'Skipped' if item.flag == 'skip' else 'Flagged'}",
                            use_container_width=True):
        if item.flag:
            st.markdown(f"You {'skipped' if item.flag == 'skip' else 'flagged'} this transcript: "
                        f"“{ui.inert(item.flag_reason)}”")
            st.button("Undo", key=f"unflag_{aid}", on_click=_unflag, args=(aid,))
        else:
            st.radio("What to do", ["flag", "skip"], key=f"flagkind_{aid}", horizontal=True,
                     format_func=lambda k: {"flag": "Flag a problem (keep rating)",
                                            "skip": "Skip this transcript"}[k])
            st.text_input("Reason (the study admin sees it)", key=f"flagreason_{aid}", max_chars=2000)
            st.button("Save", key=f"flagsave_{aid}", on_click=_flag, args=(aid,))
    if locked:
        st.success(f"Submitted (revision {item.revision}). To change it, choose **Revise this rating**; "
                   "your earlier submission stays in the history.")
        st.button("Revise this rating", key=f"revise_{aid}", on_click=_revise, args=(aid,))
    elif item.revision:
        st.info(f"You are revising submission {item.revision}. Submit again when you are done.")
    _form(aid)
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
