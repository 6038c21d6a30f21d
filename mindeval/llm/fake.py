"""Scripted fake models for tests and benchmarks (the in-process provider ``fake``).

* ``fake/echo`` — a deterministic reply derived from the request (stable across runs).
* ``fake/judge`` — a valid judge reply derived from the transcript hash: one value per
  dimension of the reply shape the prompt asks for (``"CODE": <lo-hi>`` or
  ``"CODE": "<id|id|...>"``, as :func:`mindeval.judging.reply_format.render_output_format` writes it;
  MindEval's five 1-6 axes when the prompt shows no such shape).
  A judge request's answer code (``Answer code: …``) is carried as ``"answer_code"``.
* ``fake/script:NAME`` — replies popped from a script registered with :func:`script`;
  ``<NONCE>`` in a reply becomes the request's answer code.
* ``fake/echo:NAME``, ``fake/judge:NAME`` — as ``echo`` / ``judge``, another model: replies
  differ by ``NAME`` (sweeps over several clinicians, a second judge).
* ``fake/slow`` — like ``echo`` but takes 0.3 s (for kill-and-resume tests).
* ``fake/empty`` — always an empty reply; ``fake/error`` — always raises.

Every call is counted in :data:`CALLS` (by the name after ``fake/``) so tests can assert how many calls were made.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections import Counter, deque
from typing import Any

from ..errors import ModelCallError
from ..records import AXES
from .providers import Reply

CALLS: Counter[str] = Counter()
_scripts: dict[str, deque[str]] = {}
_lock = threading.Lock()


def script(name: str, replies: list[str]) -> str:
    """Register replies for ``fake/script:NAME`` (consumed in order); return the model string."""
    with _lock:
        _scripts[name] = deque(replies)
    return f"fake/script:{name}"


def _digest(messages: list[dict[str, Any]]) -> str:
    return hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()


def _stream(digest: str, n: int) -> str:
    """At least ``n`` hex digits: ``digest``, then each further block the SHA-256 of the one before
    (a reply shape of any size; the first 64 digits, and so shapes of up to 32 keys, unchanged)."""
    out = [digest]
    while sum(map(len, out)) < n:
        out.append(hashlib.sha256(out[-1].encode()).hexdigest())
    return "".join(out)


_SLOT_RE = re.compile(r'"([A-Za-z][A-Za-z0-9_]*)": (?:<(\d+)-(\d+)>|"<([a-z0-9_|]+)>")')


def _reply_shape(prompt: str) -> list[tuple[str, list[Any]]]:
    """``(code, allowed values)`` per dimension of the last reply shape shown in ``prompt``."""
    lines = [ln for ln in prompt.splitlines() if _SLOT_RE.search(ln)]
    if not lines:
        return [(ax, list(range(1, 7))) for ax in AXES]
    return [(m[0], list(range(int(m[1]), int(m[2]) + 1)) if m[1] else m[3].split("|"))
            for m in _SLOT_RE.findall(lines[-1])]


_CODE_RE = re.compile(r"^Answer code: ([0-9a-f]{16})$", re.MULTILINE)  # mindeval.judging.answer.ANSWER_CODE_RE


def _answer_code(messages: list[dict[str, Any]]) -> str | None:
    """The judge round's answer code named in the request (the judge's answer channel)."""
    hits = [m for msg in messages for m in _CODE_RE.findall(str(msg.get("content", "")))]
    return hits[-1] if hits else None


def _without_code(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The request without its answer-code paragraph (random per run), so replies stay stable."""
    return [{**m, "content": _cut(str(m.get("content", "")))} for m in messages]


def _cut(text: str) -> str:
    at = text.find("\n\nAnswer code: ")
    return text if at < 0 else text[:at + 1]


def _reply(name: str, messages: list[dict[str, Any]]) -> str:
    base, _, variant = name.partition(":")
    if variant and base in ("echo", "judge"):  # another model of the same kind
        return _reply(base, [{"role": "system", "content": f"model {variant}"}, *messages])
    if name == "slow":
        time.sleep(0.3)
        name = "echo"
    if name == "echo":
        last = str(messages[-1].get("content", "")) if messages else ""
        n = sum(1 for m in messages if m.get("role") == "assistant")
        return f"Reply {n + 1} ({_digest(messages)[:6]}). You said: {last[:60]}"
    if name == "judge":
        shape = _reply_shape(str(messages[-1].get("content", "")) if messages else "")
        h = _stream(_digest(_without_code(messages)), 2 * len(shape))
        scores = {ax: choices[int(h[i * 2:i * 2 + 2], 16) % len(choices)] for i, (ax, choices) in enumerate(shape)}
        code = _answer_code(messages)
        return json.dumps({"answer_code": code, **scores} if code else scores)
    if name == "empty":
        return ""
    if name == "error":
        raise ModelCallError("simulated provider failure")
    if name.startswith("script:"):
        key = name.split(":", 1)[1]
        with _lock:
            queue = _scripts.get(key)
            if not queue:
                raise ModelCallError("script exhausted or not registered")
            return queue.popleft().replace("<NONCE>", _answer_code(messages) or "<NONCE>")
    raise ModelCallError(f"unknown fake model 'fake/{name}'")


_NAMES = ("echo", "judge", "slow", "empty", "error")


def check(model: str) -> None:
    """Refuse, before any run starts, a ``fake/`` name no scripted model answers to."""
    name = model.split("/", 1)[1] if "/" in model else model
    base, sep, variant = name.partition(":")
    if base in _NAMES and not (sep and base not in ("echo", "judge")) or (base == "script" and variant):
        return
    raise ModelCallError(f"unknown fake model '{model}': one of fake/echo, fake/echo:NAME, fake/judge, "
                         "fake/judge:NAME, fake/slow, fake/empty, fake/error, fake/script:KEY")


def complete(model: str, messages: list[dict[str, Any]], params: dict[str, Any]) -> Reply:
    """The reply of ``fake/NAME`` (the provider table's handler); counts the call in :data:`CALLS`."""
    name = model.split("/", 1)[-1]
    with _lock:
        CALLS[name] += 1
    text = _reply(name, messages)
    prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in messages)
    return Reply(text, {"prompt_tokens": prompt_tokens, "completion_tokens": len(text.split())})
