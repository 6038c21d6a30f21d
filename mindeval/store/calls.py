"""The call log: every model call is hashed, stored and committed before the next step.

A request already answered in this run is never sent again: :meth:`CallLog.call`
returns the stored reply instead, which is what makes a killed run resumable at
zero repeated cost. Failed calls are logged too but never reused.

The hash covers the full request (model, parameters, every message, format, seed,
tag). What is stored is linear in the turns: a request whose messages are an
interaction's stored turns keeps only a reference to them (``ref``), not a copy of
the history per call.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from ..errors import ModelCallError
from ..llm.caching import CachePrefix
from ..llm.gateway import Completion, ModelSpec, acomplete, complete
from ..records import Usage
from ..run_config import hash_config
from .db import Database
from .runs import RunStore, Writer, insert_row, open_run
from .tables import CallRow, utcnow


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


@dataclass(frozen=True, slots=True)
class Request:
    """One model request as the call log records it: the asking role and what :func:`request_hash` covers."""

    role: str
    spec: ModelSpec
    messages: list[dict[str, str]]
    response_format: dict[str, Any] | None = None
    seed: int | None = None
    tag: str = ""

    def hash(self) -> str:
        return request_hash(self.spec, self.messages, response_format=self.response_format, seed=self.seed,
                            tag=self.tag)


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


def calls_line(made: int, reused: int, failed: int = 0) -> str:
    """The summary line of a run's model calls, alike for every command."""
    return f"calls made: {made}   reused from store: {reused}" + (f"   failed: {failed}" if failed else "")


# An operation run in the same transaction as a successful call record (e.g. saving the turn).
AfterCall = Callable[[int, Completion], Callable[[Session], Any]]


@dataclass(frozen=True, slots=True)
class Recording:
    """How a successful call is recorded: ``ref`` replaces the stored copy of its messages
    (they must be reproducible from it); ``after`` is committed together with the call record;
    ``seed_key``: what its seed derives from (:mod:`mindeval.seeds`), kept with the request."""

    ref: dict[str, Any] | None = None
    after: AfterCall | None = None
    seed_key: str | None = None


class CallLog:
    """Model calls of one run, backed by the ``calls`` table.

    ``guard`` (e.g. a :class:`mindeval.budget.Budget`) is asked before every new call
    and told its cost after it.
    """

    def __init__(self, db: Database, run_id: str, writer: Writer | None = None, guard: Any = None) -> None:
        self.db = db
        self.run_id = run_id
        self.store = RunStore(db, run_id, writer)
        self.counters = CallCounters()
        self.guard = guard
        self._index: dict[str, CallRow] | None = None

    def lookup(self, rhash: str) -> CallRow | None:
        if self._index is None:
            self._index = self.store.ok_calls()
        return self._index.get(rhash)

    async def call(
        self, role: str, spec: ModelSpec, messages: list[dict[str, str]], *,
        response_format: dict[str, Any] | None = None, seed: int | None = None, tag: str = "",
        cache_prefix: CachePrefix = None, recording: Recording | None = None,
    ) -> LoggedCall:
        """Return the stored reply for this exact request, or make the call and commit it.

        ``recording`` says how the call's record is written (see :class:`Recording`).
        ``cache_prefix`` only tells the gateway what to cache (not part of the request's identity).
        """
        req = Request(role, spec, messages, response_format, seed, tag)
        rhash = req.hash()
        hit = self._reuse(rhash)
        if hit is not None:
            return hit
        hold = self.guard.reserve(role, spec, messages) if self.guard else None
        try:
            comp = await acomplete(spec, messages, response_format=response_format, seed=seed, role=role,
                                   cache_prefix=cache_prefix)
        except ModelCallError as exc:
            for key, val in (("role", role), ("model", spec.model)):
                if not getattr(exc, key, ""):
                    setattr(exc, key, val)
            if self.guard:
                self.guard.settle(hold, 0.0)
            await self.store.arun(self._record_error(req, rhash, exc))
            raise
        if self.guard:
            self.guard.settle(hold, comp.cost_usd)
        rec = self._record_ok(req, rhash, comp, recording or Recording())
        return self._stored(comp, rhash, await self.store.arun(rec))

    def call_sync(
        self, role: str, spec: ModelSpec, messages: list[dict[str, str]], *, seed: int | None = None,
        tag: str = "", after: AfterCall | None = None,
    ) -> LoggedCall:
        """:meth:`call` for synchronous callers (the annotation app), through the blocking gateway."""
        req = Request(role, spec, messages, seed=seed, tag=tag)
        rhash = req.hash()
        hit = self._reuse(rhash)
        if hit is not None:
            return hit
        try:
            comp = complete(spec, messages, seed=seed, role=role)
        except ModelCallError as exc:
            self.store.run(self._record_error(req, rhash, exc))
            raise
        rec = self._record_ok(req, rhash, comp, Recording(after=after))
        return self._stored(comp, rhash, self.store.run(rec))

    # ---- internals
    def _reuse(self, rhash: str) -> LoggedCall | None:
        row = self.lookup(rhash)
        if row is None:
            return None
        self.counters.reused += 1
        return LoggedCall(_completion(row), row.id, reused=True)

    def _stored(self, comp: Completion, rhash: str, row: CallRow) -> LoggedCall:
        if self._index is not None:
            self._index[rhash] = row
        self.counters.made += 1
        return LoggedCall(comp, row.id, reused=False)

    def _record_error(self, req: Request, rhash: str, exc: ModelCallError):
        self.counters.failed += 1

        def op(s: Session) -> None:
            s.add(CallRow(run_id=self.run_id, role=req.role, tag=req.tag, request_hash=rhash, model=req.spec.model,
                          request_json={"params": req.spec.params()}, status="error", error=str(exc)))
        return op

    def _record_ok(self, req: Request, rhash: str, comp: Completion, recording: Recording):
        spec, after = req.spec, recording.after
        request: dict[str, Any] = {"params": spec.params(), "response_format": req.response_format, "seed": req.seed}
        if comp.seed != req.seed:  # retried after an empty reply: the draw that answered
            request["seed_used"] = comp.seed
        if recording.seed_key is not None:
            request["seed_key"] = recording.seed_key
        if recording.ref is not None:
            request["ref"] = recording.ref
        else:
            request["messages"] = req.messages
        u = comp.usage
        values = dict(
            run_id=self.run_id, role=req.role, tag=req.tag, request_hash=rhash, model=spec.model,
            request_json=request, status="ok", response_text=comp.text, reasoning=comp.reasoning,
            prompt_tokens=u.prompt_tokens, completion_tokens=u.completion_tokens,
            cached_tokens=u.cached_tokens, cache_write_tokens=u.cache_write_tokens,
            cost_usd=comp.cost_usd, latency_s=comp.latency_s, finish_reason=comp.finish_reason, created_at=utcnow(),
        )

        def op(s: Session) -> CallRow:
            row = CallRow(id=insert_row(s, CallRow, values), **values)  # detached copy for the resume index
            if after is not None:
                after(row.id, comp)(s)
            return row
        return op


def _completion(row: CallRow) -> Completion:
    usage = Usage(prompt_tokens=row.prompt_tokens, completion_tokens=row.completion_tokens,
                  cached_tokens=row.cached_tokens or 0, cache_write_tokens=row.cache_write_tokens or 0)
    return Completion(text=row.response_text or "", reasoning=row.reasoning, usage=usage,
                      latency_s=row.latency_s, model=row.model, cost_usd=row.cost_usd,
                      finish_reason=row.finish_reason)


@contextmanager
def logged_run(db_url: str, kind: str, config: dict[str, Any], *, new_run: bool = False,
               config_hash: str | None = None,
               upgrade: Callable[[dict[str, Any]], dict[str, Any] | None] | None = None,
               ) -> Iterator[tuple[CallLog, bool]]:
    """Yield ``(call log, resumed)`` of the run of ``kind`` with ``config`` in ``db_url``.

    The run is created or resumed by :func:`~mindeval.store.runs.open_run` (another
    stored configuration is refused with a diff unless ``new_run``; ``config_hash``: the run's
    own hash instead of :func:`hash_config` of ``config``; ``upgrade``: how an earlier version's
    stored configuration reads today) and held by this process
    (:meth:`~mindeval.store.db.Database.claim`); on exit every queued write is committed and
    the database closed.
    """
    db = Database(db_url)
    try:
        run_id, resumed = open_run(db, kind, config, config_hash or hash_config(config), new_run=new_run,
                                  upgrade=upgrade)
        db.claim(run_id)  # one process per run (mindeval.store.claim)
        writer = Writer(db)
        try:
            yield CallLog(db, run_id, writer), resumed
        finally:
            writer.close()
    finally:
        db.close()
