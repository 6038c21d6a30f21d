"""A provider added the documented way (docs/architecture.md): this one file plus one table entry."""

from __future__ import annotations

from typing import Any

from mindeval.llm.providers import Reply


def complete(model: str, messages: list[dict[str, Any]], params: dict[str, Any]) -> Reply:
    text = f"toy {model.split('/', 1)[1]} heard {len(messages)} messages (seed {params.get('seed')})"
    return Reply(text, {"prompt_tokens": len(messages), "completion_tokens": len(text.split())})
