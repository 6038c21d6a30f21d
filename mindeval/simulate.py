"""The patient ⇄ clinician loop (paper §2, footnote 13).

The patient opens with "Hello." (a scripted turn), or, when the opening line is empty,
with a first message of the patient model's own. ``turns`` counts the patient and
clinician turns after the opening, so ``turns=20`` gives 10 clinician and 10 patient
turns, the clinician speaking first. Each side sees the dialogue from its own role:
its own turns as ``assistant``, the other side's as ``user``, after its own system
prompt. Every turn is committed together with its call as soon as the call returns,
so an interrupted interaction resumes at the exact turn where it stopped.

The clinician is the system under test, so what it does is part of the conversation:
a clinician that answers nothing after the retries of an empty reply, or whose provider's
content filter refuses to answer, gets an empty turn (stored with ``content=""``; every
model is shown it as ``[no reply]``), and the conversation goes on and is judged. Turns reach models through
:func:`mindeval.judging.textguard.guard_turn` (control sequences defanged, over-long turns cut).
Provider failures (transport, 5xx, 429 after the retry budget, 4xx) and any failure of
the patient simulator raise :class:`~mindeval.errors.ModelCallError`: the interaction
is incomplete and a re-run completes it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from pydantic import BaseModel, ConfigDict

from .config import OPENING_LINE
from .errors import ModelCallError
from .judging.textguard import guard_turn
from .llm.gateway import Completion, ModelSpec
from .llm.retry import is_content_refusal, is_empty_reply
from .records import Role, Turn
from .seeds import turn_seed
from .store.calls import CallLog, Recording
from .store.runs import RunStore, load_turns


def role_view(system_prompt: str, turns: list[Turn], viewer: Role) -> list[dict[str, str]]:
    """The conversation as ``viewer`` sees it; every turn through :func:`~mindeval.judging.textguard.guard_turn`."""
    msgs = [{"role": "system", "content": system_prompt}]
    for t in turns:
        msgs.append({"role": "assistant" if t.role == viewer else "user", "content": guard_turn(t.content)})
    return msgs


def next_role(turns: list[Turn]) -> Role:
    return "clinician" if turns and turns[-1].role == "patient" else "patient"


def model_turn(idx: int, role: Role, spec: ModelSpec, call_id: int, c: Completion) -> Turn:
    return Turn(index=idx, role=role, content=c.text, reasoning=c.reasoning, model=spec.model,
                author="model", usage=c.usage, latency_s=c.latency_s, call_id=call_id)


def patient_ended(turns: list[Turn], marker: str | None) -> bool:
    """Whether the last turn is the patient model's and holds the target's end marker (``patient_can_end``)."""
    last = turns[-1] if turns else None
    return (marker is not None and last is not None and last.role == "patient" and last.author == "model"
            and marker in last.content)


class Speaker(BaseModel):
    """One side of an interaction: the model that speaks and its system prompt."""

    model_config = ConfigDict(frozen=True)

    spec: ModelSpec
    prompt: str
    end_marker: str | None = None  # the patient's: a turn holding it ends the interaction (patient_can_end)


async def run_interaction(
    log: CallLog,
    interaction_id: str,
    *,
    patient: Speaker,
    clinician: Speaker,
    turns: int,
    opening_line: str = OPENING_LINE,
    seed: int | tuple[int, str] = 0,
    on_turn: Callable[[list[Turn]], None] | None = None,
) -> list[Turn]:
    """Play (or resume) one interaction until ``turns`` turns follow the opening line
    (an empty ``opening_line``: the patient model writes the first message, turn 0). Raises :class:`~mindeval.errors.ModelCallError` when a model fails; the turns committed so far
    stay in the store. ``on_turn``: called with the turns so far each time a turn made here is stored
    (the new one last). ``seed``: each turn's derives from it and the interaction id, or with
    ``(seed, key)`` from ``key`` (:func:`mindeval.seeds.conversation_key`: the same for every
    clinician), recorded with each call as ``seed_key``. A patient turn with its ``end_marker`` ends it.
    """
    seed, seed_key = seed if isinstance(seed, tuple) else (seed, interaction_id)
    history = load_turns(log.db, interaction_id)
    if not history and opening_line:
        opener = Turn(index=0, role="patient", content=opening_line, author="scripted")
        await log.store.arun(RunStore.add_turn(interaction_id, opener))
        history = [opener]
    speakers = {"clinician": clinician, "patient": patient}
    system_sha = {r: hashlib.sha256(s.prompt.encode()).hexdigest() for r, s in speakers.items()}
    while len(history) - 1 < turns and not patient_ended(history, patient.end_marker):
        role = next_role(history)
        spec, prompt = speakers[role].spec, speakers[role].prompt
        idx = len(history)
        turn: list[Turn] = []

        def save(call_id: int, c: Completion, idx: int = idx, role: Role = role, spec: ModelSpec = spec,
                 turn: list[Turn] = turn):
            turn.append(model_turn(idx, role, spec, call_id, c))
            return RunStore.add_turn(interaction_id, turn[0])

        try:
            call = await log.call(
                role, spec, role_view(prompt, history, role), seed=turn_seed(seed, seed_key, idx),
                tag=f"{interaction_id}:{idx}",
                recording=Recording(ref={"interaction": interaction_id, "turns": idx,
                                         "system_sha256": system_sha[role]}, after=save, seed_key=seed_key),
            )
        except ModelCallError as exc:
            if role != "clinician" or not (is_empty_reply(exc) or is_content_refusal(exc)):
                raise
            silent = Turn(index=idx, role=role, content="", model=spec.model, author="model")
            await log.store.arun(RunStore.add_turn(interaction_id, silent))
            history.append(silent)
            if on_turn is not None:
                on_turn(list(history))
            continue
        if not turn:  # reused from the store after a crash between call and turn: save it now
            turn.append(model_turn(idx, role, spec, call.call_id, call.completion))
            await log.store.arun(RunStore.add_turn(interaction_id, turn[0]))
        history.append(turn[0])
        if on_turn is not None:
            on_turn(list(history))
    return history
