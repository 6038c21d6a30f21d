"""The rating page's fields at the judge's unit (see :mod:`annotation_app.store.units`).

A form is a list of *fields*, each one widget: a sub-axis id (a level or score, as today),
``q-<question id>`` (an answer of an item-level target), ``r<turn>-level`` and
``r<turn>-f-<flag>`` (a reply's level and one of its issue flags, ``unit: reply``). The page
saves every field through :func:`save` and compares what it shows with :func:`stored_choice`;
the browser's keeper (assets/rate_keys.js) compares labels (:func:`stored_label`).
Field ids never hold a character a CSS class cannot (widget keys are ``<form key>_<field>``).
"""

from __future__ import annotations

from collections.abc import Mapping

import streamlit as st

from annotation_app import ui
from annotation_app.services import Workspace
from annotation_app.store.models import ItemView, ReplyDraft, Viewer
from annotation_app.store.units import question_form, reply_turns
from mindeval.judging.reply_format import answer_label
from mindeval.targets.guidelines import Guidelines

NA = "N/A"
FLAG_KEYS = "abcdefghilmopqrstuvwxyz"  # letters of the issue flags, in order (j/k move, n is N/A)
Q, R = "q-", "r"
URL_REPLY = "reply"  # ?reply=<assignment>.<position>: the reply on screen


def reply_field(turn: int, flag: str | None = None) -> str:
    return f"r{turn}-level" if flag is None else f"r{turn}-f-{flag}"


def parse(field: str) -> tuple[str, str, int | None]:
    """``(kind, id, turn)``: kind ``subaxis``, ``question``, ``level`` or ``flag``."""
    if field.startswith(Q):
        return "question", field[len(Q):], None
    if field.startswith(R) and "-" in field and field[1:field.index("-")].isdigit():
        turn = int(field[1:field.index("-")])
        rest = field[field.index("-") + 1:]
        return ("level", "", turn) if rest == "level" else ("flag", rest[2:], turn)
    return "subaxis", field, None


def _reply(item: ItemView, turn: int | None) -> ReplyDraft:
    return item.replies.get(int(turn or 0)) or ReplyDraft(turn=int(turn or 0))


def stored_choice(item: ItemView, field: str) -> object:
    """What the field's widget shows for the stored rating (``None``: nothing chosen)."""
    kind, fid, turn = parse(field)
    if kind == "question":
        return item.answers.get(fid)
    if kind == "level":
        return _reply(item, turn).level
    if kind == "flag":
        return bool(_reply(item, turn).flags.get(fid))
    value = item.values.get(field)
    return None if value is None else (NA if value == item.scale.na_value else value)


def stored_label(item: ItemView, g: Guidelines, field: str) -> str:
    """The stored choice as the form's label ("" when unset; a flag set is "yes")."""
    kind, _, _ = parse(field)
    choice = stored_choice(item, field)
    if kind == "flag":
        return "yes" if choice else ""
    if choice is None:
        return ""
    if kind == "question":
        return answer_label(str(choice))
    if kind == "level":
        return next((lv.label for lv in g.levels if lv.id == choice), str(choice))
    return item.scale.label(item.values.get(field))


def differs(item: ItemView, field: str, seen: object) -> bool:
    """Whether the page shows something to store for ``field`` (an unset radio never is)."""
    return seen is not None and seen != stored_choice(item, field)


def save(ws: Workspace, v: Viewer, item: ItemView, field: str, seen: object, version: int | None) -> int:
    """Store what the page shows for one field of ``item`` (as stored); returns the new version."""
    kind, fid, turn = parse(field)
    aid = item.assignment_id
    if kind == "question":
        return ws.save_answer(v, aid, fid, str(seen), version=version)
    if kind == "level":
        return ws.save_reply(v, aid, int(turn or 0), level=str(seen), version=version)
    if kind == "flag":
        return ws.save_reply(v, aid, int(turn or 0), flag=fid, on=bool(seen), version=version)
    value = item.scale.na_value if seen == NA else int(seen)  # type: ignore[call-overload]
    return ws.save_value(v, aid, field, value, version=version)


def field_name(g: Guidelines, field: str) -> str:
    """A field as the annotator knows it (for messages)."""
    kind, fid, turn = parse(field)
    if kind == "question":
        return next((q.text for a in g.judge_axes for q in a.questions if q.id == fid), fid)
    if kind == "level":
        return f"the level of the reply at turn {int(turn or 0) + 1}"
    if kind == "flag":
        label = next((f.label for f in g.flags if f.id == fid), fid)
        return f"“{label}” on the reply at turn {int(turn or 0) + 1}"
    return next((s.name for s in g.human_subaxes if s.id == field), field)


def shown_answers(item: ItemView, g: Guidelines, key: str) -> dict[str, str]:
    """The answers the page shows: a question's widget state, else its stored answer."""
    out: dict[str, str] = {}
    for ax in g.judge_axes:
        for q in ax.questions:
            w = f"{key}_{Q}{q.id}"
            a = st.session_state[w] if w in st.session_state else item.answers.get(q.id)
            if a is not None:
                out[q.id] = str(a)
    return out


def reply_pos(item: ItemView) -> int:
    """The reply on screen (an index into the transcript's clinician replies, kept per transcript)."""
    turns = reply_turns(item.messages)
    k = f"reply_pos_{item.assignment_id}"
    if k not in st.session_state:  # a reload comes back to the reply in the URL (its kept changes with it)
        aid, _, pos = str(st.query_params.get(URL_REPLY, "")).partition(".")
        open_ = [n for n, t in enumerate(turns) if _reply(item, t).level is None]
        st.session_state[k] = int(pos) if aid == str(item.assignment_id) and pos.isdigit() else (
            open_[0] if open_ else 0)
    pos = max(0, min(int(st.session_state[k]), len(turns) - 1))
    if st.query_params.get(URL_REPLY) != f"{item.assignment_id}.{pos}":
        st.query_params[URL_REPLY] = f"{item.assignment_id}.{pos}"
    return pos


def fields(item: ItemView, g: Guidelines, key: str) -> list[str]:
    """The fields the form shows now, in order."""
    if item.unit == "question":
        direct = [s.id for s in item.subaxes if not g.axis(s.axis).questions]
        return direct + [Q + s.question.id for s in question_form(g, shown_answers(item, g, key)).steps]
    if item.unit == "reply":
        turns = reply_turns(item.messages)
        if not turns:
            return []
        turn = turns[reply_pos(item)]
        return [reply_field(turn)] + [reply_field(turn, f.id) for f in g.flags]
    return [s.id for s in item.subaxes]


def known_fields(item: ItemView, g: Guidelines) -> list[str]:
    """Every field the form may show for this transcript."""
    if item.unit == "question":
        return [s.id for s in item.subaxes if not g.axis(s.axis).questions] + [
            Q + q.id for a in g.judge_axes for q in a.questions]
    if item.unit == "reply":
        return [f for t in reply_turns(item.messages) for f in [reply_field(t)] + [reply_field(t, x.id) for x in g.flags]]
    return [s.id for s in item.subaxes]


def moot(item: ItemView, g: Guidelines) -> list[str]:
    """Fields the stored answers no longer reach (a change kept for one is dropped)."""
    return [Q + qid for qid in question_form(g, item.answers).moot] if item.unit == "question" else []


def complete(item: ItemView, g: Guidelines) -> bool:
    """Whether every stored answer or reply the form asks for is there."""
    if item.unit == "question":
        return question_form(g, item.answers).complete
    if item.unit == "reply":
        return all(_reply(item, t).level is not None for t in reply_turns(item.messages))
    return len(item.values) == len(item.subaxes)


def question_pane(item: ItemView, g: Guidelines, key: str, locked: bool, show_anchors: bool) -> None:
    """The item-level form: each dimension's questions as the answers reach them, the level that
    follows, and the directly rated sub-axes."""
    answers = shown_answers(item, g, key)
    form = question_form(g, answers)
    subs = {s.axis: s for s in item.subaxes}
    for ax in g.judge_axes:
        sub = subs.get(ax.code)
        if not ax.questions:
            if sub is not None:
                level_radio(item, sub, key, locked, show_anchors)
            continue
        steps = [s for s in form.steps if s.axis == ax.code]
        if not steps and ax.code not in form.gated:
            continue
        level = form.levels.get(ax.code)
        shown = ("not relevant" if level is None else "—" if level == "missing"
                 else next((lv.label for lv in g.levels if lv.id == level), level))
        st.markdown(f"**{ui.inert(ax.name)}** · :small[level: {ui.inert(shown)}]")
        if ax.code in form.gated:
            st.caption("Not relevant: an earlier answer says so.")
        for s in steps:
            q = s.question
            st.radio(ui.inert(q.text), list(q.answers), index=None, horizontal=True, key=f"{key}_{Q}{q.id}",
                     disabled=locked, format_func=lambda a: ui.inert(answer_label(a)))


def level_radio(item: ItemView, sub, key: str, locked: bool, show_anchors: bool) -> None:
    """One directly rated sub-axis (levels or scores, N/A where allowed)."""
    scale = item.scale
    options: list[object] = [lv.value for lv in scale.levels] + ([NA] if sub.allow_na else [])
    anchors = "  \n".join(f"**{ui.inert(s)}:** {ui.inert(t)}" for s, t in sub.anchors.items())
    st.radio(sub.name, options, index=None, horizontal=True, key=f"{key}_{sub.id}", disabled=locked,
             help=anchors, format_func=lambda o: NA if o == NA else ui.inert(scale.label(o)))
    if show_anchors:
        st.caption(anchors)


def _step(aid: int, pos: int) -> None:
    st.session_state[f"reply_pos_{aid}"] = pos


def reply_pane(item: ItemView, g: Guidelines, key: str, locked: bool) -> None:
    """The per-reply form: where the annotator is, a level and the issue flags of this reply."""
    turns = reply_turns(item.messages)
    if not turns:
        st.warning("This transcript has no clinician reply to rate.")
        return
    pos = reply_pos(item)
    turn = turns[pos]
    rated = sum(1 for t in turns if _reply(item, t).level is not None)
    prev, where, nxt = st.columns([1.3, 3, 1.1], vertical_alignment="center")
    prev.button("◀ Reply", key="reply-prev", disabled=pos == 0, on_click=_step, args=(item.assignment_id, pos - 1))
    nxt.button("Reply ▶", key="reply-next", disabled=pos == len(turns) - 1, on_click=_step,
               args=(item.assignment_id, pos + 1))
    where.markdown(f"**Reply {pos + 1} of {len(turns)}** (turn {turn + 1})  \n:small[{rated} of {len(turns)} rated]")
    axis = g.judge_axes[0]
    st.radio(ui.inert(axis.name), [lv.id for lv in g.levels], index=None, horizontal=True,
             key=f"{key}_{reply_field(turn)}", disabled=locked,
             format_func=lambda i: ui.inert(next(lv.label for lv in g.levels if lv.id == i)),
             help="  \n".join(f"**{ui.inert(lv.label)}:** {ui.inert(lv.description or '')}" for lv in g.levels))
    st.markdown("**Issues in this reply**")
    for n, f in enumerate(g.flags):
        st.checkbox(f"[{FLAG_KEYS[n]}] {ui.inert(f.label)}", key=f"{key}_{reply_field(turn, f.id)}", disabled=locked,
                    help=ui.inert(f.description or ""))


def reply_messages(item: ItemView) -> list:
    """The transcript up to and including the reply on screen (never a later turn)."""
    turns = reply_turns(item.messages)
    return item.messages[: turns[reply_pos(item)] + 1] if turns else item.messages


def flag_letters(g: Guidelines) -> list[tuple[str, str]]:
    return [(FLAG_KEYS[n], f.label) for n, f in enumerate(g.flags)]


def init_widget(item: ItemView, wkey: str, field: str, state: Mapping) -> bool:
    """Put the stored choice on a widget shown for the first time; ``True`` when it was already there."""
    if wkey in state:
        return True
    choice = stored_choice(item, field)
    if choice is not None:
        st.session_state[wkey] = choice
    return False
