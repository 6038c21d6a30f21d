"""Separate reasoning traces (``<think>…</think>``) from the visible reply."""

from __future__ import annotations

import re

_THINK = re.compile(r"<think>(.*?)</think>", re.DOTALL | re.IGNORECASE)


def split_reasoning(text: str, provider_reasoning: str | None = None) -> tuple[str, str | None]:
    """Return ``(visible, reasoning)``.

    Closed ``<think>`` blocks are removed from the visible text; an unclosed trailing
    ``<think>`` (a reply cut off while reasoning) leaves no visible text. A reasoning
    field returned by the provider is kept and placed first.
    """
    parts: list[str] = [provider_reasoning.strip()] if provider_reasoning else []
    parts += [m.strip() for m in _THINK.findall(text)]
    visible = _THINK.sub("", text)
    low = visible.lower()
    if "<think>" in low:  # unterminated block
        i = low.index("<think>")
        parts.append(visible[i + len("<think>"):].strip())
        visible = visible[:i]
    elif "</think>" in low:  # template put the opening tag in the prompt
        i = low.index("</think>")
        parts.append(visible[:i].strip())
        visible = visible[i + len("</think>"):]
    reasoning = "\n\n".join(p for p in parts if p) or None
    return visible.strip(), reasoning
