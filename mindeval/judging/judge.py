"""The one judge loop: every run kind judges each conversation through :func:`judge_sample`.

``mindeval run``, ``mindeval judge`` and ``metaeval judge`` build one
:class:`~mindeval.judging.job.JudgeJob` and call :func:`judge_sample` per conversation and
sample; the judgment is saved before the next step, so a resumed run judges only what is
missing. A recorded failure is an outcome: it is re-judged, as its next round, only with
``--retry-refused`` (docs/judging.md, "A refused judgment is final").
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping

from ..records import Judgment
from .call import ask_judge
from .items import judge_items
from .job import JudgeJob, Transcript
from .points import judge_points, merge_points
from .replies import ReplyOutcome, judge_replies


async def judge_transcript(job: JudgeJob, item: Transcript, sample: int = 0, round_: int = 0,
                           early: Mapping[tuple[int, int], Awaitable[ReplyOutcome]] | None = None) -> Judgment:
    """Judge one transcript (one round); nothing is saved here. Guidelines with questions or
    "not relevant" go through :mod:`mindeval.judging.items`, one call per question or group;
    ``unit: reply`` through :mod:`mindeval.judging.replies`, one call per clinician reply (each
    saved as it is made; ``early``: replies already being judged, see :func:`judge_replies`). A
    target with ``point_criteria`` gets one more call, the points round (:mod:`mindeval.judging.points`)."""
    g = job.prompt.guidelines
    if g.judging_unit == "reply":
        return await judge_replies(job, item, sample, early)
    j = await (judge_items(job, item, sample, round_) if g.has_items else ask_judge(job, item, sample, round_))
    if g.point_criteria and j.parse_status == "ok":  # a points rubric: its own call (mindeval.judging.points)
        j = merge_points(j, await judge_points(job, item, sample, round_))
    return j


async def judge_sample(job: JudgeJob, item: Transcript, sample: int,
                       early: Mapping[tuple[int, int], Awaitable[ReplyOutcome]] | None = None) -> Judgment | None:
    """Judge sample ``sample`` of ``item`` and save it; None when it is already stored (ok, or
    failed without ``job.retry_refused``).

    With ``job.retry_refused`` a stored failure is judged again as its next round. A permanent
    judge error (a bad key, no access, an unknown model, a malformed request) raises
    :class:`ModelCallError` with nothing stored, so a re-run asks again.
    """
    if not job.pending(item.interaction_id, sample):
        return None
    status, done = job.rounds.get((item.interaction_id, job.spec.model, sample), ("", 0))
    round_ = done + 1 if status in ("failed", "unanswered") else 0
    j = await judge_transcript(job, item, sample, round_, early)
    store = job.log.store
    await store.arun(store.save_judgment(j, round_))
    return j
