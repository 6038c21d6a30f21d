"""Rating at the judge's unit: a target's questions (item-level) or every clinician reply.

An item-level target (a judge axis with ``questions``, :mod:`mindeval.judging.rubric`) is rated
by answering its questions: only the questions the answers reach are asked, a gate
(``sets_not_relevant``) makes later dimensions not relevant, and each dimension's level follows
from the answers by the judge's own rule (:func:`mindeval.judging.items.answer_levels`). A
``unit: reply`` target is rated reply by reply: a level and the issue flags per clinician
reply, the conversation's level being its worst reply's
(:func:`mindeval.judging.replies.worst_value`).

Draft answers and reply ratings live in ``ann_rating_answers`` / ``ann_rating_replies``; every
save goes through the rating's version guard (:func:`.ratings.lock_draft`) and stores the
derived sub-axis values in the same transaction, so the values the rest of the platform reads
(results, review, exports) always agree with the answers. A submission freezes the answers
the walk reaches and every reply in its revision row.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

from pydantic import BaseModel, Field
from sqlalchemy import select

from mindeval.errors import MindEvalError
from mindeval.judging.items import MISSING, answer_levels
from mindeval.judging.replies import worst_value
from mindeval.judging.rubric import Question, gated, next_question, walk
from mindeval.records import ReplyRating
from mindeval.targets.axes import JudgeAxis
from mindeval.targets.guidelines import Guidelines

from .common import set_or_clear
from .models import ReplyDraft
from .tables import (
    AssignmentRow,
    ItemRow,
    RatingAnswerRow,
    RatingReplyRow,
    RatingRow,
    RatingValueRow,
)

UNITS = ("question", "reply")


def unit(g: Guidelines) -> str:
    """How a study of ``g`` is rated: ``question``, ``reply`` or ``conversation`` (levels per sub-axis)."""
    return g.judging_unit


def reply_turns(messages: list[Any]) -> list[int]:
    """The 0-based positions of the clinician's replies (the judge's ``turn``)."""
    roles = [m.get("role") if isinstance(m, dict) else ("assistant" if m.role == "clinician" else "user")
             for m in messages]
    return [i for i, r in enumerate(roles) if r == "assistant"]


def question(g: Guidelines, qid: str) -> tuple[JudgeAxis, Question]:
    """The dimension and question of a question id, or a clear refusal."""
    for ax in g.judge_axes:
        for q in ax.questions:
            if q.id == qid:
                return ax, q
    raise MindEvalError(f"'{qid}' is not a question of this study's target", field="question")


def is_derived(g: Guidelines, subaxis: str) -> bool:
    """Whether a sub-axis's value follows from answers or reply ratings (never chosen directly)."""
    if unit(g) == "reply":
        return True
    return unit(g) == "question" and bool(g.axis(g.subaxis(subaxis).axis).questions)


class QuestionStep(BaseModel):
    """One question shown on the form."""

    axis: str
    question: Question


class QuestionForm(BaseModel):
    """What an item-level form shows for some answers: the questions reached (in order, up to
    the first one not yet answered), each dimension's level so far, and the questions the
    answers made unreachable."""

    steps: list[QuestionStep] = Field(default_factory=list)
    levels: dict[str, str | None] = Field(default_factory=dict)  # axis -> level id, None (not relevant), "missing"
    gated: list[str] = Field(default_factory=list)  # dimensions a gate set not relevant
    moot: list[str] = Field(default_factory=list)  # question ids the answers no longer reach
    complete: bool = False


def question_form(g: Guidelines, answers: Mapping[str, str]) -> QuestionForm:
    """The form of an item-level target for ``answers`` (see :class:`QuestionForm`)."""
    out = QuestionForm(levels=answer_levels(g, answers))
    off = gated([(a.code, a.questions) for a in g.judge_axes], answers)
    stopped = False
    for ax in g.judge_axes:
        if not ax.questions:
            continue
        if stopped:
            continue
        if ax.code in off:
            out.gated.append(ax.code)
            out.moot += [q.id for q in ax.questions]
            continue
        path, ending = walk(ax.questions, answers)
        by_id = {q.id: q for q in ax.questions}
        out.steps += [QuestionStep(axis=ax.code, question=by_id[qid]) for qid in path]
        if ending == MISSING:
            i = 0 if not path else next_question(ax.questions, ax.questions.index(by_id[path[-1]]), answers[path[-1]])
            out.steps.append(QuestionStep(axis=ax.code, question=ax.questions[i]))  # type: ignore[index]
            stopped = True
        else:
            out.moot += [q.id for q in ax.questions if q.id not in path]
    out.complete = not stopped
    return out


def reached(g: Guidelines, answers: Mapping[str, str]) -> dict[str, str]:
    """The answers on the walked paths (what a submission keeps), in question order."""
    steps = question_form(g, answers).steps
    return {s.question.id: answers[s.question.id] for s in steps if s.question.id in answers}


def derived_values(g: Guidelines, na: int, answers: Mapping[str, str], replies: Mapping[int, ReplyDraft],
                   turns: list[int]) -> dict[str, int | None]:
    """The value of every derived sub-axis (``None``: not complete yet; ``na``: not relevant)."""
    out: dict[str, int | None] = {}
    if unit(g) == "question":
        levels = answer_levels(g, answers)
        for sub in g.human_subaxes:
            if g.axis(sub.axis).questions:
                lvl = levels[sub.axis]
                out[sub.id] = None if lvl == MISSING else na if lvl is None else g.value_of(lvl)
    elif unit(g) == "reply":
        rated = [r for t in turns if (r := replies.get(t)) is not None and r.level is not None]
        value = worst_value(g, [ReplyRating(turn=r.turn, level=r.level or "") for r in rated]) \
            if turns and len(rated) == len(turns) else None
        out = {sub.id: value for sub in g.human_subaxes}
    return out


def load(s, rating_id: int) -> tuple[dict[str, str], dict[int, ReplyDraft]]:
    """A rating's draft answers and reply ratings."""
    answers = dict(s.execute(select(RatingAnswerRow.question, RatingAnswerRow.answer)
                             .where(RatingAnswerRow.rating_id == rating_id)).all())
    replies = {r.turn: ReplyDraft(turn=r.turn, level=r.level, flags=dict(r.flags or {}))
               for r in s.scalars(select(RatingReplyRow).where(RatingReplyRow.rating_id == rating_id))}
    return answers, replies


def item_turns(s, rating_id: int) -> list[int]:
    """The clinician reply positions of a rating's item."""
    msgs = s.scalar(select(ItemRow.messages).join(AssignmentRow, AssignmentRow.item_id == ItemRow.id)
                    .join(RatingRow, RatingRow.assignment_id == AssignmentRow.id).where(RatingRow.id == rating_id))
    return reply_turns(list(msgs or []))


def store_derived(s, g: Guidelines, na: int, rating_id: int) -> None:
    """Write the derived sub-axis values of a rating from its stored answers and replies."""
    answers, replies = load(s, rating_id)
    turns = item_turns(s, rating_id) if unit(g) == "reply" else []
    for sub, value in derived_values(g, na, answers, replies, turns).items():
        row = s.scalar(select(RatingValueRow).where(RatingValueRow.rating_id == rating_id,
                                                    RatingValueRow.subaxis == sub))
        set_or_clear(s, row, "value", value, partial(RatingValueRow, rating_id=rating_id, subaxis=sub))
    s.flush()


def put_answer(s, g: Guidelines, rating_id: int, qid: str, answer: str | None) -> None:
    """Store (``None``: clear) one answer of a locked draft; the answer must be one the question takes."""
    _, q = question(g, qid)
    if answer is not None and answer not in q.answers:
        raise MindEvalError(f"'{answer}' is not an answer of {qid} ({', '.join(q.answers)})", field=qid)
    row = s.scalar(select(RatingAnswerRow).where(RatingAnswerRow.rating_id == rating_id,
                                                 RatingAnswerRow.question == qid))
    set_or_clear(s, row, "answer", answer, partial(RatingAnswerRow, rating_id=rating_id, question=qid))
    s.flush()


def check_reply(g: Guidelines, turns: list[int], turn: int, level: str | None, flag: str | None) -> None:
    """Refuse a reply rating the target does not take (a turn that is no clinician reply, an unknown level or flag)."""
    if turn not in turns:
        raise MindEvalError(f"turn {turn} is not a clinician reply of this transcript", field="turn")
    if level is not None and level not in [lv.id for lv in g.levels]:
        raise MindEvalError(f"'{level}' is not a level ({', '.join(lv.id for lv in g.levels)})", field="level")
    if flag is not None and flag not in [f.id for f in g.flags]:
        raise MindEvalError(f"'{flag}' is not an issue flag ({', '.join(f.id for f in g.flags)})", field="flags")


def put_reply(s, g: Guidelines, rating_id: int, turn: int, *, level: str | None = None, flag: str | None = None,
              on: bool = False) -> None:
    """Set one reply's level (when given) and/or one flag of a locked draft."""
    check_reply(g, item_turns(s, rating_id), turn, level, flag)
    row = s.scalar(select(RatingReplyRow).where(RatingReplyRow.rating_id == rating_id, RatingReplyRow.turn == turn))
    if row is None:
        row = RatingReplyRow(rating_id=rating_id, turn=turn, level=None, flags={})
        s.add(row)
    if level is not None:
        row.level = level
    if flag is not None:
        row.flags = {**(row.flags or {}), flag: bool(on)}
    s.flush()


def problems(g: Guidelines, answers: Mapping[str, str], replies: Mapping[int, ReplyDraft],
             turns: list[int]) -> list[str]:
    """What is missing at the unit before a submission, in plain words (empty for other targets)."""
    if unit(g) == "question":
        form = question_form(g, answers)
        if not form.complete:
            step = form.steps[-1]
            return [f"answer the questions of '{g.axis(step.axis).name}' (next: “{step.question.text}”)"]
    elif unit(g) == "reply":
        open_ = [n for n, t in enumerate(turns, start=1) if (replies.get(t) or ReplyDraft(turn=t)).level is None]
        if open_:
            return [f"rate every clinician reply ({len(open_)} of {len(turns)} not rated yet: "
                    f"reply {', '.join(map(str, open_[:8]))}{' …' if len(open_) > 8 else ''})"]
    return []


def frozen(g: Guidelines, answers: Mapping[str, str], replies: Mapping[int, ReplyDraft],
           turns: list[int]) -> tuple[dict[str, str] | None, list[dict[str, Any]] | None]:
    """What a submission keeps at the unit: the reached answers, or every reply (all flags, 0/1)."""
    if unit(g) == "question":
        return reached(g, answers), None
    if unit(g) == "reply":
        return None, [ReplyRating(turn=t, level=replies[t].level or "",
                                  flags={f.id: bool(replies[t].flags.get(f.id)) for f in g.flags}
                                  ).model_dump(mode="json") for t in turns]
    return None, None

