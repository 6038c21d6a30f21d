"""One judgment round: the request, the stored calls, strict reading, retries, a recorded failure.

The round's answer code is drawn and committed before its first call (re-read on resume,
so the requests are identical and their stored replies are reused). A refused reply is
asked again with the reason fed back, up to ``JudgeJob.retries`` attempts; after that the
judgment is returned with ``parse_status="failed"`` and no scores, never a default score.
Every attempt (its code, raw reply and why it was refused) is stored in ``judge_attempts``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

from ..errors import ModelCallError
from ..llm.caching import CachePrefix
from ..llm.gateway import cut_note
from ..llm.retry import is_context_overflow, stops_run
from ..records import Judgment
from ..store.runs import AttemptKey
from ..targets.guidelines import Guidelines
from .answer import (
    JudgeParseError,
    new_nonce,
    parse_authors,
    parse_scores,
    response_format,
    supports_schema,
)
from .job import JudgeJob, Transcript
from .protocols import check_protocol, retry_instruction
from .render import JudgePrompt, build_judge_messages, cache_prefix, reply_cache_prefixes


@dataclass(frozen=True)
class Reply:
    """One call of an item-level rubric (:mod:`mindeval.judging.items`): the reply keys as a
    small categorical guideline, the template fields of that call (its rubric and reply shape),
    each key's own answer ids (for the JSON schema) and the call's suffix of the interaction id.
    ``turn``: reply-level judging (:mod:`mindeval.judging.replies`), the position of the reply
    under judgment (the judge sees the messages up to it)."""

    guidelines: Guidelines
    fields: dict[str, str]
    allowed: dict[str, list[str]]
    suffix: str = ""
    turn: int | None = None


@dataclass(frozen=True)
class _Request:
    """What every attempt of one round sends: the messages, answer code and channel, schema, tag."""

    base: list[dict[str, str]]
    nonce: str | None
    channel: str
    rf: dict[str, Any] | None
    shared: CachePrefix
    tag: str


async def _request(job: JudgeJob, item: Transcript, prompt: JudgePrompt, iid: str, sample: int,
                   round_: int, reply: Reply | None) -> _Request:
    again = f"r{round_}:" if round_ else ""
    store = job.log.store
    nonce = None if prompt.authors else await store.arun(
        store.judge_nonce(f"judge:{iid}:{sample}:{again}", new_nonce()))
    fields = reply.fields if reply else None
    turn = reply.turn if reply else None
    base = build_judge_messages(prompt, item.profile, item.messages, nonce=nonce, fields=fields,
                                labels=job.labels.get(item.profile.id), reply_turn=turn,
                                context=item.context())
    shared: CachePrefix = cache_prefix(prompt, base[0]["content"], fields)
    if turn is not None:  # consecutive replies share the conversation so far
        shared = tuple(p for p in (shared, *reply_cache_prefixes(base[0]["content"], item.messages, turn)) if p)
    channel, rf = ("authors" if prompt.authors else "nonce"), None
    spec = job.spec
    if not prompt.authors and prompt.protocol == "mindeval" and supports_schema(spec):
        rf, channel = response_format(prompt.guidelines, nonce, reply.allowed if reply else None), "schema"
    return _Request(base=base, nonce=nonce, channel=channel, rf=rf, shared=shared,
                    tag=f"judge:{iid}:{sample}:{again}")


def _read(prompt: JudgePrompt, text: str, nonce: str | None) -> tuple[dict[str, Any], str | None]:
    if prompt.authors:
        return parse_authors(text, prompt.guidelines), None
    return parse_scores(text, prompt.guidelines, protocol=prompt.protocol, nonce=nonce)


def _recorder(job: JudgeJob, item: Transcript, sample: int, round_: int, reply: Reply | None,
              nonce: str | None) -> Callable[[int, str, str, str | None], Awaitable[None]]:
    """Store each attempt of this round as it ends (``judge_attempts``: every round stays on record)."""
    store = job.log.store

    async def note(attempt: int, status: str, raw: str, error: str | None) -> None:
        at = AttemptKey(item.interaction_id, reply.suffix if reply else "", job.spec.model, sample, round_, attempt)
        await store.arun(store.save_attempt(at, status, nonce, raw, error))
    return note


async def ask_judge(job: JudgeJob, item: Transcript, sample: int = 0, round_: int = 0,
                    reply: Reply | None = None) -> Judgment:
    """Judge ``item`` once (one round); every attempt is a stored call, so re-running repeats none.

    ``round_`` > 0 re-judges after a recorded failure with fresh attempts and a fresh code.
    ``reply``: one call of an item-level rubric, read against its own keys.
    """
    prompt = replace(job.prompt, guidelines=reply.guidelines) if reply else job.prompt
    check_protocol(prompt.protocol, prompt.transcript_format)
    iid = item.interaction_id + (reply.suffix if reply else "")
    req = await _request(job, item, prompt, iid, sample, round_, reply)
    history = list(req.base)
    last_raw, last_error, attempt = "", "no attempt made", 0
    done = dict(interaction_id=iid, judge_model=job.spec.model, sample=sample, protocol=prompt.protocol,
                target=job.target.name, nonce=req.nonce, answer_channel=req.channel)
    note = _recorder(job, item, sample, round_, reply, req.nonce)
    for attempt in range(max(1, job.retries)):
        try:
            call = await job.log.call(
                "judge", job.spec, history, response_format=req.rf,
                seed=job.seed + 1000 * sample + attempt + 100 * round_, tag=f"{req.tag}{attempt}",
                cache_prefix=req.shared,
            )
        except ModelCallError as exc:
            if stops_run(exc):
                raise  # a bad key, no access, an unknown model, a malformed request: no attempt can succeed
            last_error = f"model call failed: {exc}"
            await note(attempt, "call_failed", "", last_error)
            if is_context_overflow(exc):
                break  # the prompt does not fit the judge: recorded as a failed judgment, not retried
            continue
        last_raw = call.completion.text
        try:
            scores, rationale = _read(prompt, last_raw, req.nonce)
        except JudgeParseError as exc:
            cut = cut_note(job.spec, call.completion)  # a reply cut short says so, with its token counts
            last_error = f"{cut}: {exc}" if cut else str(exc)
            await note(attempt, "refused", last_raw, last_error)
            again = retry_instruction(prompt.protocol, prompt.guidelines, req.nonce)
            history = req.base + [
                {"role": "assistant", "content": last_raw},
                {"role": "user", "content": f"Your reply could not be read ({exc}). {again}"},
            ]
            continue
        await note(attempt, "ok", last_raw, None)
        return Judgment(scores=scores, raw_text=last_raw, rationale=rationale, parse_status="ok",
                        attempts=attempt + 1, **done)
    return Judgment(scores=None, raw_text=last_raw, parse_status="failed", attempts=attempt + 1,
                    error=last_error, **done)
