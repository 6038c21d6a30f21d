"""A points rubric (HealthBench-style ``point_criteria``): one call per conversation and judge sample.

Used by :func:`mindeval.judging.judge.judge_transcript` after the target's own judging of a
conversation (``unit: conversation`` or ``question``) when the guidelines declare point criteria.
The judge answers ``met``, ``not_met`` or ``not_applicable`` for every criterion (key
``pt_<id>``) in one round of :func:`mindeval.judging.call.ask_judge` (interaction id suffixed
``/points``), read strictly and retried like any judgment. The answers join the conversation's
:attr:`~mindeval.records.Judgment.answers`; a points call that fails leaves the whole judgment
failed (never a default), asked again on re-run as its next round.
"""

from __future__ import annotations

from ..records import Judgment
from ..stats.scale_spec import CriterionResult
from ..targets.guidelines import Guidelines
from ..targets.rubric_text import render_scale
from .call import Reply, ask_judge
from .items import _decode, reply_guidelines
from .job import JudgeJob, Transcript
from .reply_format import render_slots_format

PREFIX = "pt_"  # a criterion's answer key: pt_<id>
ANSWERS = ["met", "not_met", "not_applicable"]


def _slots(g: Guidelines) -> list[tuple[str, str, list[str]]]:
    return [(PREFIX + c.id, f"criterion {c.id}", list(ANSWERS)) for c in g.point_criteria]


def points_fields(g: Guidelines) -> dict[str, str]:
    """The template fields of a points call: the criteria (without their points) and the reply shape."""
    rubric = ("CRITERIA (for each, answer met if the clinician's conversation as a whole meets it, not_met if "
              "it does not, not_applicable if the conversation gave no occasion for it):\n"
              + "\n".join(f"- {PREFIX}{c.id}: {c.text.strip()}" for c in g.point_criteria))
    return {"rating_scale": render_scale(g), "rubric": rubric, "output_format": render_slots_format(_slots(g))}


async def judge_points(job: JudgeJob, item: Transcript, sample: int, round_: int) -> Judgment:
    """One points round of ``item``: a judgment whose ``answers`` are the ``pt_<id>`` answers (ok), or failed."""
    g = job.prompt.guidelines
    slots = _slots(g)
    reply_g = reply_guidelines(slots, g.version)
    j = await ask_judge(job, item, sample, round_, Reply(guidelines=reply_g, fields=points_fields(g),
                                                         allowed={key: ids for key, _, ids in slots},
                                                         suffix="/points"))
    if j.parse_status != "ok":
        return j
    try:
        answers = _decode(j, reply_g, slots)
    except ValueError as exc:
        return j.model_copy(update={"parse_status": "failed", "scores": None, "error": str(exc)})
    return j.model_copy(update={"answers": answers})


def merge_points(j: Judgment, points: Judgment) -> Judgment:
    """The conversation's judgment with the points round's answers added (failed if that round failed)."""
    attempts = j.attempts + points.attempts
    raw = f"{j.raw_text}\n\n[points] {points.raw_text}".strip()
    if points.parse_status != "ok":
        return j.model_copy(update={"parse_status": "failed", "scores": None, "attempts": attempts, "raw_text": raw,
                                    "error": f"point criteria not judged: {points.error}"})
    return j.model_copy(update={"answers": {**(j.answers or {}), **(points.answers or {})},
                                "attempts": attempts, "raw_text": raw})


def criterion_results(j: Judgment, profile: str, criteria: list[str]) -> list[CriterionResult]:
    """The parsed judgment's criterion results (``not_applicable`` -> ``met=None``); none without answers."""
    answers = j.answers or {}
    if j.parse_status != "ok" or not all(PREFIX + c in answers for c in criteria):
        return []
    conv = j.interaction_id if j.sample == 0 else f"{j.interaction_id}#{j.sample}"
    return [CriterionResult(profile=profile, conversation=conv, criterion=c,
                            met=None if answers[PREFIX + c] == "not_applicable" else answers[PREFIX + c] == "met")
            for c in criteria]
