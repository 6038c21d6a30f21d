"""The patient ⇄ clinician loop (paper §2, footnote 13).

The patient opens with "Hello." (a scripted turn). ``turns`` counts the patient and
clinician turns after the opening, so ``turns=20`` gives 10 clinician and 10 patient
turns, the clinician speaking first. Each side sees the dialogue from its own role:
its own turns as ``assistant``, the other side's as ``user``, after its own system
prompt. Every turn is committed as soon as its call returns, so an interrupted
interaction resumes at the exact turn where it stopped.
"""

from __future__ import annotations

import hashlib

from sqlalchemy import select

from .config import OPENING_LINE
from .llm.gateway import ModelSpec
from .records import Role, Turn, Usage
from .store.calls import CallLog
from .store.tables import TurnRow


def role_view(system_prompt: str, turns: list[Turn], viewer: Role) -> list[dict[str, str]]:
    """The conversation as ``viewer`` sees it."""
    msgs = [{"role": "system", "content": system_prompt}]
    for t in turns:
        msgs.append({"role": "assistant" if t.role == viewer else "user", "content": t.content})
    return msgs


def next_role(turns: list[Turn]) -> Role:
    return "clinician" if turns[-1].role == "patient" else "patient"


def turn_seed(seed: int, interaction_id: str, idx: int) -> int:
    h = hashlib.sha256(f"{seed}:{interaction_id}:{idx}".encode()).hexdigest()
    return int(h[:8], 16)


def load_turns(log: CallLog, interaction_id: str) -> list[Turn]:
    with log.db.read() as s:
        rows = s.scalars(
            select(TurnRow).where(TurnRow.interaction_id == interaction_id).order_by(TurnRow.idx)
        ).all()
    return [row_to_turn(r) for r in rows]


def row_to_turn(r: TurnRow) -> Turn:
    return Turn(
        index=r.idx, role=r.role, content=r.content, reasoning=r.reasoning, model=r.model,
        author=r.author, usage=Usage(prompt_tokens=r.prompt_tokens, completion_tokens=r.completion_tokens),
        latency_s=r.latency_s, call_id=r.call_id,
    )


def save_turn(log: CallLog, interaction_id: str, turn: Turn) -> None:
    with log.db.write() as s:
        s.add(
            TurnRow(
                interaction_id=interaction_id, idx=turn.index, role=turn.role, content=turn.content,
                reasoning=turn.reasoning, model=turn.model, author=turn.author,
                prompt_tokens=turn.usage.prompt_tokens, completion_tokens=turn.usage.completion_tokens,
                latency_s=turn.latency_s, call_id=turn.call_id,
            )
        )


def run_interaction(
    log: CallLog,
    interaction_id: str,
    *,
    patient_spec: ModelSpec,
    clinician_spec: ModelSpec,
    patient_prompt: str,
    clinician_prompt: str,
    turns: int,
    opening_line: str = OPENING_LINE,
    seed: int = 0,
    on_turn=None,
) -> list[Turn]:
    """Play (or resume) one interaction until ``turns`` turns follow the opening line.

    Raises :class:`~mindeval.errors.ModelCallError` when a model fails; the turns
    committed so far stay in the store.
    """
    history = load_turns(log, interaction_id)
    if not history:
        opener = Turn(index=0, role="patient", content=opening_line, author="scripted")
        save_turn(log, interaction_id, opener)
        history = [opener]
    while len(history) - 1 < turns:
        role = next_role(history)
        spec, prompt = (clinician_spec, clinician_prompt) if role == "clinician" else (patient_spec, patient_prompt)
        idx = len(history)
        call = log.call(
            role, spec, role_view(prompt, history, role),
            seed=turn_seed(seed, interaction_id, idx), tag=f"{interaction_id}:{idx}",
        )
        c = call.completion
        turn = Turn(
            index=idx, role=role, content=c.text, reasoning=c.reasoning, model=spec.model,
            author="model", usage=c.usage, latency_s=c.latency_s, call_id=call.call_id,
        )
        save_turn(log, interaction_id, turn)
        history.append(turn)
        if on_turn is not None:
            on_turn(turn)
    return history
