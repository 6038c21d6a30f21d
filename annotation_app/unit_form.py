"""The rating page's fields at the judge's unit (see :mod:`annotation_app.store.units`).

A form is a list of *fields*: a sub-axis id (a level or score), ``q-<question id>`` (an answer
of an item-level target), ``r<turn>-level`` and ``r<turn>-f-<flag>`` (a reply's level and one of
its issue flags, ``unit: reply``). Every field is saved through :func:`save`; the form shows and
compares labels (:func:`stored_label`; see :mod:`annotation_app.rate_form`).
"""

from __future__ import annotations

import streamlit as st

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



def reply_messages(item: ItemView) -> list:
    """The transcript up to and including the reply on screen (never a later turn)."""
    turns = reply_turns(item.messages)
    return item.messages[: turns[reply_pos(item)] + 1] if turns else item.messages


def flag_letters(g: Guidelines) -> list[tuple[str, str]]:
    return [(FLAG_KEYS[n], f.label) for n, f in enumerate(g.flags)]


