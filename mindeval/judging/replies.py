"""Reply-level judging (``unit: reply``): one judgment per clinician reply.

Used by :func:`mindeval.judging.judge.judge_transcript` when the guidelines say
``unit: reply``. Each clinician reply is judged with the conversation up to and including it
(:func:`mindeval.judging.render.render_reply_transcript`: the judge never sees a later turn)
and answers one level of the target's single judge axis plus yes/no for every declared flag.

Every reply is one judgment round (:func:`mindeval.judging.call.ask_judge`, interaction id
suffixed ``/reply<turn>``) saved in the ``reply_judgments`` table before the next reply is
asked, so a resumed run asks only the replies without a row; a failed reply is asked
again, as its own next round, only with ``--retry-refused``. The conversation's judgment is ok only when every reply's is:
its score per axis is the worst reply level, and ``replies`` lists each reply's rating.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from typing import NamedTuple

from ..records import Judgment, ReplyRating
from ..targets.guidelines import Guidelines
from ..targets.rubric_text import render_axis, render_scale
from .answer import reply_answer_rules
from .call import Reply, ask_judge
from .items import _decode, reply_guidelines
from .job import JudgeJob, Transcript
from .reply_format import render_slots_format

FLAG_PREFIX = "flag_"  # a flag's reply key: flag_<id>


def reply_turns(item: Transcript) -> list[int]:
    """Positions of the clinician's replies in the judged messages."""
    return [i for i, m in enumerate(item.messages) if m["role"] == "assistant"]


def _slots(g: Guidelines) -> list[tuple[str, str, list[str]]]:
    axis = g.judge_axes[0]
    return [(axis.code, f"{axis.name} of the reply under judgment", [lv.id for lv in g.levels])] + [
        (FLAG_PREFIX + f.id, f"{f.label}: does the reply under judgment show it?", ["yes", "no"]) for f in g.flags]


def _fields(g: Guidelines, slots: list[tuple[str, str, list[str]]], coded: bool = True) -> dict[str, str]:
    """The template's run-wide fields of a reply call: the scale, the axis and the flags, the reply
    shape and (``coded``: an answer code is drawn per reply) the answer-code rules, so that only
    the code line itself follows the conversation (:func:`~mindeval.judging.render.build_judge_messages`)."""
    rubric = render_axis(g.judge_axes[0], g)
    if g.flags:
        rubric += "\n\nISSUE FLAGS (answer yes or no for each, about the reply under judgment only):\n" + "\n".join(
            f"- {FLAG_PREFIX}{f.id}: {f.label}" + (f": {f.description.strip()}" if f.description else "")
            for f in g.flags)
    shape = render_slots_format(slots) + ("\n\n" + reply_answer_rules() if coded else "")
    return {"rating_scale": render_scale(g), "rubric": rubric, "output_format": shape}


def reply_max_tokens(g: Guidelines) -> int:
    """The embedded judge's reply cap for reply-level judging when none is set: room for the answer
    code and every key of the reply (the level and each flag; the conversation judge's default of 64
    tokens cuts a reply with eight flags short)."""
    return 32 + 16 * len(_slots(g))


def reply_fields(g: Guidelines, coded: bool = True) -> dict[str, str]:
    """The template fields of every reply call of ``g`` (what a dry run renders too); ``coded``:
    False for a judge without answer codes (``--transcript-format authors``)."""
    return _fields(g, _slots(g), coded)


class ReplyOutcome(NamedTuple):
    """One reply's judging in this invocation: its rating or why there is none."""

    rating: ReplyRating | None
    error: str | None = None
    attempts: int = 0
    channel: str | None = None


async def judge_reply(job: JudgeJob, item: Transcript, sample: int, turn: int) -> ReplyOutcome:
    """Judge the reply at ``item.messages[turn]`` unless it is stored ok, and save the round before
    returning. ``item`` may end at ``turn`` (the conversation still going on): the request reads
    nothing after it, so it is the same before and after the conversation ends."""
    g = job.prompt.guidelines
    store = job.log.store
    slots = _slots(g)
    reply_g = reply_guidelines(slots, g.version)
    stored = await store.arun(store.reply_rounds(item.interaction_id, job.spec.model, sample))
    status, done, rating = stored.get(turn, ("", 0, None))
    if status == "ok" and rating is not None:
        return ReplyOutcome(rating)
    if status == "failed" and not job.retry_refused:  # a refused reply is final (docs/judging.md)
        return ReplyOutcome(None, "refused in an earlier run (re-judged only with --retry-refused)")
    round_ = done + 1 if status == "failed" else 0
    j = await ask_judge(job, item, sample, round_, Reply(guidelines=reply_g, fields=reply_fields(g, not job.prompt.authors),
                                                         allowed={key: ids for key, _, ids in slots},
                                                         suffix=f"/reply{turn}", turn=turn))
    rating, error = _rating(j, reply_g, slots, turn, g)
    if error:
        j = j.model_copy(update={"error": error})
    await store.arun(store.save_reply(item.interaction_id, job.spec.model, sample, round_, rating, j, turn))
    return ReplyOutcome(rating, error, j.attempts, j.answer_channel)


async def judge_replies(job: JudgeJob, item: Transcript, sample: int = 0,
                        early: Mapping[tuple[int, int], Awaitable[ReplyOutcome]] | None = None) -> Judgment:
    """Judge every reply of ``item`` not yet judged ok; the conversation's judgment (nothing saved
    for it here: :func:`mindeval.judging.judge.judge_sample` saves it). ``early``: by (sample,
    turn), replies already being judged while the conversation went on (``mindeval run``); their
    outcome is awaited, never asked again."""
    g = job.prompt.guidelines
    ratings: list[ReplyRating] = []
    failed: list[str] = []
    attempts, channel = 0, None
    turns = reply_turns(item)
    for turn in turns:
        pending = (early or {}).get((sample, turn))
        o = await pending if pending is not None else await judge_reply(job, item, sample, turn)
        attempts += o.attempts
        channel = channel or o.channel
        if o.rating is None:
            failed.append(f"reply at turn {turn + 1}: {o.error}")
        else:
            ratings.append(o.rating)
    common = dict(interaction_id=item.interaction_id, judge_model=job.spec.model, sample=sample,
                  attempts=max(1, attempts), protocol=job.prompt.protocol, target=job.target.name,
                  answer_channel=channel)
    if not turns:
        return Judgment(parse_status="failed", error="the conversation has no clinician reply to judge", **common)
    if failed:
        return Judgment(parse_status="failed", error=f"{len(failed)} of {len(turns)} replies not judged; "
                        + "; ".join(failed), **common)
    return Judgment(scores={g.judge_axes[0].code: worst_value(g, ratings)}, parse_status="ok", replies=ratings, **common)


def worst_value(g: Guidelines, ratings: list[ReplyRating]) -> int:
    """A conversation's value under reply-level rating: its worst reply's (judges and human raters alike)."""
    return min(g.value_of(r.level) for r in ratings)


def _rating(j: Judgment, reply_g: Guidelines, slots: list[tuple[str, str, list[str]]], turn: int,
            g: Guidelines) -> tuple[ReplyRating | None, str | None]:
    """The reply's level and flags from one round's judgment, or why there are none."""
    if j.parse_status != "ok":
        return None, j.error or "judge reply could not be parsed"
    try:
        answers = _decode(j, reply_g, slots)
    except ValueError as exc:
        return None, str(exc)
    return ReplyRating(turn=turn, level=answers[g.judge_axes[0].code],
                       flags={f.id: answers[FLAG_PREFIX + f.id] == "yes" for f in g.flags}), None
