"""litellm's bundled model map (prices, JSON-schema support), read as JSON without importing litellm.

The file ships with the installed litellm (``model_prices_and_context_window_backup.json``,
the map litellm itself uses offline); importing litellm only to read it would cost
seconds of start-up for runs whose requests never go through litellm. A model is found as
``PROVIDER/NAME`` or as ``NAME`` listed for that provider; ``tests/llm/
test_modelmap.py`` checks the answers against litellm's own for every entry of the
providers MindEval calls itself.
"""

from __future__ import annotations

import importlib.util
import json
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

MAP_FILE = "model_prices_and_context_window_backup.json"
_lock = threading.Lock()
_map: dict[str, Any] | None = None


def model_map() -> dict[str, Any]:
    """The bundled map (loaded once; empty when litellm is not installed)."""
    global _map
    with _lock:
        if _map is None:
            spec = importlib.util.find_spec("litellm")
            roots = list(spec.submodule_search_locations or []) if spec else []
            path = next((Path(r) / MAP_FILE for r in roots if (Path(r) / MAP_FILE).is_file()), None)
            _map = json.loads(path.read_text(encoding="utf-8")) if path else {}
        return _map


@lru_cache(maxsize=256)
def model_info(model: str) -> dict[str, Any] | None:
    """The map's entry of ``PROVIDER/NAME``, or None when the map does not list it."""
    provider, _, name = model.partition("/")
    entries = model_map()
    for key in (model, name):
        entry = entries.get(key)
        if isinstance(entry, dict) and entry.get("litellm_provider") == provider:
            return entry
    return None


def supports_response_schema(model: str) -> bool:
    info = model_info(model)
    return bool(info and info.get("supports_response_schema") is True)
