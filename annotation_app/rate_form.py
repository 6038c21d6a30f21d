"""The rating form's contents (what :func:`annotation_app.forms.rating_form` shows) and the
application of what it sends, at the judge's unit (see :mod:`annotation_app.unit_form`).

The form shows *fields* (a sub-axis, a question, a reply's level or one of its flags) by their
labels; the browser sends its whole state as labels per field, and :func:`apply` stores every
field that differs from what is stored, at the version the page last saw (an older one than
stored is refused as :class:`~annotation_app.services.Stale`).
"""

from __future__ import annotations

from annotation_app import unit_form as uf
from annotation_app.forms import RateAction, RateAxis, RateForm
from annotation_app.services import Workspace
from annotation_app.store.models import ItemView, Viewer
from annotation_app.store.units import question_form, reply_turns
from mindeval.judging.reply_format import answer_label
from mindeval.targets.guidelines import Guidelines

NA = uf.NA
TEXTS = {"justification": "Justification", "safety_note": "Safety concerns"}

def choices(item: ItemView, g: Guidelines, field: str) -> dict[str, object]:
    """Label the form shows → what :func:`annotation_app.unit_form.save` stores for it."""
    kind, fid, _ = uf.parse(field)
    if kind == "question":
        q = next((q for a in g.judge_axes for q in a.questions if q.id == fid), None)
        return {answer_label(a): a for a in q.answers} if q else {}
    if kind == "level":
        return {lv.label: lv.id for lv in g.levels}
    if kind == "flag":
        return {"yes": True, "": False}
    sub = next((s for s in item.subaxes if s.id == field), None)
    if sub is None:
        return {}
    out: dict[str, object] = {item.scale.label(lv.value): lv.value for lv in item.scale.levels}
    if sub.allow_na:
        out[NA] = NA
    return out


def _subaxis(item: ItemView, sub, heading: str) -> RateAxis:
    return RateAxis(id=sub.id, name=sub.name, heading=heading, options=list(choices(item, None, sub.id)),
                    anchors=list(sub.anchors.items()))


def _conversation(item: ItemView) -> list[RateAxis]:
    return [_subaxis(item, s, s.axis_name if s.name != s.axis_name else "") for s in item.subaxes]


def _questions(item: ItemView, g: Guidelines) -> list[RateAxis]:
    """Each dimension's questions as the stored answers reach them, headed by the level that
    follows; the directly rated sub-axes in their place."""
    form = question_form(g, item.answers)
    subs = {s.axis: s for s in item.subaxes}
    out: list[RateAxis] = []
    for ax in g.judge_axes:
        if not ax.questions:
            if ax.code in subs:
                out.append(_subaxis(item, subs[ax.code], ""))
            continue
        steps = [s for s in form.steps if s.axis == ax.code]
        if not steps and ax.code not in form.gated:
            continue
        level = form.levels.get(ax.code)
        shown = ("not relevant" if level is None else "—" if level == "missing"
                 else next((lv.label for lv in g.levels if lv.id == level), level))
        heading = f"{ax.name} · level: {shown}"
        if ax.code in form.gated:
            out.append(RateAxis(id=f"note-{ax.code}", name="Not relevant: an earlier answer says so.",
                                heading=heading, options=[], kind="note"))
        for s in steps:
            out.append(RateAxis(id=uf.Q + s.question.id, name=s.question.text, heading=heading,
                                options=[answer_label(a) for a in s.question.answers]))
    return out


def _reply(item: ItemView, g: Guidelines, pos: int) -> list[RateAxis]:
    turn = reply_turns(item.messages)[pos]
    axis = g.judge_axes[0]
    out = [RateAxis(id=uf.reply_field(turn), name=axis.name, options=[lv.label for lv in g.levels],
                    anchors=[(lv.label, lv.description or "") for lv in g.levels])]
    for n, f in enumerate(g.flags):
        out.append(RateAxis(id=uf.reply_field(turn, f.id), name=f"[{uf.FLAG_KEYS[n]}] {f.label}",
                            heading="Issues in this reply", options=["yes"], kind="check",
                            anchors=[("", f.description)] if f.description else []))
    return out


def legend(item: ItemView, g: Guidelines) -> str:
    """The keys of this form, one line."""
    if item.unit == "question":
        keys = "1 = Yes · 2 = No · 3 or N = Not relevant (where offered), then the next question · ↑/↓ move"
    elif item.unit == "reply":
        keys = (" · ".join(f"{n} = {lv.label}" for n, lv in enumerate(g.levels, start=1)) + " · "
                + " · ".join(f"{k.upper()} = {label}" for k, label in uf.flag_letters(g)) + " · ←/→ previous/next reply")
    elif item.scale.kind == "ordinal":
        keys = "1–6 score the highlighted item and move on · N = N/A · ↑/↓ move"
    else:
        keys = (" · ".join(f"{n} = {lv.label}" for n, lv in enumerate(item.scale.levels, start=1))
                + " (then the next item) · N = N/A · ↑/↓ move")
    return f"Keys: {keys} · Ctrl+Enter submits"


def saved_text(item: ItemView, saved_at: str | None) -> str:
    """The save line shown while the form shows what is stored."""
    at = f" at {saved_at}" if saved_at else ""
    if item.unit == "question":
        return f"✓ {len(item.answers)} answers saved{at}." if item.answers else "No answers saved yet."
    if item.unit == "reply":
        n = sum(1 for r in item.replies.values() if r.level is not None)
        return (f"✓ {n} of {len(reply_turns(item.messages))} replies rated{at}." if item.replies
                else "No replies rated yet.")
    n_saved, n_all = len(item.values), len(item.subaxes)
    return f"✓ {n_saved} of {n_all} scores saved{at}." if n_saved else f"No scores saved yet (0 of {n_all})."


def build(item: ItemView, g: Guidelines, owner: str, **shown) -> RateForm:
    """The form for ``item`` as stored; ``shown``: the page's part (refused, ack, show_anchors, saved_at)."""
    reply = None
    if item.unit == "question":
        axes = _questions(item, g)
    elif item.unit == "reply":
        turns = reply_turns(item.messages)
        axes = []
        if turns:
            pos = uf.reply_pos(item)
            axes = _reply(item, g, pos)
            rated = sum(1 for t in turns if (item.replies.get(t) and item.replies[t].level is not None))
            reply = {"pos": pos, "n": len(turns), "turn": turns[pos] + 1, "rated": rated}
    else:
        axes = _conversation(item)
    return RateForm(
        owner=owner, item=item.assignment_id, unit=item.unit, locked=item.state == "submitted", axes=axes,
        stored={f: uf.stored_label(item, g, f) for f in uf.known_fields(item, g)},
        texts={t: getattr(item, t) for t in TEXTS}, saved_text=saved_text(item, shown.pop("saved_at", None)),
        version=item.version, moot=uf.moot(item, g), legend=legend(item, g), reply=reply, **shown)


def base_version(ws: Workspace, v: Viewer, act: RateAction) -> int | None:
    """The version ``act`` (from a tab this session has not written for) is based on: the version
    its form showed, moved past the versions that the same tab's states up to this one wrote since
    (recorded in the database: a reload right after clicks, whose page before's last state landed
    after the new page showed the rating, or a state re-sent to another process after its own
    died). A version another tab wrote, or one nobody recorded, stops it."""
    if act.version is None:
        return None
    base = act.version
    for first, last, tab, seq in ws.form_writes(v, act.item, after=base):
        if first != base + 1 or tab != act.tab or seq > act.seq:
            break
        base = last
    return base


def apply(ws: Workspace, v: Viewer, act: RateAction, version: int | None) -> tuple[int | None, int]:
    """Store every field and text of ``act`` that differs from what is stored, in the form's
    order, at ``version``; returns the new version and the number of writes. Raises ``Stale``."""
    item = ws.item(v, act.item)
    if item.state == "submitted":
        return version, 0
    done: list[int] = []  # the versions written, recorded as this state's (also when refused midway)
    try:
        version = _store(ws, v, act, item, version, done)
    finally:
        if done:
            ws.form_wrote(v, act.item, (done[0], done[-1]), act.tab, act.seq)
    return version, len(done)


def _store(ws: Workspace, v: Viewer, act: RateAction, item: ItemView, version: int | None, done: list[int]) -> int | None:
    g = ws.guidelines(item.study_id)
    for field in uf.known_fields(item, g):
        label = act.values.get(field)
        if label is None or label == uf.stored_label(item, g, field) or field in uf.moot(item, g):
            continue
        if label == "" and uf.parse(field)[0] != "flag":
            continue  # a choice is never taken back to none
        options = choices(item, g, field)
        if label not in options:
            continue
        version = uf.save(ws, v, item, field, options[label], version)
        done.append(version)
        if item.unit == "question":
            item = ws.item(v, act.item)  # an answer changes which questions later fields reach
    for t in TEXTS:
        text = act.texts.get(t)
        if text is not None and text != getattr(item, t):
            version = ws.save_text(v, act.item, **{t: text}, version=version)
            done.append(version)
    return version


def stale_changes(item: ItemView, g: Guidelines, act: RateAction) -> list[tuple[str, str, str, bool]]:
    """What the refused form showed that differs from what is stored now: ``(field name, stored
    now, shown, is a text)`` each."""
    out = []
    for t, name in TEXTS.items():
        seen = act.texts.get(t)
        if seen is not None and seen != getattr(item, t):
            out.append((name, getattr(item, t)[:200], seen, True))
    for field, seen in act.values.items():
        now = uf.stored_label(item, g, field)
        if seen and seen != now:
            out.append((uf.field_name(g, field), now, seen, False))
    return out
