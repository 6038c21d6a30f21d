"""Custom clinicians: a Python callable or an HTTP chat endpoint instead of a litellm model.

* ``package.module:Name`` — ``Name`` is imported; a class is instantiated once (no
  arguments). The object is called as ``obj(messages)`` (or ``obj.respond(messages)``)
  and returns the reply text, or a dict with ``content`` and optionally ``reasoning``
  and ``usage`` (``prompt_tokens``, ``completion_tokens``).
* ``http://…`` / ``https://…`` — MindEval POSTs ``{"messages": [...]}`` as JSON and
  accepts either ``{"content": "...", "reasoning": ...}`` or an OpenAI chat-completion body.

Either way the clinician receives exactly the messages a litellm clinician would: the
clinician prompt (intake fields only) and the dialogue from its own side.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import threading
import urllib.error
import urllib.request
from typing import Any

from ..errors import ModelCallError

_PY_REF = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
_objects: dict[str, Any] = {}
_lock = threading.Lock()


def is_python_ref(model: str) -> bool:
    return bool(_PY_REF.match(model))


def is_http_ref(model: str) -> bool:
    return model.startswith(("http://", "https://"))


def is_custom(model: str) -> bool:
    return is_python_ref(model) or is_http_ref(model)


def _resolve(ref: str) -> Any:
    with _lock:
        if ref in _objects:
            return _objects[ref]
        module_name, attr = ref.split(":", 1)
        try:
            obj: Any = importlib.import_module(module_name)
            for part in attr.split("."):
                obj = getattr(obj, part)
        except (ImportError, AttributeError) as exc:
            raise ModelCallError(f"cannot load custom clinician '{ref}': {exc}") from None
        if isinstance(obj, type):
            obj = obj()
        if not callable(obj) and not hasattr(obj, "respond"):
            raise ModelCallError(f"custom clinician '{ref}' is neither callable nor has .respond(messages)")
        _objects[ref] = obj
        return obj


def check(model: str) -> None:
    if is_python_ref(model):
        _resolve(model)


def call_custom(model: str, messages: list[dict[str, str]], timeout: float = 300.0) -> dict[str, Any]:
    """Return ``{"content", "reasoning", "usage"}`` from a Python or HTTP clinician."""
    if is_python_ref(model):
        obj = _resolve(model)
        fn = obj.respond if hasattr(obj, "respond") else obj
        try:
            out = fn([dict(m) for m in messages])
        except Exception as exc:  # the user's code failed: report it as a model error
            raise ModelCallError(f"{model} raised {type(exc).__name__}: {exc}") from None
    else:
        out = _post(model, messages, timeout)
    return _normalise(model, out)


def _post(url: str, messages: list[dict[str, str]], timeout: float) -> Any:
    data = json.dumps({"messages": messages}).encode()
    headers = {"Content-Type": "application/json"}
    token = os.environ.get("MINDEVAL_CLINICIAN_TOKEN")
    if token:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(url, data=data, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return json.loads(resp.read().decode("utf-8"))
    except urllib.error.HTTPError as exc:
        raise ModelCallError(f"{url}: HTTP {exc.code} {exc.reason}", status=exc.code,
                             transient=exc.code in (408, 429) or exc.code >= 500,
                             provider_message=f"HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        raise ModelCallError(f"{url}: {exc}", transient=True, provider_message=str(exc)) from None
    except json.JSONDecodeError:
        raise ModelCallError(f"{url}: the reply is not JSON") from None


def _normalise(model: str, out: Any) -> dict[str, Any]:
    if isinstance(out, str):
        return {"content": out, "reasoning": None, "usage": {}}
    if isinstance(out, dict):
        if "choices" in out:  # OpenAI chat-completion body
            msg = (out["choices"] or [{}])[0].get("message") or {}
            return {"content": msg.get("content") or "", "reasoning": msg.get("reasoning_content"),
                    "usage": out.get("usage") or {}}
        if "content" in out:
            return {"content": out.get("content") or "", "reasoning": out.get("reasoning"),
                    "usage": out.get("usage") or {}}
    raise ModelCallError(f"{model} returned {type(out).__name__}; expected text or a dict with 'content'")
