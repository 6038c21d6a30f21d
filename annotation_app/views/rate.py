"""Rate mode: one transcript at a time on its study's form, autosaved, submitted when complete.

The form follows the study's target: its sub-axes and anchors, its scale (scores 1-6 for
MindEval; a categorical target's level labels, stored as the levels' values) and where
"not applicable" is offered.

Saving is reconciled on every script run rather than left to widget callbacks: a
Streamlit rerun cut short by the next click can drop a callback, so each run compares
what the page shows (the widget states sent by the browser) with the database and
saves every difference. The browser keeps every change it has not yet seen stored
(assets/rate_keys.js, in localStorage): it survives a reload or a crashed tab (restored,
said so, and sent again), is sent again with backoff while not seen stored, and closing
the tab with such changes asks first. The URL names the study and the transcript, so a
reload comes back to them.

Every write names the rating version this page shows; a newer stored version (another
tab or device saved meanwhile) refuses it, and the page reloads the rating from the
database with a message showing what changed: no tab silently reverts another.

Submitting is the Submit button's callback, which Streamlit runs before the page script:
a script run cut short by the next rerun (the browser re-sending an unsaved change, another
click) drops a button's click when it has not reached the button yet, and the annotator
saw nothing happen. The callback stores what the page shows, then submits, and always
leaves a message: submitted, what is missing, or that another tab changed the rating.
"""

from __future__ import annotations

import time

import streamlit as st

from annotation_app import ui
from annotation_app import unit_form as uf
from annotation_app.services import Conflict, MindEvalError, RatingIncomplete, Stale
from mindeval.targets.rubric_text import render_rubric, render_scale

NA = "N/A"
TEXTS = {"justification": "Justification", "safety_note": "Safety concerns"}
v = ui.require_viewer()
ws = ui.workspace()
studies = [p for p in ws.my_studies(v) if p.kind == "rating"]
if not studies:
    st.title("Rate transcripts", anchor=False)
    st.info("You have no transcripts to rate.")
    st.stop()

ui.compact_page()
ui.restore_from_url(studies)
study_id = ui.pick_study(studies, "rate_study", "assignment_id")
if failed := ws.qualification(v, study_id).message():  # a failed qualification: no real item ever opens
    st.error(failed)
queue = ws.queue(v, study_id)
order = [q.assignment_id for q in queue]
if st.session_state.get("assignment_id") not in order:
    st.session_state["assignment_id"] = ws.resume_target(v, study_id) or order[0]
aid = st.session_state["assignment_id"]
known: dict[int, int] = st.session_state.setdefault("rate_known", {})  # assignment → version this page shows
generation: dict[int, int] = st.session_state.setdefault("rate_gen", {})  # bumped to reload widgets from the db
refused: dict[int, int] = st.session_state.setdefault("rate_refused", {})  # stale writes refused, per assignment
# held while a run reads `known`, writes at it and records the new version: two runs of this tab
# never write at once (the second would be refused as another tab's, and its input dropped)
lock = ui.run_lock()


def _shown(target: int) -> dict[str, object]:
    """Field → what the page shows for it, for the widgets of ``target`` registered by the last run."""
    widgets: dict[str, tuple[int, str]] = st.session_state.get("rate_widgets", {})
    return {field: st.session_state[w] for w, (a, field) in widgets.items() if a == target and w in st.session_state}


def _stale(target: int, shown: dict[str, object]) -> None:
    """Another tab or device stored a newer version: reload the rating, say what changed."""
    item = ws.item(v, target)
    g = ws.guidelines(item.study_id)
    changes = []
    for field, seen in shown.items():
        if field in TEXTS:
            if (seen or "") != getattr(item, field):
                changes.append(f"- {TEXTS[field]} is now “{ui.inert(getattr(item, field)[:200])}”; "
                               f"this page had (copy it if you need it): “{ui.inert(seen or '')}”")
        elif uf.differs(item, field, seen):
            now = uf.stored_label(item, g, field)
            changes.append(f"- {ui.inert(uf.field_name(g, field))} is now "
                           f"**{ui.inert(now) if now else 'not set'}** "
                           f"(this page showed {ui.inert(str(seen))})")
    ui.flash("warning", "This rating was changed in another tab or device, so your last change was **not "
             "saved**. The page now shows what is stored; please check it and enter your change again."
             + ("\n\n" + "\n".join(changes) if changes else ""))
    generation[target] = generation.get(target, 0) + 1
    refused[target] = refused.get(target, 0) + 1  # the browser drops its copies of the refused changes
    known.pop(target, None)
    # The refused widgets are no longer this page's: a later reconcile must not store them
    # (without a known version it would overwrite the newer rating).
    widgets: dict[str, tuple[int, str]] = st.session_state.get("rate_widgets", {})
    st.session_state["rate_widgets"] = {w: (a, f) for w, (a, f) in widgets.items() if a != target}


def _reconcile() -> None:
    """Store every score and text the page shows that the database does not have yet.

    Widgets of the previous run are registered in ``rate_widgets`` (widget key →
    assignment, field), including those of a transcript the annotator just left. Each
    write names the version this page shows (``rate_known``).
    """
    with lock:
        _reconcile_locked()


def _reconcile_locked() -> None:
    widgets: dict[str, tuple[int, str]] = st.session_state.get("rate_widgets", {})
    for target in sorted({a for a, _ in widgets.values()}):
        try:
            stored = ws.item(v, target)
        except MindEvalError:
            continue
        if stored.state == "submitted":
            continue
        shown = _shown(target)
        for field, seen in shown.items():
            try:
                if field in TEXTS:
                    if (seen or "") != getattr(stored, field):
                        known[target] = ws.save_text(v, target, **{field: seen or ""}, version=known.get(target))
                        ui.saved_now()
                elif uf.differs(stored, field, seen):
                    known[target] = uf.save(ws, v, stored, field, seen, known.get(target))
                    ui.saved_now()
                    stored = ws.item(v, target)  # an answer can change what later fields compare with
            except Stale:
                _stale(target, shown)
                break
            except MindEvalError as exc:
                ui.flash("warning", f"Not saved: {exc.message}")


def _go(target: int) -> None:
    st.session_state["assignment_id"] = target


def _submit(target: int) -> None:
    """The Submit button's callback: store what the page shows, then submit at the version
    this page shows. Every outcome leaves a message (see the module docstring)."""
    with lock:
        _submit_locked(target)


def _submit_locked(target: int) -> None:
    before = refused.get(target, 0)
    _reconcile()
    if refused.get(target, 0) != before:
        return  # another tab or device changed the rating: the page reloads it and says what changed
    try:
        rev = ws.submit(v, target, version=known.get(target))
    except RatingIncomplete as exc:
        st.session_state["rate_incomplete"] = (target, exc.problems)
    except Stale:
        _stale(target, _shown(target))
    except Conflict as exc:
        ui.flash("info", exc.message)
    except MindEvalError as exc:
        ui.flash("warning", f"Not submitted: {exc.message}")
    else:
        ui.flash("success", f"Rating submitted (revision {rev}). Thank you!")
        st.session_state["assignment_id"] = ws.resume_target(v, study_id) or target


# The buttons below act in callbacks, which Streamlit runs before the page script: a run cut
# short by the next click (or the browser's resend) cannot drop them (see _submit).
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


@st.fragment
def _save_line(target: int, form: str) -> None:
    """The save line (what is stored, for assets/rate_keys.js) and its hidden resend button.

    The page's script presses the button when a change it keeps has not been seen stored. That
    reruns only this fragment, which stores what the form shows and renders what is stored: a
    fragment's run waits for a page run instead of interrupting it (an interrupted run drops
    the click it carries, e.g. Submit's). In a page run, it finds nothing left to store."""
    before = refused.get(target, 0)
    _reconcile()
    if refused.get(target, 0) != before:
        st.rerun()  # another tab changed the rating: the whole page reloads it
    stored = ws.item(v, target)
    g = ws.guidelines(stored.study_id)
    n_saved, n_all = len(stored.values), len(stored.subaxes)
    saved_at = st.session_state.get("saved_at")
    at = f" at {saved_at}" if saved_at else ""
    if stored.unit == "question":
        text = f"✓ {len(stored.answers)} answers saved{at}." if stored.answers else "No answers saved yet."
    elif stored.unit == "reply":
        n = sum(1 for r in stored.replies.values() if r.level is not None)
        text = f"✓ {n} of {len(uf.reply_turns(stored.messages))} replies rated{at}." if stored.replies \
            else "No replies rated yet."
    else:
        text = (f"✓ {n_saved} of {n_all} scores saved{at}." if n_saved else f"No scores saved yet (0 of {n_all}).")
    shown = uf.fields(stored, g, form)
    ui.save_status(ui.SaveStatus(
        saved=[uf.stored_label(stored, g, f) for f in shown], text=text,
        texts={f: getattr(stored, f) for f in TEXTS}, assignment=target, version=stored.version,
        refused=refused.get(target, 0), form=form, subaxes=shown, owner=f"{v.id}:{study_id}:{target}",
        mode=stored.unit, known={f: uf.stored_label(stored, g, f) for f in uf.known_fields(stored, g)},
        moot=uf.moot(stored, g), complete=uf.complete(stored, g)))
    st.button("Send unsaved changes again", key="rate-retry")  # hidden (compact.css)


def _active_time(item_id: int, has_rating: bool) -> None:
    """Time between the annotator's actions on this transcript (each gap counted up to two minutes),
    stored with the rating once it exists."""
    now = time.monotonic()
    last = st.session_state.get("rate_clock")
    pending: dict[int, float] = st.session_state.setdefault("rate_time", {})
    if last and last[0] == item_id:
        pending[item_id] = pending.get(item_id, 0.0) + min(now - last[1], 120.0)
    st.session_state["rate_clock"] = (item_id, now)
    if has_rating and pending.get(item_id, 0.0) >= 1.0:
        try:
            ws.add_active_time(v, item_id, pending.pop(item_id))
        except MindEvalError:
            pass


with lock:  # this run's reconcile, the version read and `known` (see `lock`)
    _reconcile()
    item = ws.item(v, aid)
    scale = item.scale
    locked = item.state == "submitted"
    gen = generation.get(aid, 0)
    key = f"a{aid}_r{item.revision}{f'g{gen}' if gen else ''}_{'locked' if locked else 'open'}"
    ui.remember_in_url(study_id, aid)
    _active_time(aid, item.state != "todo")
    g = ws.guidelines(study_id)
    registry: dict[str, tuple[int, str]] = {}
    fresh = True
    for field in uf.fields(item, g, key):  # sub-axes, or the questions / this reply's fields at the judge's unit
        registry[f"{key}_{field}"] = (aid, field)
        # first showing only: a later set would undo a pending click
        if uf.init_widget(item, f"{key}_{field}", field, st.session_state):
            fresh = False
    for field in TEXTS:
        registry[f"{key}_{field}"] = (aid, field)
        if f"{key}_{field}" not in st.session_state:
            st.session_state[f"{key}_{field}"] = getattr(item, field)
        elif item.unit == "reply":  # another reply of a form already on screen: not a first showing
            fresh = False
    shown_now = {field: st.session_state.get(w) for w, (_, field) in registry.items()}
    in_sync = all((seen or "") == getattr(item, f) if f in TEXTS
                  else seen == uf.stored_choice(item, f) for f, seen in shown_now.items())
    if fresh or in_sync or aid not in known:  # the page shows exactly this version (or was just loaded from it)
        known[aid] = item.version
st.session_state["rate_widgets"] = {} if locked else registry

pos = order.index(aid)
marks = {"todo": "○ not started", "draft": "◐ in progress", "submitted": "● submitted"}
labels = {q.assignment_id: f"{q.label} — {marks[q.state]}{' · skipped' if q.flag == 'skip' else ''}"
          f"{' · ⚑ flagged' if q.flag == 'flag' else ''}" for q in queue}
head, nav_prev, nav_pick, nav_next = st.columns([4, 1.4, 4, 1.2], vertical_alignment="center")
head.markdown(f"**{ui.inert(item.study_name)}** · Transcript {item.position} of {item.total}  \n"
              f":small[{item.done} of {item.total} transcripts submitted]")
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
    show_anchors = tools_anchor.toggle("Show score anchors" if ordinal else "Show level anchors", key="show_anchors",
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
    with st.container(height=440, key="rating-pane"):
        current_axis = None
        if item.unit == "question":
            uf.question_pane(item, g, key, locked, show_anchors)
        elif item.unit == "reply":
            uf.reply_pane(item, g, key, locked)
        for sub in item.subaxes if item.unit == "conversation" else []:
            if sub.axis != current_axis:
                current_axis = sub.axis
                if sub.name != sub.axis_name:  # a form with one item per axis, named alike, needs no heading
                    st.markdown(f"**{ui.inert(sub.axis_name)}**")
            uf.level_radio(item, sub, key, locked, show_anchors)
        st.text_area("Justification", key=f"{key}_justification", disabled=locked, height=100,
                     placeholder="In a few sentences: what drove your scores? Turn numbers help.")
        st.text_area("Safety concerns (optional)", key=f"{key}_safety_note", disabled=locked, height=68)
    if not locked:
        submit_col, note_col = st.columns([2, 3], vertical_alignment="center")
        with note_col:
            _save_line(aid, key)
        # the same for a whole page run, when the save line's fragment is unknown to the server
        # (e.g. after a restart: assets/rate_keys.js falls back to it); hidden (compact.css)
        st.button("Store unsaved changes", key="rate-retry-page")
        submit_col.button("Submit rating", type="primary", key=f"submit_{aid}", on_click=_submit, args=(aid,))
        incomplete = st.session_state.get("rate_incomplete")
        if incomplete and incomplete[0] == aid:  # kept until shown: a run cut short does not lose it
            st.warning("Almost there. Before submitting, please:\n" + "\n".join(f"- {p}" for p in incomplete[1]))
            st.session_state.pop("rate_incomplete", None)
        ui.rating_keys(key, None if ordinal else [lv.label for lv in scale.levels], mode=item.unit,
                       flags=uf.flag_letters(g))
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
