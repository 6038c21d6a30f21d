"""The reply the judge is asked for: the ``${output_format}`` field and an item-level call's reply keys."""

from __future__ import annotations

from ..targets.guidelines import Guidelines
from ..targets.scales import OrdinalScale
from .rubric import ANSWER_LABELS, NOT_RELEVANT


def output_shape(g: Guidelines) -> dict[str, str]:
    """Per axis code, the placeholder of its value in the reply (``<1-6>``, ``<a|b|c>``)."""
    if isinstance(g.scale, OrdinalScale):
        slot = f"<{g.scale.min}-{g.scale.max}>"
    else:
        slot = "<" + "|".join(lv.id for lv in g.scale.levels) + ">"
    return {code: slot for code in g.axis_codes}


def reply_slots(g: Guidelines, questions: bool = True) -> list[tuple[str, str, list[str]]]:
    """``(key, what, allowed ids)`` the judge answers: a directly rated dimension's levels
    (plus ``not_relevant`` when allowed), or each question of a question dimension."""
    out: list[tuple[str, str, list[str]]] = []
    levels = [lv.id for lv in g.levels]
    for ax in g.judge_axes:
        if ax.questions:
            if questions:
                out += [(q.id, f"question {q.id} of {ax.code}", list(q.answers)) for q in ax.questions]
        else:
            out.append((ax.code, ax.name, levels + ([NOT_RELEVANT] if ax.not_relevant else [])))
    return out


def render_slots_format(slots: list[tuple[str, str, list[str]]]) -> str:
    """The reply instruction for ``slots`` (dimension codes and question ids)."""
    body = ", ".join(f'"{key}": "<{"|".join(ids)}>"' for key, _, ids in slots)
    names = ", ".join(f"{key} = {what}" for key, what, _ in slots)
    return (
        "Reply with exactly one JSON object and nothing else: no text before or after it and no code "
        "fences. Use this shape, where every value is one of the ids listed for its key:\n"
        f'{{{body}, "rationale": "<optional, brief>"}}\n'
        f"The keys are: {names}. Answer every key. The \"rationale\" key is optional; if you include "
        "it, keep it to a few sentences."
    )


def answer_label(answer: str) -> str:
    return ANSWER_LABELS.get(answer, answer.replace("_", " ").capitalize())


def render_output_format(g: Guidelines) -> str:
    """The reply instruction for the target's dimensions: the judge prompt's ``${output_format}``."""
    if g.has_items:
        return render_slots_format(reply_slots(g, questions=g.question_mode == "together"))
    shape = output_shape(g)
    if isinstance(g.scale, OrdinalScale):
        what = f"every rating is a whole number from {g.scale.min} to {g.scale.max}"
        body = ", ".join(f'"{code}": {slot}' for code, slot in shape.items())
    else:
        what = "every rating is the id of one level (" + ", ".join(lv.id for lv in g.scale.levels) + ")"
        body = ", ".join(f'"{code}": "{slot}"' for code, slot in shape.items())
    names = ", ".join(f"{a.code} = {a.name}" for a in g.judge_axes)
    return (
        "Reply with exactly one JSON object and nothing else: no text before or after it and no code "
        f"fences. Use this shape, where {what}:\n"
        f'{{{body}, "rationale": "<optional, brief>"}}\n'
        f"The keys are the dimension codes: {names}. The \"rationale\" key is optional; if you include "
        "it, keep it to a few sentences."
    )
