"""``--dry-run`` of a judge run over rated interactions (``metaeval judge``, ``mindeval judge official``):
calls, tokens and dollars of every judge request built as the run builds it, over the real
transcripts, printed as ``mindeval run --dry-run`` prints its estimate."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .budget import reply_tokens
from .judging.cost import JudgeCost
from .records import Usage


def estimate_judging(spec: Any, prompt: Any, items: Sequence[tuple[Any, list[dict[str, str]], Mapping[str, str] | None]],
                     samples: int, assumed_reply: int | None = None) -> str:
    """``prompt``: the run's :class:`~mindeval.judging.render.JudgePrompt`; ``items``: (profile,
    messages, labels) of each interaction to judge ``samples`` times."""
    from .engine.estimate import format_estimate
    from .llm.cost import billed_input_tokens, cost_usd

    reply = reply_tokens("judge", spec, assumed=assumed_reply)
    usage, calls, seen = Usage(), 0, 0
    cost = JudgeCost(model=spec.model, prompt=prompt, reply=reply)
    for profile, messages, labels in items:
        u, n, seen = cost.conversation(profile, messages, labels, samples, seen)
        usage += u
        calls += n
    billed = billed_input_tokens(spec.model, usage)
    est = {"judge": {"model": spec.model, "calls": calls, "reply_tokens": reply, **usage.model_dump(),
                     "billed_input_tokens": None if billed is None else round(billed),
                     "cost_usd": cost_usd(spec.model, usage)}}
    lines = format_estimate(est, len(items), 0).splitlines()
    lines[0] = f"dry run: {len(items)} rated interactions x {samples} judge samples; no model was called"
    return "\n".join(lines)

