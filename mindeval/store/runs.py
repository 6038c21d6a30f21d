"""The one storage layer of runs: create/resume a run, save turns and judgments, status, export.

Every run table (runs, calls, interactions, turns, judgments) is written here and
nowhere else. Operations are plain functions of a SQLAlchemy ``Session``; a
:class:`RunStore` runs them either synchronously (the annotation app) or through
its :class:`Writer` — one thread that owns the connection and commits each batch of
queued operations in one transaction (group commit). An ``await store.arun(op)``
returns only after ``op`` is committed, so every call, turn and judgment is durable
before that interaction's next step, while 50 concurrent interactions share one
commit instead of queueing on a lock.
"""

from __future__ import annotations

import asyncio
import json
import queue
import threading
import uuid
from collections.abc import Callable, Collection
from functools import cache
from typing import Any, NamedTuple, TypeVar

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from .. import __version__
from ..errors import ConfigMismatchError
from ..records import Interaction, Judgment, Profile, ReplyRating, SessionInfo, Turn, Usage
from ..run_config import config_diff
from .db import Database
from .tables import (
    CallRow,
    InteractionRow,
    JudgeAttemptRow,
    JudgeNonceRow,
    JudgmentRow,
    ReplyJudgmentRow,
    RunRow,
    SessionRow,
    TurnRow,
)


class AttemptKey(NamedTuple):
    """Which judge attempt: conversation, call part (suffix), judge, sample, round, attempt."""

    interaction_id: str
    part: str
    judge_model: str
    sample: int
    round: int
    attempt: int


T = TypeVar("T")
Op = Callable[[Session], T]
Job = tuple[Op[Any], "asyncio.Future[Any]"]


# ------------------------------------------------------------------------ the writer


class Writer:
    """One thread owning the database connection; queued operations are committed in batches.

    Operations awaited in the same event-loop iteration are handed over together, and
    everything queued when the thread is free is committed in one transaction.
    """

    def __init__(self, db: Database) -> None:
        self.db = db
        self._queue: queue.SimpleQueue[tuple[asyncio.AbstractEventLoop, list[Job]] | None] = queue.SimpleQueue()
        self._pending: list[Job] = []
        self._thread = threading.Thread(target=self._loop, name="mindeval-writer", daemon=True)
        self._thread.start()

    async def run(self, op: Op[T]) -> T:
        """Queue ``op``; return its result once it is committed."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[T] = loop.create_future()
        if not self._pending:
            loop.call_soon(self._hand_over, loop)
        self._pending.append((op, fut))
        return await fut

    def close(self) -> None:
        """Commit what is queued, then stop the thread."""
        self._queue.put(None)
        self._thread.join()

    def _hand_over(self, loop: asyncio.AbstractEventLoop) -> None:
        batch, self._pending = self._pending, []
        self._queue.put((loop, batch))

    def _loop(self) -> None:
        stop = False
        while not stop:
            items = [self._queue.get()]
            while True:  # drain what is queued now: one commit for all of it
                try:
                    items.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            stop = None in items
            by_loop: dict[asyncio.AbstractEventLoop, list[Job]] = {}
            for item in items:
                if item is not None:
                    by_loop.setdefault(item[0], []).extend(item[1])
            for loop, jobs in by_loop.items():
                outcomes = self._commit(jobs)
                try:
                    loop.call_soon_threadsafe(_deliver, outcomes)
                except RuntimeError:  # the loop is gone (interrupted run): the commit stands
                    pass

    def _commit(self, jobs: list[Job]) -> list[tuple[asyncio.Future[Any], bool, Any]]:
        try:
            with self.db.session() as s:
                results = [op(s) for op, _ in jobs]
                s.commit()
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting task
            if len(jobs) == 1:
                return [(jobs[0][1], False, exc)]
            # run each alone: one bad operation must not undo the others
            return [out for job in jobs for out in self._commit([job])]
        return [(fut, True, res) for (_, fut), res in zip(jobs, results, strict=True)]


def _deliver(outcomes: list[tuple[asyncio.Future[Any], bool, Any]]) -> None:
    for fut, ok, value in outcomes:
        if not fut.done():  # a cancelled task no longer waits
            if ok:
                fut.set_result(value)
            else:
                fut.set_exception(value)


def insert_row(s: Session, table: type, values: dict[str, Any]) -> int:
    """Insert one row with a Core statement and return its primary key.

    The hot write path (a call and its turn per model call) skips the ORM's
    unit-of-work flush; objects the session still holds are flushed first, so
    foreign keys to them hold.
    """
    if s.new or s.dirty:
        s.flush()
    return s.connection().execute(_inserts(table), values).inserted_primary_key[0]


@cache
def _inserts(table: type) -> Any:
    return table.__table__.insert()


# ------------------------------------------------------------------------- the store


class RunStore:
    """The tables of one run, written synchronously or through a :class:`Writer`."""

    def __init__(self, db: Database, run_id: str, writer: Writer | None = None) -> None:
        self.db = db
        self.run_id = run_id
        self.writer = writer

    def run(self, op: Op[T]) -> T:
        """Run ``op`` in a transaction now (blocking)."""
        with self.db.write() as s:
            return op(s)

    async def arun(self, op: Op[T]) -> T:
        """Run ``op`` through the writer; return after it is committed."""
        if self.writer is None:
            return self.run(op)
        return await self.writer.run(op)

    # ---- calls
    def ok_calls(self) -> dict[str, CallRow]:
        """Every successful call of the run by request hash (the resume index)."""
        with self.db.read() as s:
            rows = s.scalars(select(CallRow).where(CallRow.run_id == self.run_id, CallRow.status == "ok")
                             .order_by(CallRow.id)).all()
        return {r.request_hash: r for r in rows}

    def system_sha256s(self, iid: str, role: str) -> set[str]:
        """The SHA-256 of every system prompt ``role`` was sent in interaction ``iid``'s turns
        (recorded with each turn's call: :mod:`mindeval.simulate`)."""
        with self.db.read() as s:
            rows = s.scalars(select(CallRow.request_json).where(
                CallRow.run_id == self.run_id, CallRow.status == "ok", CallRow.role == role,
                CallRow.tag.startswith(f"{iid}:", autoescape=True))).all()
        return {str(ref["system_sha256"]) for r in rows
                if isinstance(ref := (r or {}).get("ref"), dict) and ref.get("interaction") == iid
                and "system_sha256" in ref}

    def made_with(self) -> str | None:
        """The mindeval version that started this run (kept when a later version resumes it)."""
        with self.db.read() as s:
            row = s.get(RunRow, self.run_id)
        return None if row is None else row.package_version

    def spent_usd(self) -> float:
        with self.db.read() as s:
            val = s.scalar(select(func.sum(CallRow.cost_usd)).where(CallRow.run_id == self.run_id,
                                                                     CallRow.status == "ok"))
        return float(val or 0.0)

    def usage_by_role(self) -> dict[str, dict[str, Any]]:
        """Calls, tokens (prompt, cache reads and writes, completion), billed input and dollars
        per role over successful calls. ``billed_input_tokens``: input tokens weighted by what
        the provider charges for them (:func:`~mindeval.llm.cost.billed_input_tokens`), None
        when a model has no price; ``uncached_prompt_tokens``: input not read from a cache."""
        from ..llm.cost import billed_input_tokens

        cols = (CallRow.prompt_tokens, CallRow.cached_tokens, CallRow.cache_write_tokens,
                CallRow.completion_tokens, CallRow.cost_usd)
        with self.db.read() as s:
            rows = s.execute(
                select(CallRow.role, CallRow.model, func.count(CallRow.id), *(func.sum(c) for c in cols),
                       func.count(CallRow.cost_usd))
                .where(CallRow.run_id == self.run_id, CallRow.status == "ok")
                .group_by(CallRow.role, CallRow.model).order_by(CallRow.role, CallRow.model)
            ).all()
        out: dict[str, dict[str, Any]] = {}
        for role, model, n, prompt, cached, written, completion, cost, n_priced in rows:
            used = Usage(prompt_tokens=int(prompt or 0), cached_tokens=int(cached or 0),
                         cache_write_tokens=int(written or 0), completion_tokens=int(completion or 0))
            billed = billed_input_tokens(model, used)
            v = out.setdefault(role, {"calls": 0, "prompt_tokens": 0, "cached_tokens": 0, "cache_write_tokens": 0,
                                      "uncached_prompt_tokens": 0, "billed_input_tokens": 0.0,
                                      "completion_tokens": 0, "cost_usd": 0.0})
            v["calls"] += int(n)
            for key in ("prompt_tokens", "cached_tokens", "cache_write_tokens", "completion_tokens"):
                v[key] += getattr(used, key)
            v["uncached_prompt_tokens"] += used.prompt_tokens - used.cached_tokens
            v["billed_input_tokens"] = None if billed is None or v["billed_input_tokens"] is None \
                else v["billed_input_tokens"] + billed
            v["cost_usd"] = None if not n_priced or v["cost_usd"] is None else v["cost_usd"] + float(cost)
        for v in out.values():
            v["billed_input_tokens"] = None if v["billed_input_tokens"] is None else round(v["billed_input_tokens"])
            v["cost_usd"] = None if v["cost_usd"] is None else round(v["cost_usd"], 6)
        return out

    # ---- interactions and turns
    def ensure_interaction(self, iid: str, position: int, profile: Profile, clinician: str,
                           patient: str | None) -> Op[None]:
        def op(s: Session) -> None:
            row = s.get(InteractionRow, iid)
            if row is None:
                s.add(InteractionRow(id=iid, run_id=self.run_id, position=position, profile_id=profile.id,
                                     profile_json=profile.to_json(), clinician_model=clinician,
                                     patient_model=patient, status="running"))
            elif row.status == "failed":  # retried now
                row.status, row.error = "running", None
        return op

    @staticmethod
    def set_status(iid: str, status: str, error: str | None = None) -> Op[None]:
        def op(s: Session) -> None:
            s.execute(update(InteractionRow).where(InteractionRow.id == iid).values(status=status, error=error))
        return op

    @staticmethod
    def add_turn(iid: str, turn: Turn) -> Op[None]:
        values = dict(
            interaction_id=iid, idx=turn.index, role=turn.role, content=turn.content,
            reasoning=turn.reasoning, model=turn.model, author=turn.author,
            prompt_tokens=turn.usage.prompt_tokens, completion_tokens=turn.usage.completion_tokens,
            latency_s=turn.latency_s, call_id=turn.call_id,
        )

        def op(s: Session) -> None:
            insert_row(s, TurnRow, values)
        return op

    def save_session(self, iid: str, info: SessionInfo) -> Op[None]:
        """Insert the session row of ``iid``, or set the fields of ``info`` that are not None
        (the memory in its call's transaction, then the situation in its own)."""
        values = info.model_dump(exclude_none=True)
        if "schedule" in values:
            values["schedule"] = json.dumps(values["schedule"], ensure_ascii=False, sort_keys=True)

        def op(s: Session) -> None:
            row = s.scalars(select(SessionRow).where(SessionRow.run_id == self.run_id,
                                                     SessionRow.interaction_id == iid)).first()
            if row is None:
                s.add(SessionRow(run_id=self.run_id, interaction_id=iid, **values))
            else:
                for k, v in values.items():
                    setattr(row, k, v)
        return op

    def sessions(self) -> dict[str, SessionInfo]:
        """Every stored session of the run by its interaction id (empty for single-session runs)."""
        with self.db.read() as s:
            rows = s.scalars(select(SessionRow).where(SessionRow.run_id == self.run_id)).all()
        return {r.interaction_id: SessionInfo(member=r.member, session=r.session, sessions=r.sessions,
                                              memory=r.memory, situation=r.situation,
                                              memory_call_id=r.memory_call_id,
                                              situation_call_id=r.situation_call_id,
                                              schedule=json.loads(r.schedule) if r.schedule else None,
                                              memory_dropped=r.memory_dropped) for r in rows}

    def interactions(self) -> list[Interaction]:
        sessions = self.sessions()
        with self.db.read() as s:
            rows = s.scalars(select(InteractionRow).where(InteractionRow.run_id == self.run_id)
                             .order_by(InteractionRow.position, InteractionRow.id)).all()
            turns: dict[str, list[Turn]] = {}
            for t in s.scalars(select(TurnRow).join(InteractionRow, InteractionRow.id == TurnRow.interaction_id)
                               .where(InteractionRow.run_id == self.run_id).order_by(TurnRow.idx)):
                turns.setdefault(t.interaction_id, []).append(_turn(t))
        return [Interaction(id=r.id, run_id=self.run_id, profile=Profile.model_validate(r.profile_json),
                            clinician_model=r.clinician_model, patient_model=r.patient_model,
                            turns=turns.get(r.id, []), status=r.status, error=r.error,
                            session=sessions.get(r.id)) for r in rows]

    # ---- judgments
    def judgments(self, protocol: str = "mindeval", target: str = "mindeval", partial: bool = False) -> list[Judgment]:
        """Stored judgments; the run's judge ``protocol`` and ``target`` decide which scores are valid.
        ``partial`` (``partial_judging``): a failed reply-level sample lists its judged replies too."""
        with self.db.read() as s:
            rows = s.scalars(select(JudgmentRow).where(JudgmentRow.run_id == self.run_id)
                             .order_by(JudgmentRow.interaction_id, JudgmentRow.sample)).all()
            replies: dict[tuple[str, str, int], list[ReplyRating]] = {}
            for r in s.scalars(select(ReplyJudgmentRow).where(ReplyJudgmentRow.run_id == self.run_id,
                                                              ReplyJudgmentRow.parse_status == "ok")
                               .order_by(ReplyJudgmentRow.turn)):
                replies.setdefault((r.interaction_id, r.judge_model, r.sample), []).append(_reply(r))
            refused = self._refused_rounds(s)
        return [Judgment(interaction_id=r.interaction_id, judge_model=r.judge_model, sample=r.sample,
                         scores=r.scores_json, raw_text=r.raw_text, rationale=r.rationale,
                         parse_status=r.parse_status, attempts=r.attempts, error=r.error, protocol=protocol,
                         target=target, nonce=r.nonce, answer_channel=r.answer_channel, answers=r.answers_json,
                         replies=replies.get((r.interaction_id, r.judge_model, r.sample))
                         if r.parse_status == "ok" or partial else None, rounds=(r.round or 0) + 1,
                         refused=_earlier(refused.get((r.interaction_id, r.judge_model, r.sample), {}), r.round or 0))
                for r in rows]

    def _refused_rounds(self, s: Session) -> dict[tuple[str, str, int], dict[int, str]]:
        """Per ``(interaction, judge, sample)``: each round's last refusal reason (judge_attempts)."""
        out: dict[tuple[str, str, int], dict[int, str]] = {}
        for a in s.scalars(select(JudgeAttemptRow).where(JudgeAttemptRow.run_id == self.run_id,
                                                         JudgeAttemptRow.status != "ok")
                           .order_by(JudgeAttemptRow.round, JudgeAttemptRow.attempt, JudgeAttemptRow.id)):
            part = f"{a.part}: " if a.part else ""
            out.setdefault((a.interaction_id, a.judge_model, a.sample), {})[a.round] = part + (a.error or a.status)
        return out

    def save_attempt(self, at: AttemptKey, status: str, nonce: str | None, raw_text: str,
                     error: str | None) -> Op[None]:
        """Record one judge attempt (once: a resumed round re-reads its stored calls, adds no row)."""
        key = dict(run_id=self.run_id, **at._asdict())

        def op(s: Session) -> None:
            have = s.scalar(select(JudgeAttemptRow.id).filter_by(**key))
            if have is None:
                s.add(JudgeAttemptRow(**key, status=status, nonce=nonce, raw_text=raw_text, error=error))
        return op

    def attempt_count(self) -> int:
        """Every judge attempt on record in this run (every round, refused or not)."""
        with self.db.read() as s:
            return s.scalar(select(func.count()).select_from(JudgeAttemptRow)
                            .where(JudgeAttemptRow.run_id == self.run_id)) or 0

    def reply_rounds(self, iid: str, judge_model: str, sample: int) -> Op[dict[int, tuple[str, int, ReplyRating | None]]]:
        """Per judged reply of one conversation sample: ``(parse_status, round, rating if ok)``."""

        def op(s: Session) -> dict[int, tuple[str, int, ReplyRating | None]]:
            rows = s.scalars(select(ReplyJudgmentRow).where(
                ReplyJudgmentRow.run_id == self.run_id, ReplyJudgmentRow.interaction_id == iid,
                ReplyJudgmentRow.judge_model == judge_model, ReplyJudgmentRow.sample == sample)).all()
            return {r.turn: (r.parse_status, r.round, _reply(r) if r.parse_status == "ok" else None) for r in rows}
        return op

    def save_reply(self, iid: str, judge_model: str, sample: int, round_: int, rating: ReplyRating | None,
                   j: Judgment, turn: int) -> Op[None]:
        """Insert one reply's judgment (``rating`` None: failed), or replace a failed one retried."""
        values = dict(level=rating.level if rating else None, flags_json=rating.flags if rating else None,
                      parse_status="ok" if rating else "failed", attempts=j.attempts, round=round_,
                      error=None if rating else j.error, raw_text=j.raw_text)

        def op(s: Session) -> None:
            row = s.scalars(select(ReplyJudgmentRow).where(
                ReplyJudgmentRow.run_id == self.run_id, ReplyJudgmentRow.interaction_id == iid,
                ReplyJudgmentRow.judge_model == judge_model, ReplyJudgmentRow.sample == sample,
                ReplyJudgmentRow.turn == turn)).first()
            if row is None:
                s.add(ReplyJudgmentRow(run_id=self.run_id, interaction_id=iid, judge_model=judge_model,
                                       sample=sample, turn=turn, **values))
            else:
                for k, v in values.items():
                    setattr(row, k, v)
        return op

    def judge_nonce(self, key: str, fresh: str) -> Op[str]:
        """The answer code stored under ``key`` (one judgment round), else ``fresh``, stored."""

        def op(s: Session) -> str:
            have = s.scalar(select(JudgeNonceRow.nonce).where(JudgeNonceRow.run_id == self.run_id,
                                                              JudgeNonceRow.key == key))
            if have is not None:
                return have
            s.add(JudgeNonceRow(run_id=self.run_id, key=key, nonce=fresh))
            return fresh
        return op

    def judgment_rounds(self) -> dict[tuple[str, str, int], tuple[str, int]]:
        """``(interaction, judge, sample) -> (status, round)`` of every stored judgment: its
        ``parse_status``, or ``unanswered`` for a failed round whose every attempt on record was a
        failed call (no judge reply was read: nothing refused, so nothing to select on)."""
        with self.db.read() as s:
            rows = s.execute(select(JudgmentRow.interaction_id, JudgmentRow.judge_model, JudgmentRow.sample,
                                    JudgmentRow.parse_status, JudgmentRow.round)
                             .where(JudgmentRow.run_id == self.run_id)).all()
            tried: dict[tuple[str, str, int, int], bool] = {}  # round -> some attempt got a reply
            for a in s.execute(select(JudgeAttemptRow.interaction_id, JudgeAttemptRow.judge_model,
                                      JudgeAttemptRow.sample, JudgeAttemptRow.round, JudgeAttemptRow.status)
                               .where(JudgeAttemptRow.run_id == self.run_id,
                                      ~JudgeAttemptRow.part.startswith("/reply"))):  # reply rounds are their own
                k = (a[0], a[1], a[2], a[3])
                tried[k] = tried.get(k, False) or a[4] != "call_failed"
        out = {}
        for r in rows:
            rnd = r[4] or 0
            unanswered = r[3] == "failed" and tried.get((r[0], r[1], r[2], rnd)) is False
            out[(r[0], r[1], r[2])] = ("unanswered" if unanswered else r[3], rnd)
        return out

    def save_judgment(self, j: Judgment, round_: int = 0) -> Op[None]:
        """Insert a judgment, or update a failed one re-judged with --retry-refused (``round_`` > 0):
        its attempts add to the earlier rounds' (each attempt stays in ``judge_attempts``)."""
        values = dict(scores_json=j.scores, raw_text=j.raw_text, rationale=j.rationale,
                      parse_status=j.parse_status, attempts=j.attempts, error=j.error, round=round_,
                      nonce=j.nonce, answer_channel=j.answer_channel, answers_json=j.answers)

        def op(s: Session) -> None:
            row = s.scalars(select(JudgmentRow).where(
                JudgmentRow.run_id == self.run_id, JudgmentRow.interaction_id == j.interaction_id,
                JudgmentRow.judge_model == j.judge_model, JudgmentRow.sample == j.sample)).first()
            if row is None:
                s.add(JudgmentRow(run_id=self.run_id, interaction_id=j.interaction_id,
                                  judge_model=j.judge_model, sample=j.sample, **values))
            else:
                values["attempts"] = (row.attempts or 0) + j.attempts if round_ > (row.round or 0) else j.attempts
                for k, v in values.items():
                    setattr(row, k, v)
        return op


def _earlier(reasons: dict[int, str], round_: int) -> list[str] | None:
    """Why each round before ``round_`` was refused (None: none was)."""
    out = [reasons.get(r, "refused") for r in range(round_)]
    return out or None


# ---------------------------------------------------------------------- runs: create / resume


NOT_IN_DIFF = ("package_version", "profiles_source", "fewshot_source")
"""Recorded keys a configuration mismatch never lists: the version and where inputs were read from."""


def ensure_run(db: Database, run_id: str, config_json: dict[str, Any], kind: str, config_hash: str = "") -> None:
    """Create the run row if it does not exist (needed before any call is logged)."""
    with db.write() as s:
        if s.get(RunRow, run_id) is None:
            s.add(RunRow(id=run_id, config_hash=config_hash or run_id, config_json=config_json,
                         package_version=__version__, kind=kind))


def open_run(db: Database, kind: str, config_json: dict[str, Any], config_hash: str,
             hashed_view: dict[str, Any] | None = None, *, new_run: bool = False,
             upgrade: Callable[[dict[str, Any]], dict[str, Any] | None] | None = None,
             among: Collection[str] | None = None) -> tuple[str, bool]:
    """Return ``(run_id, resumed)``: resume the latest run of ``kind`` with this hash, or start one.
    ``among``: the stored runs that may be that latest run (None: all; a store shared by several
    output directories passes the one its directory records: :func:`mindeval.rundir_guard.directory_runs`).

    ``upgrade`` reads a configuration stored by an earlier version as today's view (None: not
    readable): a run whose upgraded view equals this one's is the same run, resumed under its
    own id although its stored hash is that of the old form.

    A stored run of the same kind with another configuration is refused with a readable
    diff unless ``new_run`` is set.
    """
    with db.read() as s:
        mine = select(RunRow).where(RunRow.kind == kind)
        if among is not None:
            mine = mine.where(RunRow.id.in_(sorted(among)))
        latest = s.scalars(mine.order_by(RunRow.created_at.desc()).limit(1)).first() \
            if among is None or among else None
    if latest is not None and not new_run:
        view = hashed_view or config_json
        if latest.config_hash == config_hash or (upgrade is not None and upgrade(latest.config_json) == view):
            return latest.id, True
        old = {k: v for k, v in _as_viewed(latest.config_json, config_json, view).items()
               if k not in NOT_IN_DIFF}
        new = {k: v for k, v in view.items() if k not in NOT_IN_DIFF}
        raise ConfigMismatchError(
            "this output directory holds a run with a different configuration:\n"
            + "\n".join(config_diff(old, new) or ["  (package version only)"])
            + "\nUse the same options to resume it, another --out, or --new-run to start a new run here.")
    prefix = "run" if kind == "benchmark" else kind  # a benchmark run's id starts run-
    run_id = f"{prefix}-{config_hash[:8]}-{uuid.uuid4().hex[:6]}"
    ensure_run(db, run_id, config_json, kind, config_hash)
    return run_id, False


def stored_runs(db: Database, kind: str) -> list[tuple[str, str, dict[str, Any]]]:
    """``(run_id, config_hash, config)`` of every run of ``kind`` in ``db``, oldest first."""
    with db.read() as s:
        rows = s.execute(select(RunRow.id, RunRow.config_hash, RunRow.config_json).where(RunRow.kind == kind)
                         .order_by(RunRow.created_at, RunRow.id)).all()
    return [(r[0], r[1], r[2]) for r in rows]


def _as_viewed(old: dict[str, Any], full: dict[str, Any], view: dict[str, Any]) -> dict[str, Any]:
    """``old`` without the keys the hashed view leaves out of ``full`` (e.g. call settings)."""
    out: dict[str, Any] = {}
    for key, val in old.items():
        if key in full and key not in view:
            continue
        if isinstance(val, dict) and isinstance(full.get(key), dict) and isinstance(view.get(key), dict):
            val = _as_viewed(val, full[key], view[key])
        out[key] = val
    return out


# ------------------------------------------------------------------------------- turns


def _reply(r: ReplyJudgmentRow) -> ReplyRating:
    return ReplyRating(turn=r.turn, level=r.level or "", flags=r.flags_json or {})


def _turn(r: TurnRow) -> Turn:
    return Turn(
        index=r.idx, role=r.role, content=r.content, reasoning=r.reasoning, model=r.model,
        author=r.author, usage=Usage(prompt_tokens=r.prompt_tokens, completion_tokens=r.completion_tokens),
        latency_s=r.latency_s, call_id=r.call_id,
    )


def load_turns(db: Database, iid: str) -> list[Turn]:
    """The stored turns of one interaction, in order."""
    with db.read() as s:
        rows = s.scalars(select(TurnRow).where(TurnRow.interaction_id == iid).order_by(TurnRow.idx)).all()
    return [_turn(r) for r in rows]


def save_turn(db: Database, iid: str, turn: Turn) -> None:
    """Commit one turn now (the annotation app's human turns)."""
    with db.write() as s:
        RunStore.add_turn(iid, turn)(s)
