"""litellm, imported once and only when a call or a check needs it (the provider table's
``litellm`` route): offline price map, no telemetry, MindEval's own retries."""

from __future__ import annotations

import threading
from typing import Any

_lock = threading.Lock()
_litellm: Any = None


def imported() -> Any:
    """The litellm module if this process has set it up, else None (never imports it)."""
    return _litellm


def litellm_module() -> Any:
    """Import litellm once (offline cost map, quiet) and return it."""
    global _litellm
    if _litellm is not None:
        return _litellm
    with _lock:
        if _litellm is None:
            import litellm

            import mindeval  # noqa: F401  (sets LITELLM_LOCAL_MODEL_COST_MAP before import)

            litellm.telemetry = False
            litellm.suppress_debug_info = True
            litellm.drop_params = True
            litellm.modify_params = True  # e.g. Anthropic needs a user message first
            _litellm = litellm
    return _litellm
