"""Skip the OpenAI SDK's per-call walk over plain-text chat histories.

Before each request the SDK transforms the whole body against its TypedDicts
(``async_maybe_transform``), which for a 20-message history is most of the CPU of a
call. For messages that are plain ``{"role": str, "content": str}`` dicts the
transform is the identity, so they are passed through as they are and only the rest
of the body is transformed. Anything else (content blocks, tool calls) takes the SDK's
own path unchanged.
"""

from __future__ import annotations

from typing import Any

_installed = False


def _plain(messages: Any) -> bool:
    return isinstance(messages, list) and all(
        type(m) is dict and all(type(v) is str for v in m.values()) for m in messages)


def install() -> None:
    """Wrap the SDK's chat-completions transform once per process."""
    global _installed
    if _installed:
        return
    from openai.resources.chat.completions import completions as mod

    original = mod.async_maybe_transform

    async def transform(data: Any, expected_type: Any) -> Any:
        if isinstance(data, dict) and _plain(data.get("messages")):
            rest = await original({k: v for k, v in data.items() if k != "messages"}, expected_type)
            return {**rest, "messages": data["messages"]}
        return await original(data, expected_type)

    mod.async_maybe_transform = transform
    _installed = True
