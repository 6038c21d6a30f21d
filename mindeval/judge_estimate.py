"""``--dry-run`` of a judge run over conversations that already exist: rated interactions
(``metaeval judge``, ``mindeval judge official``) and a run directory's stored conversations
(``mindeval judge RUN``): calls, tokens and dollars of every judge request built as the run
builds it, over the real transcripts (a session's notes and the clinician's system prompt filling
``${memory}`` and ``${clinician_system}`` as the judge run fills them), printed as ``mindeval run
--dry-run`` prints its estimate."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .budget import reply_tokens
from .errors import MindEvalError
from .judging.cost import JudgeCost
from .judging.job import Transcript
from .records import Usage

# one conversation to judge and its profile's label values (those the judge template names)
Item = tuple[Transcript, Mapping[str, str] | None]


def judge_usage(spec: Any, prompt: Any, items: Sequence[Item], samples: int, assumed_reply: int | None = None,
                nonce: str | None = "0" * 16) -> dict[str, Any]:
    """The judge's estimate (a row of :func:`mindeval.engine.estimate.format_estimate`) over ``items``,
    each judged ``samples`` times; ``nonce``: the answer code's length (None: the authors' format)."""
    from .llm.cost import billed_input_tokens, cost_usd

    reply = reply_tokens("judge", spec, assumed=assumed_reply)
    usage, calls, seen = Usage(), 0, 0
    cost = JudgeCost(model=spec.model, prompt=prompt, reply=reply, nonce=nonce)
    for item, labels in items:
        u, n, seen = cost.conversation(item, labels, samples, seen)
        usage += u
        calls += n
    billed = billed_input_tokens(spec.model, usage)
    return {"model": spec.model, "calls": calls, "reply_tokens": reply, **usage.model_dump(),
            "billed_input_tokens": None if billed is None else round(billed), "cost_usd": cost_usd(spec.model, usage)}


def estimate_judging(spec: Any, prompt: Any, items: Sequence[Item], samples: int,
                     assumed_reply: int | None = None) -> str:
    """``prompt``: the run's :class:`~mindeval.judging.render.JudgePrompt`; ``items``: each interaction
    to judge ``samples`` times, with its profile's labels."""
    from .engine.estimate import format_estimate

    est = {"judge": judge_usage(spec, prompt, items, samples, assumed_reply)}
    lines = format_estimate(est, len(items), 0).splitlines()
    lines[0] = f"dry run: {len(items)} rated interactions x {samples} judge samples; no model was called"
    return "\n".join(lines)


def stored_items(prep: Any, db_url: str) -> list[Item]:
    """The complete conversations a re-judge run of ``prep`` would judge, read from the store at
    ``db_url`` (never written): each session's transcript, its notes and the clinician's system
    prompt rendered from them as the re-judge run renders it, with its profile's labels."""
    from .records import simulation_view
    from .store.db import Database
    from .store.runs import RunStore, stored_runs

    db = Database(db_url, create=False)
    try:
        sim = simulation_view(prep.config.model_dump(mode="json"))
        owner = next((rid for rid, _, cfg in stored_runs(db, "benchmark") if simulation_view(cfg) == sim), None)
        if owner is None:
            raise MindEvalError("the store holds no conversations of this run's configuration", field="SOURCE")
        stored = RunStore(db, owner).interactions()
    finally:
        db.close()
    wanted = {p.id for p in prep.profiles}
    return [(Transcript(interaction_id=i.id, profile=i.profile, messages=i.messages(),
                        memory=i.session.memory if i.session else None,
                        clinician_system=prep.clinician_system(i.profile, i.session)), prep.labels.get(i.profile.id))
            for i in stored if i.status == "complete" and i.profile.id in wanted]


def estimate_rejudge(prep: Any, db_url: str, assumed_reply: int | None = None) -> str:
    """``mindeval judge RUN --dry-run``: the judge's calls, tokens and dollars over the stored
    transcripts (and session notes) of the run, as the re-judge run will send them."""
    from .engine.estimate import format_estimate

    c = prep.config
    items = stored_items(prep, db_url)
    nonce = None if c.transcript_format == "authors" else "0" * 16
    est = {"judge": judge_usage(c.judge, prep.judge_prompt(), items, c.judge_samples, assumed_reply, nonce)}
    lines = format_estimate(est, len(prep.profiles), c.turns, c.target.sessions, c.repeats).splitlines()
    lines[0] = lines[0].replace("; no model", f"; re-judging the {len(items)} stored complete ones x "
                                f"{c.judge_samples} judge samples over their transcripts; no model")
    return "\n".join(lines)
