"""Multi-session conversations: a target's ``sessions: N`` (> 1) and the step between sessions.

Each session is its own interaction: the first keeps the conversation's id (``member``), session
k > 1 is ``<member>-s<k>``. Between session k and k+1 two calls are made and stored:

1. **memory** (``prompts.memory``, by default with the clinician model): the writer (the target's
   ``memory.writer``) writes the memory from the intake, the memory so far (``${memory}``) and the
   session just ended (``${transcript}``); the next session's prompts of ``memory.readers`` receive
   it as ``${memory}`` (by default the clinician's own notes, read by it and the judge). With
   ``memory.max_entries`` it is a bounded running log: the newest N non-empty lines of the reply
   are kept (:func:`mindeval.records.bound_log`; the count left out is ``memory_dropped``).
2. **next session** (the patient model, ``prompts.next_session``): the patient's situation for the
   next session from the whole profile, the previous situation (``${situation}``) and the session
   just ended; the next session's patient prompt receives it as ``${situation}``.

Each result is committed with its call (the ``sessions`` table, :class:`~mindeval.records.SessionInfo`)
before the next step, so a run killed at any moment resumes without repeating a stored call. Every
seed of a session (its turns, the memory and next-session calls) derives from the run's seed and
the session's key (:func:`mindeval.seeds.conversation_key`: target, profile, repeat and session),
never from the run id: every clinician meets the same patient-side seeds.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict

from .config import FIRST_MEMORY, FIRST_SITUATION
from .errors import ModelCallError
from .judging.render import render_transcript
from .llm.gateway import Completion, ModelSpec
from .llm.providers import supports_schema
from .llm.retry import is_content_refusal, is_empty_reply
from .prompts import PromptTemplate, render_session_step
from .records import DEFAULT_MEMORY, Interaction, MemorySpec, Profile, SessionInfo, Turn, bound_log
from .seeds import turn_seed
from .situation import (
    SITUATION_ATTEMPTS,
    answer_instruction,
    parse_situation,
    situation_lines,
    situation_schema,
    stored_parts,
)
from .store.calls import CallLog, Recording


def session_id(member: str, session: int) -> str:
    """The interaction id of session ``session`` (1-based) of the conversation ``member``."""
    return member if session == 1 else f"{member}-s{session}"


def session_of(interaction_id: str, profile_id: str) -> int:
    """The session of interaction ``interaction_id`` of profile ``profile_id``, read back from its id
    (:func:`session_id` of a run's conversation id, which ends with the profile id, and ``-rN`` for a
    repeat): k for an id ending ``<profile_id>[-rN]-s<k>``, else 1."""
    m = re.search(re.escape(profile_id) + r"(?:-r\d+)?-s(\d+)$", interaction_id)
    return int(m.group(1)) if m and int(m.group(1)) > 1 else 1


def unit_key(profile_id: str, interaction_id: str) -> str:
    """The rated unit of a conversation: the profile id, with ``#s<k>`` for session k > 1 of a
    multi-session run (:func:`session_of`); human ratings and judge scores are paired on it."""
    k = session_of(interaction_id, profile_id)
    return profile_id if k == 1 else f"{profile_id}#s{k}"


def member_of(unit: str) -> str:
    """The member (profile id) of a rated unit (:func:`unit_key`): the unit without its ``#s<k>``."""
    return re.sub(r"#s\d+$", "", unit)


def first_session(member: str, sessions: int, situation: str = FIRST_SITUATION,
                  memory: str = FIRST_MEMORY) -> SessionInfo:
    """Session 1: no notes and no next-session step yet; ``situation`` and ``memory``: what it starts
    from (the target's ``first_session``: :meth:`mindeval.targets.Target.first_texts`)."""
    return SessionInfo(member=member, session=1, sessions=sessions, memory=memory, situation=situation)


class SessionStep(BaseModel):
    """What the step between two sessions needs: its two templates, the two models, the run's
    seed and the transcript's speaker labels."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    memory: PromptTemplate
    next_session: PromptTemplate
    clinician: ModelSpec
    patient: ModelSpec
    seed: int
    speakers: dict[str, str]
    situation_fields: tuple[str, ...] = ()  # the next situation's JSON fields (none: free text)
    situation_opening: str | None = None  # the field that must be non-empty (the next session's opening)
    memory_log: MemorySpec = DEFAULT_MEMORY  # the target's memory: who writes it, its bound


async def next_session(log: CallLog, step: SessionStep, prev: SessionInfo, turns: list[Turn], profile: Profile,
                       key: str, labels: Mapping[str, str] | None = None) -> SessionInfo:
    """The session after ``prev`` (whose turns are ``turns``): its memory and situation, each from
    the store when there, else from its call (stored with it); ``key``: what the next session's
    seeds derive from (:func:`mindeval.seeds.conversation_key`). Raises
    :class:`~mindeval.errors.ModelCallError` when the patient model fails (a re-run asks again)."""
    k = prev.session + 1
    iid = session_id(prev.member, k)
    info = log.store.sessions().get(iid) or SessionInfo(member=prev.member, session=k, sessions=prev.sessions)
    messages = Interaction(id=iid, profile=profile, clinician_model="", turns=turns).messages()
    transcript = render_transcript(messages, speakers=step.speakers)
    if info.memory is None:
        rule = step.memory_log
        values = {"memory": prev.memory or "", "transcript": transcript, "session": str(prev.session),
                  **({"max_entries": str(rule.max_entries)} if rule.max_entries is not None else {})}
        text = render_session_step(step.memory, profile, values, labels, prev.schedule, rule)
        writer = step.patient if rule.writer == "patient" else step.clinician
        info = await _step_call(log, iid, info, "memory", writer, text, (step.seed, key, -1), rule)
    if info.situation is None:
        parts = stored_parts(prev.situation, step.situation_fields)
        text = render_session_step(step.next_session, profile, {
            "situation": situation_lines(parts) if parts else prev.situation or "", "transcript": transcript,
            "session": str(k)}, labels, info.schedule)
        if step.situation_fields:
            info = await _structured_call(log, iid, info, step, text, (step.seed, key, -2))
        else:
            info = await _step_call(log, iid, info, "situation", step.patient, text, (step.seed, key, -2))
    return info


async def _structured_call(log: CallLog, iid: str, info: SessionInfo, step: SessionStep, text: str,
                           seed: tuple[int, str, int]) -> SessionInfo:
    """The next situation as the declared JSON fields: an unreadable answer is asked again with the
    reason fed back (each attempt a stored call, so a resume repeats none), then the step fails
    (:class:`~mindeval.errors.ModelCallError`): no situation is ever invented."""
    fields, reason = step.situation_fields, ""
    messages = [{"role": "user", "content": f"{text}\n\n{answer_instruction(fields)}"}]
    rf = situation_schema(fields, step.situation_opening) if supports_schema(step.patient.model) else None
    for attempt in range(SITUATION_ATTEMPTS):
        call = await log.call("patient", step.patient, messages, response_format=rf,
                              seed=turn_seed(seed[0], seed[1], seed[2] - 10 * attempt),
                              tag=f"{iid}:situation" + (f":retry{attempt}" if attempt else ""),
                              recording=Recording(seed_key=seed[1]))
        try:
            parts = parse_situation(call.completion.text, fields, step.situation_opening)
        except ValueError as exc:
            reason = str(exc)
            messages = [*messages, {"role": "assistant", "content": call.completion.text},
                        {"role": "user", "content": f"That answer could not be read ({reason}). "
                                                    f"{answer_instruction(fields)}"}]
            continue
        done = info.model_copy(update={"situation": json.dumps(parts, ensure_ascii=False),
                                       "situation_call_id": call.call_id})
        await log.store.arun(log.store.save_session(iid, done))
        return done
    raise ModelCallError(f"the next-session answer could not be read after {SITUATION_ATTEMPTS} attempts: {reason}",
                         role="patient", model=step.patient.model)


async def _step_call(log: CallLog, iid: str, info: SessionInfo, what: str, spec: ModelSpec, text: str,
                     seed: tuple[int, str, int], rule: MemorySpec = DEFAULT_MEMORY) -> SessionInfo:
    """One call of the step (``what``: memory or situation; ``seed``: the run's, the key, the step;
    ``rule``: the memory's writer and bound), its result committed with the call.
    A clinician that writes no notes (an empty reply or a refusal after the retries) starts the
    next session with empty notes: what the system under test does is part of the benchmark. A
    patient model's failure (the situation, or a memory it writes) fails the step: a re-run asks again."""
    role = rule.writer if what == "memory" else "patient"

    def kept(reply: str) -> dict[str, str | int]:
        """The stored result of ``reply``: a bounded memory keeps its newest entries, counting the rest."""
        if what != "memory" or rule.max_entries is None:
            return {what: reply}
        log_text, dropped = bound_log(reply, rule.max_entries)
        return {what: log_text, "memory_dropped": dropped}

    def save(call_id: int, c: Completion):
        return log.store.save_session(iid, info.model_copy(update={**kept(c.text), f"{what}_call_id": call_id}))
    try:
        call = await log.call(role, spec, [{"role": "user", "content": text}], seed=turn_seed(*seed),
                              tag=f"{iid}:{what}", recording=Recording(after=save, seed_key=seed[1]))
    except ModelCallError as exc:
        if role != "clinician" or not (is_empty_reply(exc) or is_content_refusal(exc)):
            raise
        done = info.model_copy(update=kept(""))
    else:  # a call reused from the store after a crash between call and row: the row is written now
        done = info.model_copy(update={**kept(call.completion.text), f"{what}_call_id": call.call_id})
    await log.store.arun(log.store.save_session(iid, done))
    return done
