"""The call log: every model call is hashed, stored and committed before the next starts.

A request already answered in this run is never sent again: :meth:`CallLog.call`
returns the stored reply instead, which is what makes a killed run resumable at
zero repeated cost. Failed calls are logged too but never reused.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select

from ..errors import ModelCallError
from ..llm.gateway import Completion, ModelSpec, complete
from ..records import Usage
from .db import Database
from .tables import CallRow


def request_hash(
    spec: ModelSpec,
    messages: list[dict[str, str]],
    *,
    response_format: dict[str, Any] | None = None,
    seed: int | None = None,
    tag: str = "",
) -> str:
    """SHA-256 of the canonical request: model, parameters, messages, format, seed, tag."""
    payload = {
        "model": spec.model,
        "params": spec.params(),
        "messages": messages,
        "response_format": response_format,
        "seed": seed,
        "tag": tag,
    }
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@dataclass
class LoggedCall:
    completion: Completion
    call_id: int
    reused: bool


@dataclass
class CallCounters:
    made: int = 0
    reused: int = 0
    failed: int = 0


class CallLog:
    """Model calls of one run, backed by the ``calls`` table."""

    def __init__(self, db: Database, run_id: str) -> None:
        self.db = db
        self.run_id = run_id
        self.counters = CallCounters()
        self._lock = threading.Lock()

    def lookup(self, rhash: str) -> CallRow | None:
        with self.db.read() as s:
            return s.scalars(
                select(CallRow)
                .where(CallRow.run_id == self.run_id, CallRow.request_hash == rhash, CallRow.status == "ok")
                .order_by(CallRow.id.desc())
                .limit(1)
            ).first()

    def call(
        self,
        role: str,
        spec: ModelSpec,
        messages: list[dict[str, str]],
        *,
        response_format: dict[str, Any] | None = None,
        seed: int | None = None,
        tag: str = "",
    ) -> LoggedCall:
        """Return the stored reply for this exact request, or make the call and store it."""
        rhash = request_hash(spec, messages, response_format=response_format, seed=seed, tag=tag)
        row = self.lookup(rhash)
        if row is not None:
            with self._lock:
                self.counters.reused += 1
            return LoggedCall(_completion(row), row.id, reused=True)
        request = {
            "messages": messages,
            "params": spec.params(),
            "response_format": response_format,
            "seed": seed,
        }
        try:
            comp = complete(spec, messages, response_format=response_format, seed=seed)
        except ModelCallError as exc:
            with self.db.write() as s:
                s.add(
                    CallRow(
                        run_id=self.run_id, role=role, tag=tag, request_hash=rhash,
                        model=spec.model, request_json=request, status="error", error=str(exc),
                    )
                )
            with self._lock:
                self.counters.failed += 1
            raise
        with self.db.write() as s:
            new = CallRow(
                run_id=self.run_id, role=role, tag=tag, request_hash=rhash, model=spec.model,
                request_json=request, status="ok", response_text=comp.text,
                reasoning=comp.reasoning, prompt_tokens=comp.usage.prompt_tokens,
                completion_tokens=comp.usage.completion_tokens, latency_s=comp.latency_s,
            )
            s.add(new)
            s.flush()
            call_id = new.id
        with self._lock:
            self.counters.made += 1
        return LoggedCall(comp, call_id, reused=False)


def _completion(row: CallRow) -> Completion:
    return Completion(
        text=row.response_text or "",
        reasoning=row.reasoning,
        usage=Usage(prompt_tokens=row.prompt_tokens, completion_tokens=row.completion_tokens),
        latency_s=row.latency_s,
        model=row.model,
    )
