"""Prompt caching: every turn resends the whole history, so its prefix should be cached.

OpenAI, Gemini and DeepSeek cache long prefixes automatically; MindEval keeps them
byte-stable (the same system prompt and earlier turns, in the same order and wording).
Anthropic caches only up to explicit ``cache_control`` breakpoints: :func:`with_breakpoints`
marks the system prompt, the last message and the last message of the previous turn's
request (so the next request reads what this one wrote), using litellm's content-block
format. Anthropic allows four breakpoints; this uses at most three.
"""

from __future__ import annotations

from typing import Any

EPHEMERAL = {"type": "ephemeral"}
_CLAUDE_HOSTS = ("bedrock", "vertex_ai", "vertex_ai_beta")


def uses_breakpoints(model: str) -> bool:
    """True for providers whose prompt cache needs explicit ``cache_control`` breakpoints."""
    provider, _, name = model.partition("/")
    return provider == "anthropic" or (provider in _CLAUDE_HOSTS and "claude" in name.lower())


def with_breakpoints(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A copy of ``messages`` with ``cache_control`` on the system prompt and the history tail."""
    marks = {len(messages) - 1, len(messages) - 3}
    systems = [i for i, m in enumerate(messages) if m.get("role") == "system"]
    if systems:
        marks.add(systems[-1])
    out = []
    for i, m in enumerate(messages):
        if i in marks and isinstance(m.get("content"), str) and m["content"]:
            m = {**m, "content": [{"type": "text", "text": m["content"], "cache_control": EPHEMERAL}]}
        out.append(m)
    return out
