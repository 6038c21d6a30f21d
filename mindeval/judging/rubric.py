"""Item-level rubrics: a dimension scored from questions, and judge-side "not relevant".

A judge axis of a categorical target may carry ``questions``. Each question has an id,
a text, its answer options (``yes``/``no`` by default; ``not_relevant`` or any small
set of snake_case ids), an optional ``severity`` per answer (a level id of the scale)
and ``next`` rules per answer: another question id further down the list, ``end``
(stop asking) or ``not_relevant`` (the dimension does not apply to this conversation).
Without a rule the next question in the list follows; after the last, ``end``.

The dimension's level is derived by its ``rule`` (:class:`LevelRule`):
``worst_severity`` -- the worst (lowest-valued) severity among the answers on the
path, ``otherwise`` (default: the best level) when none fires, and no level ("not
relevant", stored as ``None``) when the path says so.

A question may carry ``sets_not_relevant: [CODE, ...]``: when an answer to it ends its own
dimension as not relevant, the listed later question dimensions are not relevant too and are
never asked (a gate asked once: :func:`gated`).

An axis with ``not_relevant: true`` lets the judge answer ``not_relevant`` instead of
a level (stored as ``None``: excluded from that dimension's denominators, counted).

The judge is asked either all questions in one call (``question_mode: together``,
answers per question id, the path walked afterwards) or one question per call,
following the branches (``question_mode: one_by_one``); the choice is the
guidelines' (recorded in the run's ``config.json`` target block).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..config import SNAKE_CASE

NOT_RELEVANT = "not_relevant"
END = "end"
DEFAULT_ANSWERS: tuple[str, ...] = ("yes", "no")
QUESTION_MODES: tuple[str, ...] = ("together", "one_by_one")
ANSWER_LABELS = {"yes": "Yes", "no": "No", NOT_RELEVANT: "Not relevant"}


def answer_id(v: Any) -> Any:
    """YAML reads a bare ``yes``/``no`` as a boolean: the answer ids ``yes``/``no``."""
    return {True: "yes", False: "no"}.get(v, v) if isinstance(v, bool) else v


class Question(BaseModel):
    """One yes/no (or small-set) question of a dimension."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    text: str
    answers: list[str] = Field(default_factory=lambda: list(DEFAULT_ANSWERS), min_length=2)
    severity: dict[str, str] = Field(default_factory=dict)  # answer -> level id
    next: dict[str, str] = Field(default_factory=dict)  # answer -> question id | end | not_relevant
    # later question dimensions that are not relevant when this question ends its own as not relevant
    sets_not_relevant: list[str] = Field(default_factory=list)

    @field_validator("answers", mode="before")
    @classmethod
    def _yaml_answers(cls, v: Any) -> Any:
        return [answer_id(a) for a in v] if isinstance(v, list) else v

    @field_validator("severity", "next", mode="before")
    @classmethod
    def _yaml_keys(cls, v: Any) -> Any:
        return {answer_id(k): answer_id(x) for k, x in v.items()} if isinstance(v, dict) else v

    @field_validator("id")
    @classmethod
    def _id(cls, v: str) -> str:
        if not SNAKE_CASE.match(v):
            raise ValueError(f"question id '{v}' must be snake_case (a-z, 0-9, underscores)")
        return v

    @field_validator("text")
    @classmethod
    def _text(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("text must not be empty")
        return v

    @field_validator("answers")
    @classmethod
    def _answers(cls, v: list[str]) -> list[str]:
        for a in v:
            if not SNAKE_CASE.match(str(a)):
                raise ValueError(f"answer '{a}' must be snake_case (yes, no, not_relevant, ...)")
        if len(set(v)) != len(v):
            raise ValueError(f"duplicate answers in {v}")
        return [str(a) for a in v]


class LevelRule(BaseModel):
    """How a question dimension's level follows from its answers."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["worst_severity"] = "worst_severity"
    otherwise: str | None = None  # level when no severity fires (default: the best level)


def check_questions(questions: list[Question], level_ids: list[str]) -> list[tuple[tuple[Any, ...], str]]:
    """Problems of one axis's questions: ``(sub-location, message)`` pairs."""
    problems: list[tuple[tuple[Any, ...], str]] = []
    index = {q.id: i for i, q in enumerate(questions)}
    if len(index) != len(questions):
        problems.append(((), "duplicate question ids"))
    for i, q in enumerate(questions):
        for ans, lvl in q.severity.items():
            if ans not in q.answers:
                problems.append(((i, "severity", ans), f"'{ans}' is not an answer of {q.id} ({', '.join(q.answers)})"))
            if lvl not in level_ids:
                problems.append(((i, "severity", ans), f"'{lvl}' is not a level ({', '.join(level_ids)})"))
        for ans, to in q.next.items():
            if ans not in q.answers:
                problems.append(((i, "next", ans), f"'{ans}' is not an answer of {q.id} ({', '.join(q.answers)})"))
            elif to not in (END, NOT_RELEVANT):
                if to not in index:
                    problems.append(((i, "next", ans), f"'{to}' is not a question id of this dimension, "
                                                       f"'{END}' or '{NOT_RELEVANT}'"))
                elif index[to] <= i:
                    problems.append(((i, "next", ans), f"'{to}' comes before {q.id}: branches may only jump forward"))
    return problems


def check_gates(codes: list[str], with_questions: list[bool], not_relevant: list[bool],
                questions: list[list[Question]]) -> list[tuple[tuple[Any, ...], str]]:
    """Problems of the ``sets_not_relevant`` references: ``((axis, "questions", q, "sets_not_relevant"), message)``.
    A reference names a later dimension scored from questions that may be not relevant, and the
    question must have an answer that ends its own dimension as not relevant."""
    problems: list[tuple[tuple[Any, ...], str]] = []
    index = {c: i for i, c in enumerate(codes)}
    for i, qs in enumerate(questions):
        for k, q in enumerate(qs):
            where = (i, "questions", k, "sets_not_relevant")
            if q.sets_not_relevant and NOT_RELEVANT not in q.next.values():
                problems.append((where, f"question {q.id} has no answer with next: {NOT_RELEVANT}, so it never "
                                        "sets other dimensions not relevant"))
            for code in q.sets_not_relevant:
                j = index.get(code)
                if j is None:
                    why = f"'{code}' is not a dimension code ({', '.join(codes)})"
                elif j <= i:
                    why = f"'{code}' is not a later dimension than {codes[i]}: a gate only skips what comes after it"
                elif not with_questions[j]:
                    why = f"'{code}' is not scored from questions"
                elif not not_relevant[j]:
                    why = f"'{code}' cannot be not relevant: set not_relevant: true on it"
                else:
                    continue
                problems.append((where, why))
    return problems


def gated(axes: list[tuple[str, list[Question]]], answers: Mapping[str, str]) -> set[str]:
    """The dimensions a gate set not relevant, walking ``(code, questions)`` in order over ``answers``
    (a dimension not yet answered ends the walk)."""
    out: set[str] = set()
    for code, questions in axes:
        if code in out or not questions:
            continue
        path, ending = walk(questions, answers)
        if ending == "missing":
            break
        if ending == NOT_RELEVANT and path:
            out.update(next(q for q in questions if q.id == path[-1]).sets_not_relevant)
    return out


def mentioned_answers(questions: list[Question]) -> list[str]:
    """Every answer id of the questions, in first-seen order."""
    out: list[str] = []
    for q in questions:
        out += [a for a in q.answers if a not in out]
    return out


def next_question(questions: list[Question], current: int, answer: str) -> int | str:
    """Index of the question after ``current`` answered ``answer``, or ``end`` / ``not_relevant``."""
    to = questions[current].next.get(answer)
    if to is None:
        return current + 1 if current + 1 < len(questions) else END
    if to in (END, NOT_RELEVANT):
        return to
    return next(i for i, q in enumerate(questions) if q.id == to)


def walk(questions: list[Question], answers: Mapping[str, str]) -> tuple[list[str], str]:
    """The path of question ids the answers lead through, and how it ends (``end``,
    ``not_relevant``, or ``missing`` when a question on the path has no answer)."""
    path: list[str] = []
    i: int | str = 0 if questions else END
    while isinstance(i, int):
        q = questions[i]
        if q.id not in answers:
            return path, "missing"
        path.append(q.id)
        i = next_question(questions, i, answers[q.id])
    return path, i


def derive_level(questions: list[Question], rule: LevelRule, answers: Mapping[str, str],
                 levels: list[tuple[str, int]]) -> tuple[str | None, list[str]]:
    """``(level id or None for not relevant, path)`` of a question dimension.

    ``levels``: ``(id, value)`` of the scale; worse levels have lower values.
    """
    path, ending = walk(questions, answers)
    if ending == "missing":
        raise ValueError(f"no answer to question {questions[len(path)].id}")
    if ending == NOT_RELEVANT:
        return None, path
    value = dict(levels)
    by_id = {q.id: q for q in questions}
    fired = [by_id[qid].severity[answers[qid]] for qid in path if answers[qid] in by_id[qid].severity]
    if fired:
        return min(fired, key=lambda lv: value[lv]), path
    best = max(levels, key=lambda lv: lv[1])[0]
    return rule.otherwise or best, path
