"""Judging an item-level rubric: question dimensions and judge-side "not relevant".

Used by :func:`mindeval.judging.judge.judge_transcript` when the guidelines have questions
or not-relevant dimensions (``Guidelines.has_items``); other targets never come here.

Every call is one judgment round (:func:`mindeval.judging.call.ask_judge`) with the reply
keys of that call (dimension codes, question ids) as a small categorical *reply guideline*,
so parsing, retries, stored calls and the answer channel are the judge's own. ``together``: one
call answers every question and every directly rated dimension, then each question
dimension's path is walked. ``one_by_one``: one call for the directly rated
dimensions (if any), then one call per question, following the branches. Every
answer is kept in ``Judgment.answers``; a dimension that is not relevant is ``None``.
A gate (a question's ``sets_not_relevant``, :func:`mindeval.judging.rubric.gated`) that ends its
dimension as not relevant makes the listed later dimensions ``None`` too: under ``one_by_one``
their questions are never asked; under ``together`` they were in the one call and are discarded.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..records import Judgment
from ..targets.axes import JudgeAxis
from ..targets.guidelines import Guidelines
from ..targets.rubric_text import render_axis, render_scale
from ..targets.scales import CategoricalScale, Level
from .call import Reply, ask_judge
from .job import JudgeJob, Transcript
from .reply_format import answer_label, render_slots_format, reply_slots
from .rubric import END, NOT_RELEVANT, derive_level, gated, next_question, walk

_BASE = 900  # reply levels' numbers: far from any score a judge might write by mistake


def reply_guidelines(slots: list[tuple[str, str, list[str]]], version: str = "") -> Guidelines:
    """A categorical guideline whose dimensions are ``slots``' keys and whose levels are
    every answer id they allow: what :func:`mindeval.judging.answer.parse_scores` reads the reply with."""
    ids: list[str] = []
    for _, _, allowed in slots:
        ids += [a for a in allowed if a not in ids]
    levels = [Level.model_construct(id=a, label=answer_label(a), value=_BASE + i, harm=False, description=None)
              for i, a in enumerate(ids)]
    axes = [JudgeAxis.model_construct(code=key, name=key, summary="", what_to_evaluate="", anchors=[],
                                      not_relevant=False, questions=[]) for key, _, _ in slots]
    scale = CategoricalScale.model_construct(kind="categorical", intro="", levels=levels, distribution_note=None)
    return Guidelines.model_construct(version=version, scale=scale, judge_axes=axes, human_subaxes=[])


def _fields(g: Guidelines, axes: list[JudgeAxis], slots: list[tuple[str, str, list[str]]]) -> dict[str, str]:
    """The judge template's run-wide fields for one call: the rubric of ``axes`` and the reply shape."""
    return {"rating_scale": render_scale(g), "rubric": "\n\n".join(render_axis(a, g) for a in axes),
            "output_format": render_slots_format(slots)}


def _decode(j: Judgment, reply: Guidelines, slots: list[tuple[str, str, list[str]]]) -> dict[str, str]:
    """Answer ids per key of a parsed reply; an answer a key does not allow raises ValueError."""
    by_value = {lv.value: lv.id for lv in reply.levels}
    out: dict[str, str] = {}
    for key, _, allowed in slots:
        answer = by_value[int(j.scores[key])]  # type: ignore[index]
        if answer not in allowed:
            raise ValueError(f"{key}: '{answer}' is not one of {', '.join(allowed)}")
        out[key] = answer
    return out


MISSING = "missing"  # answer_levels: a dimension whose path reaches a question without an answer


def answer_levels(g: Guidelines, answers: Mapping[str, str]) -> dict[str, str | None]:
    """Each dimension's level id from (possibly partial) answers: ``None`` when not relevant (a
    ``not_relevant`` path or a gate), :data:`MISSING` when a question on its path (or a directly
    rated dimension) has no answer yet. The one rule for judges and human raters alike."""
    levels = [(lv.id, lv.value) for lv in g.levels]
    off = gated([(a.code, a.questions) for a in g.judge_axes], answers)  # set not relevant by a gate
    out: dict[str, str | None] = {}
    for ax in g.judge_axes:
        if ax.code in off:
            out[ax.code] = None
        elif ax.questions:
            _, ending = walk(ax.questions, answers)
            out[ax.code] = MISSING if ending == "missing" else derive_level(ax.questions, ax.rule, answers, levels)[0]
        else:
            level = answers.get(ax.code, MISSING)
            out[ax.code] = None if level == NOT_RELEVANT else level
    return out


def dimension_values(g: Guidelines, answers: Mapping[str, str]) -> dict[str, int | None]:
    """Each dimension's value (``None``: not relevant) from complete answers (judges' and raters' alike)."""
    return {code: None if level is None else g.value_of(level) for code, level in answer_levels(g, answers).items()}


async def judge_items(job: JudgeJob, item: Transcript, sample: int = 0, round_: int = 0) -> Judgment:
    """Judge one transcript against an item-level rubric (``job``'s guidelines have items)."""
    g = job.prompt.guidelines
    calls: list[tuple[list[JudgeAxis], list[tuple[str, str, list[str]]], str]] = []
    direct = [a for a in g.judge_axes if not a.questions]
    if g.question_mode == "together":
        calls.append((list(g.judge_axes), reply_slots(g), ""))
    elif direct:
        calls.append((direct, reply_slots(g, questions=False), "/levels"))
    answers: dict[str, str] = {}
    channel: dict[str, str | None] = {}  # the first call's answer code and channel
    raws: list[str] = []
    rationale: list[str] = []
    attempts = 0

    async def ask(axes: list[JudgeAxis], slots: list[tuple[str, str, list[str]]], suffix: str) -> str | None:
        nonlocal attempts
        reply = reply_guidelines(slots, g.version)
        j = await ask_judge(job, item, sample, round_, Reply(guidelines=reply, fields=_fields(g, axes, slots),
                                                             allowed={key: ids for key, _, ids in slots},
                                                             suffix=suffix))
        attempts += j.attempts
        channel.setdefault("nonce", j.nonce)
        channel.setdefault("answer_channel", j.answer_channel)
        raws.append(j.raw_text if not suffix else f"[{suffix.lstrip('/')}] {j.raw_text}")
        if j.parse_status != "ok":
            return j.error or "judge reply could not be parsed"
        try:
            answers.update(_decode(j, reply, slots))
        except ValueError as exc:
            return str(exc)
        if j.rationale:
            rationale.append(j.rationale)
        return None

    error = None
    for axes, slots, suffix in calls:
        error = error or await ask(axes, slots, suffix)
    if g.question_mode == "one_by_one":
        for ax in (a for a in g.judge_axes if a.questions):
            if ax.code in gated([(a.code, a.questions) for a in g.judge_axes], answers):
                continue  # a gate already set it not relevant: never asked
            i: int | str = 0
            while error is None and isinstance(i, int):
                q = ax.questions[i]
                one = ax.model_copy(update={"questions": [q]})
                error = await ask([one], [(q.id, f"question {q.id} of {ax.code}", list(q.answers))], f"/{q.id}")
                if error is None:
                    i = next_question(ax.questions, i, answers[q.id])
            if error is not None:
                break
            assert i in (END, NOT_RELEVANT)
    common = dict(interaction_id=item.interaction_id, judge_model=job.spec.model, sample=sample,
                  raw_text="\n\n".join(raws), attempts=max(1, attempts), protocol=job.prompt.protocol,
                  target=job.target.name, answers=answers or None, **channel)
    if error is not None:
        return Judgment(parse_status="failed", error=error, **common)
    return Judgment(scores=dimension_values(g, answers), rationale="\n".join(rationale) or None, parse_status="ok", **common)
