"""The ``--dry-run`` estimate: calls, tokens and dollars per role without calling any model
(the assumptions: :mod:`mindeval.budget`)."""

from __future__ import annotations

from typing import Any

from ..budget import (
    cached_usage,
    prompt_tokens,
    reply_tokens,
)
from ..config import (
    CHARS_PER_TOKEN,
    TOKENS_PER_MESSAGE,
)
from ..judging.job import Transcript
from ..prompts import render_patient
from ..records import (
    Role,
    SessionInfo,
    Usage,
)
from ..sessions import first_session
from .prepare import Prepared


def estimate_run(prep: Prepared, assumed_replies: dict[str, int] | None = None) -> dict[str, dict[str, Any]]:
    """Calls, tokens and dollars per role for ``prep``, without calling any model.

    Every request is built as the run builds it: each profile's rendered system prompts,
    the opening line, then one reply per turn of the assumed length
    (:func:`mindeval.budget.reply_tokens`; ``assumed_replies`` overrides it per role), so
    the history grows as it will; the judge prompt is the rendered template over a
    transcript of such replies, each session's notes and the clinician's system prompt filling
    ``${memory}`` and ``${clinician_system}`` as the run fills them (:func:`_sessions`). Prompt
    caching as the provider would apply it (:func:`mindeval.budget.cached_usage`): each turn can
    read the previous turn's prompt, each judge call after the first the judge's shared prefix.
    One judge attempt per sample (no parse retries).
    """
    from ..judging.cost import JudgeCost
    from ..llm.cost import billed_input_tokens, cost_usd

    c = prep.config
    specs = {"patient": c.patient, "clinician": c.clinician, "judge": c.judge}
    reply = {r: reply_tokens(r, s, assumed=(assumed_replies or {}).get(r)) for r, s in specs.items()}
    usage = {r: Usage() for r in specs}
    calls = dict.fromkeys(specs, 0)
    judge = JudgeCost(model=c.judge.model, prompt=prep.judge_prompt(), reply=reply["judge"],
                      nonce=None if c.transcript_format == "authors" else "0" * 16)  # the answer code's length
    judge_seen = 0
    _step_estimate(prep, reply, usage, calls)
    filler = [{"role": "user", "content": c.opening_line}] + [
        {"role": "user" if i % 2 == 0 else "assistant",
         "content": "x" * (CHARS_PER_TOKEN * reply["patient" if i % 2 == 0 else "clinician"])}
        for i in range(1, c.turns + 1)]
    for profile in prep.profiles:  # counted arithmetically: --repeats 1000 costs no more time than 1
        tags = prep.labels.get(profile.id)
        for info, per in _sessions(prep, profile, reply[prep.memory.writer]):  # per: such sessions of the profile
            system = prep.clinician_system(profile, info)
            for role, (u, n) in _conversation(prep, profile, reply, system).items():
                usage[role] += _times(u, per)
                calls[role] += n * per
            item = Transcript(interaction_id="", profile=profile, messages=filler,
                              memory=prep.read_by("judge", info), clinician_system=system)
            for k in (1, per - 1) if per > 1 else (1,):  # the first reads what earlier ones cached; the rest alike
                u, n, judge_seen = judge.conversation(item, tags, c.judge_samples, judge_seen)
                usage["judge"] += _times(u, k)
                calls["judge"] += n * k
    est: dict[str, dict[str, Any]] = {}
    for role, u in usage.items():
        model = specs[role].model
        billed = billed_input_tokens(model, u)
        est[role] = {"model": model, "calls": calls[role], "reply_tokens": reply[role], **u.model_dump(),
                     "billed_input_tokens": None if billed is None else round(billed),
                     "cost_usd": cost_usd(model, u)}
    return est


def _times(u: Usage, k: int) -> Usage:
    return Usage(**{f: getattr(u, f) * k for f in Usage.model_fields})


def _sessions(prep: Prepared, profile: Any, notes_tokens: int) -> list[tuple[SessionInfo | None, int]]:
    """The sessions of ``profile``'s conversations as the estimate prices them, each with how many
    such sessions the profile has (over its repeats). One session: no session info, as the run. With
    ``sessions`` > 1, session 1 starts from the target's ``first_session`` texts, known before any
    call, exactly as the run renders them; a later session starts from notes the memory step has not
    written yet: they are approximated by a text of the writer's assumed reply length
    (``notes_tokens``, the length the step's own call is priced at), so the clinician's prompt and
    the judge's ``${memory}`` and ``${clinician_system}`` are priced at that size."""
    c = prep.config
    n = c.target.sessions
    if n == 1:
        return [(None, c.repeats)]
    first = first_session("", n, *prep.target.first_texts(profile))
    later = SessionInfo(member="", session=2, sessions=n, memory="x" * (CHARS_PER_TOKEN * notes_tokens))
    return [(first, c.repeats), (later, c.repeats * (n - 1))]


def _conversation(prep: Prepared, profile: Any, reply: dict[str, int], clinician: str) -> dict[str, tuple[Usage, int]]:
    """The clinician's and the patient's usage and calls over one conversation (session) of ``profile``
    (``clinician``: the session's system prompt, :meth:`Prepared.clinician_system`): each turn resends
    the system prompt and the history, and can read the previous turn's prompt."""
    c = prep.config
    tags = prep.labels.get(profile.id)
    specs = {"patient": c.patient, "clinician": c.clinician}
    system = {"patient": prompt_tokens([{"content": render_patient(prep.templates["patient"], profile, tags)}]),
              "clinician": prompt_tokens([{"content": clinician}])}
    out = {r: (Usage(), 0) for r in specs}
    history = prompt_tokens([{"content": c.opening_line}])
    last = {"patient": 0, "clinician": 0}
    role: Role = "clinician"
    for _ in range(c.turns):
        prompt = system[role] + history
        u, n = out[role]
        out[role] = (u + cached_usage(specs[role].model, prompt, reply[role], last[role], prompt), n + 1)
        last[role] = prompt
        history += reply[role] + TOKENS_PER_MESSAGE
        role = "patient" if role == "clinician" else "clinician"
    return out


def _step_estimate(prep: Prepared, reply: dict[str, int], usage: dict[str, Usage], calls: dict[str, int]) -> None:
    """Add the calls of the step between sessions (sessions > 1): per conversation and session
    after the first, the memory (by its writer's model) and the patient's next situation, each over its
    template and a session's transcript (uncached)."""
    c = prep.config
    steps = len(prep.profiles) * c.repeats * (c.target.sessions - 1)
    if not steps:
        return
    transcript = c.turns * (TOKENS_PER_MESSAGE + (reply["patient"] + reply["clinician"]) // 2)
    for role, kind in ((prep.memory.writer, "memory"), ("patient", "next_session")):  # memory.writer's model
        body = prompt_tokens([{"content": prep.templates[kind].body}]) + transcript
        usage[role] += Usage(prompt_tokens=body * steps, completion_tokens=reply[role] * steps)
        calls[role] += steps


def format_estimate(est: dict[str, dict[str, Any]], n_profiles: int, turns: int, sessions: int = 1,
                    repeats: int = 1) -> str:
    """The estimate as printed; its header states the conversations counted (profiles x repeats x sessions)."""
    conversations = n_profiles * repeats
    count = f"{conversations:,} conversations" + (f", {conversations * sessions:,} sessions" if sessions > 1 else "")
    lines = [f"dry run: {n_profiles} profiles x {turns} turns, {sessions} session{'s' * (sessions > 1)} per "
             f"conversation, {repeats} repeat{'s' * (repeats > 1)} per profile ({count}); no model was called",
             f"{'role':<10} {'model':<32} {'calls':>6} {'input tok':>10} {'cache read':>10} {'billed in':>10} "
             f"{'output tok':>10} {'cost $':>9}"]
    for role, e in est.items():
        dollars = "n/a" if e["cost_usd"] is None else f"{e['cost_usd']:.4f}"
        billed = "n/a" if e["billed_input_tokens"] is None else e["billed_input_tokens"]
        lines.append(f"{role:<10} {e['model']:<32} {e['calls']:>6} {e['prompt_tokens']:>10} {e['cached_tokens']:>10} "
                     f"{billed:>10} {e['completion_tokens']:>10} {dollars:>9}")
    priced = [e["cost_usd"] for e in est.values()]
    total = "n/a (a model has no price)" if None in priced else f"${sum(priced):.4f}"
    lines += [
        f"total: {sum(e['calls'] for e in est.values())} calls, estimated {total}",
        "method: every request as the run builds it (each profile's rendered prompts, the whole history "
        "resent each turn, the judge template over the transcript), ~"
        f"{CHARS_PER_TOKEN} characters per token, replies of "
        + ", ".join(f"{r} {e['reply_tokens']}" for r, e in est.items())
        + " tokens (--assume-reply-tokens ROLE=N to change; input grows about linearly with them); "
        "prompt caching as the provider applies it (billed in: price-weighted input); "
        "judge parse retries not included",
    ]
    return "\n".join(lines)
