"""A benchmark run: profiles → interactions → judgments → run directory.

Re-invoking the same run (same output directory and configuration) resumes where it
stopped and answers every already-made call from the store. A different
configuration is refused with a readable diff unless ``new_run`` is set. The loop plays
each conversation's sessions, judges replies early (reply units) and judges the transcript.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from .. import __version__
from ..budget import (
    Budget,
    BudgetExceeded,
)
from ..errors import MindEvalError, ModelCallError
from ..judging.job import JudgeJob, Transcript
from ..judging.judge import judge_sample
from ..judging.replies import ReplyOutcome, judge_reply
from ..judging.sent import check_sent
from ..llm.gateway import check_api_key
from ..llm.retry import stops_run
from ..prompts import render_patient
from ..records import (
    CONFIG_FILE,
    SUMMARY_FILE,
    Interaction,
    Profile,
    RunSummary,
    SessionInfo,
    Turn,
)
from ..run_options import RunOptions
from ..rundir_guard import check_store, directory_runs, run_dir_lock
from ..schedule import declared, stored_or_drawn
from ..seeds import conversation_key, stored_scheme
from ..sessions import SessionStep, first_session, next_session, session_id
from ..simulate import Speaker, run_interaction
from ..situation import situation_lines, stored_parts
from ..store.calls import CallLog
from ..store.db import Database, redact_url, sqlite_url
from ..store.runs import RunStore, Writer
from ..workers import Progress, bounded, run_async
from .console import format_summary
from .export import export_run
from .prepare import Prepared, prepare
from .resume import OpenedRun, interaction_id, open_run


class Failure(BaseModel):
    """One failed interaction or judgment of this invocation."""

    what: str  # interaction | judgment
    role: str
    model: str
    message: str


STOPS = ("budget", "stop")  # failures entries that stopped the run rather than failed an item


def judge_job(prep: Prepared, log: CallLog, retry_refused: bool = False) -> JudgeJob:
    """The judge of a prepared run (``mindeval run`` and ``mindeval judge``) over ``log``'s store;
    ``retry_refused``: re-judge the stored failures (``--retry-refused``)."""
    c = prep.config
    return JudgeJob(log=log, spec=c.judge, prompt=prep.judge_prompt(), target=c.target,
                    samples=c.judge_samples, retries=c.judge_retries, seed=c.seed, labels=prep.labels,
                    retry_refused=retry_refused)


class SessionCtx(BaseModel):
    """One session of a conversation being worked on: its stored info (None: a single-session
    target), the key its seeds derive from (:func:`mindeval.seeds.conversation_key`; None: the
    interaction id) and its replies judged early."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    info: SessionInfo | None = None
    seed_key: str | None = None
    early: dict[tuple[int, int], Any] = {}
    schedule: dict[str, str] | None = None  # its drawn schedule (target.yaml schedule; None: none declared)


def session_step(prep: Prepared) -> SessionStep | None:
    """The step between sessions of a multi-session target (None: one session)."""
    c, t = prep.config, prep.templates
    if c.target.sessions == 1:
        return None
    return SessionStep(memory=t["memory"], next_session=t["next_session"], clinician=c.clinician, patient=c.patient,
                       seed=c.seed, speakers=prep.target.speakers(),
                       situation_fields=tuple(c.target.situation_fields or ()),
                       situation_opening=c.target.situation_opening, memory_log=prep.memory)


class _Run:
    """One invocation's simulate-and-judge pass: its logs, the judge job, progress and failures.

    Conversations (and their calls) belong to ``opened.conversations``; judgments and judge
    calls to ``opened.run_id`` (the same run unless only the judge changed).
    """

    def __init__(self, opts: RunOptions, prep: Prepared, db: Database, opened: OpenedRun,
                 budget: Budget | None, failures: list[Failure]) -> None:
        self.opts, self.prep, self.opened, self.failures = opts, prep, opened, failures
        self.writer = Writer(db)
        self.log = CallLog(db, opened.run_id, self.writer, guard=budget)
        self.sim_log = self.log if opened.conversations == opened.run_id else CallLog(
            db, opened.conversations, self.writer, guard=budget)
        self.store = self.log.store
        self.job = judge_job(prep, self.log, opts.retry_refused)
        self.complete = ({i.id for i in self.sim_log.store.interactions() if i.status == "complete"}
                         if opts.judge_only else None)
        c = prep.config
        self.progress = Progress(len(prep.profiles) * c.repeats * c.target.sessions * (c.turns + c.judge_samples),
                                 "run", opts.progress)
        self.step = session_step(prep)
        self.stop = asyncio.Event()
        self.early_limit = asyncio.Semaphore(max(1, opts.concurrency))  # replies judged during conversations

    def stop_on(self, exc: ModelCallError) -> None:
        """A bad key, no access, an unknown model or a malformed request fails every request alike."""
        if stops_run(exc) and not self.stop.is_set():
            self.stop.set()
            self.failures.append(Failure(what="stop", role="", model="", message=(
                f"no new interaction started after a {exc.status} from {exc.model or 'the provider'}; "
                "fix it and re-run the same command")))

    def on_reply(self, iid: str, profile: Profile, early: dict[tuple[int, int], asyncio.Task[ReplyOutcome]],
                 memory: str | None = None, system: str | None = None,
                 schedule: dict[str, str] | None = None) -> Callable[[list[Turn]], None] | None:
        """Reply-level judging: a task per sample judging each clinician reply as soon as it is stored
        (its judge sees the turns up to it only), kept in ``early`` for :meth:`judge` to await."""
        if self.job.prompt.guidelines.judging_unit != "reply":
            return None
        c = self.prep.config
        samples = [s for s in range(self.job.samples) if self.job.pending(iid, s)]

        def start(history: list[Turn]) -> None:
            messages = Interaction(id=iid, profile=profile, clinician_model=c.clinician.model, turns=history).messages()
            item = Transcript(interaction_id=iid, profile=profile, messages=messages, memory=memory,
                              clinician_system=system, schedule=schedule)
            for s in samples:
                before = [t for (s_, _), t in early.items() if s_ == s][-1:]
                early[(s, len(history) - 1)] = asyncio.ensure_future(
                    self.judge_early(item, s, len(history) - 1, before[0] if before else None))
        return start

    async def judge_early(self, item: Transcript, sample: int, turn: int,
                          before: asyncio.Task[ReplyOutcome] | None) -> ReplyOutcome:
        """One reply's judging, sent once the previous reply's call has ended (its cache entry
        written: the two never pay for the same prefix) and a slot of the run's concurrency is free."""
        if before is not None:
            await asyncio.wait([before])
        async with self.early_limit:
            return await judge_reply(self.job, item, sample, turn)

    async def settle(self, early: dict[tuple[int, int], asyncio.Task[ReplyOutcome]]) -> None:
        """Wait for every reply judged early (each call saved as it ends; none is cancelled half-paid)."""
        for r in await asyncio.gather(*early.values(), return_exceptions=True):
            if isinstance(r, ModelCallError):
                self.stop_on(r)
            elif isinstance(r, BudgetExceeded) and not self.stop.is_set():
                self.stop.set()
                self.failures.append(Failure(what="budget", role="", model="", message=str(r)))

    async def simulate(self, iid: str, position: int, profile: Profile, step: Callable[[], None],
                       on_reply: Callable[[list[Turn]], None] | None = None,
                       ctx: SessionCtx | None = None) -> list[Turn] | None:
        """The conversation's turns (stored ones reused), or None when it failed (recorded)."""

        def on_turn(history: list[Turn]) -> None:
            step()
            if on_reply is not None and history[-1].role == "clinician":
                on_reply(history)
        c, store = self.prep.config, self.store
        await store.arun(self.sim_log.store.ensure_interaction(iid, position, profile, c.clinician.model,
                                                               c.patient.model))
        ctx = ctx or SessionCtx()
        info = ctx.info
        if info is not None:
            await store.arun(self.sim_log.store.save_session(iid, info))
        prompt, opening = self.patient_side(profile, info, ctx.schedule)
        try:
            turns = await run_interaction(
                self.sim_log, iid,
                patient=Speaker(spec=c.patient, prompt=prompt, end_marker=c.target.patient_can_end),
                clinician=Speaker(spec=c.clinician, prompt=self.clinician_system(profile, info, ctx.schedule)),
                turns=c.turns, opening_line=opening, on_turn=on_turn,
                seed=(c.seed, ctx.seed_key) if ctx.seed_key else c.seed,
            )
        except ModelCallError as exc:
            self.failures.append(Failure(what="interaction", role=getattr(exc, "role", "") or "?",
                                         model=getattr(exc, "model", "") or "?", message=str(exc)))
            await store.arun(store.set_status(iid, "failed", str(exc)))
            self.stop_on(exc)
            return None
        await store.arun(store.set_status(iid, "complete"))
        return turns

    def patient_side(self, profile: Profile, info: SessionInfo | None,
                     schedule: dict[str, str] | None = None) -> tuple[str, str]:
        """The patient's system prompt of one session and its opening line: a structured situation's
        fields fill ``${situation_<name>}`` and ``${situation}``, its ``situation_opening`` field opens;
        ``schedule``: the session's draws (``${schedule_<name>}``)."""
        c, tpl, labels = self.prep.config, self.prep.templates["patient"], self.prep.labels.get(profile.id)
        if info is None:
            return render_patient(tpl, profile, labels, schedule=schedule), c.opening_line
        memory = self.prep.read_by("patient", info) or ""
        parts = stored_parts(info.situation, c.target.situation_fields or ())
        if parts is None:
            return (render_patient(tpl, profile, labels, info.situation or "", schedule=schedule, memory=memory),
                    c.opening_line)
        opening = c.target.situation_opening
        return (render_patient(tpl, profile, labels, situation_lines(parts), parts, schedule, memory=memory),
                parts[opening] if opening else c.opening_line)

    def clinician_system(self, profile: Profile, info: SessionInfo | None,
                         schedule: dict[str, str] | None = None) -> str:
        """The clinician's system prompt of one session (:meth:`Prepared.clinician_system`)."""
        return self.prep.clinician_system(profile, info, schedule)

    async def judge(self, item: Transcript, step: Callable[[], None],
                    early: dict[tuple[int, int], asyncio.Task[ReplyOutcome]] | None = None) -> None:
        """Every sample of one conversation through the one judge loop (``early``: replies being judged)."""
        model = self.job.spec.model
        for sample in range(self.job.samples):
            try:
                j = await judge_sample(self.job, item, sample, early)
            except ModelCallError as exc:  # a permanent judge error: nothing stored, a re-run asks again
                self.failures.append(Failure(what="judgment", role="judge", model=model, message=str(exc)))
                self.stop_on(exc)
                return
            if j is not None and j.parse_status != "ok":
                self.failures.append(Failure(what="judgment", role="judge", model=model,
                                             message=j.error or "judge reply could not be parsed"))
            step()

    async def work(self, entry: tuple[int, Profile, int]) -> None:
        """One conversation: each of its sessions simulated and judged, the step between them made."""
        position, profile, repeat = entry
        c = self.prep.config
        member = interaction_id(self.opened.conversations, position, profile, repeat)
        n = c.target.sessions
        left = [n * (c.turns + c.judge_samples)]  # progress steps of this conversation not yet shown
        ctxs: list[SessionCtx] = []

        def step(k: int = 1) -> None:
            left[0] -= k
            self.progress.advance(k)

        try:
            info = first_session(member, n, *self.prep.target.first_texts(profile)) if n > 1 else None
            turns: list[Turn] | None = None
            for k in range(1, n + 1):
                key = conversation_key(c, profile.id, repeat, k)
                if k > 1:
                    await self.scheduled(SessionInfo(member=member, session=k, sessions=n), key, profile.id, repeat)
                    info = await self.between(info, turns or [], profile, key)
                    if info is None:
                        return
                drawn = await self.scheduled(info or SessionInfo(member=member, session=1, sessions=1), key,
                                             profile.id, repeat)
                if info is not None and drawn is not None:
                    info = drawn
                ctxs.append(SessionCtx(info=info, seed_key=key, schedule=drawn.schedule if drawn else None))
                turns = await self.session(session_id(member, k), position, profile, step, ctxs[-1])
                if turns is None:
                    return
        except BudgetExceeded as exc:
            if not self.stop.is_set():
                self.stop.set()
                self.failures.append(Failure(what="budget", role="", model="", message=str(exc)))
        finally:
            for ctx in ctxs:
                await self.settle(ctx.early)
            self.progress.advance(left[0])  # a failed or stopped conversation completes its share of the bar

    async def scheduled(self, info: SessionInfo, key: str | None, profile_id: str,
                        repeat: int) -> SessionInfo | None:
        """``info`` with its session's draws (target.yaml ``schedule``), stored before any call of the
        session (re-judging only reads them); None when the target declares no schedule."""
        decl = declared(self.prep.target.manifest.schedule)
        if not decl:
            return None
        return await stored_or_drawn(self.sim_log.store, session_id(info.member, info.session), info, decl,
                                     self.prep.config.seed, key or f"{profile_id}:r{repeat}:s{info.session}",
                                     save=self.complete is None)

    async def session(self, iid: str, position: int, profile: Profile, step: Callable[..., None],
                      ctx: SessionCtx) -> list[Turn] | None:
        """Simulate (or resume) and judge one session; its turns, or None when nothing is there to judge."""
        c = self.prep.config
        mine = [c.turns]  # turn steps of this session not yet shown

        def turn_step() -> None:
            mine[0] -= 1
            step()
        if self.complete is not None and iid not in self.complete:
            return None  # nothing stored to judge (re-judging never simulates)
        memory = self.prep.read_by("judge", ctx.info)
        system = self.clinician_system(profile, ctx.info, ctx.schedule)
        turns = await self.simulate(iid, position, profile, turn_step,
                                    self.on_reply(iid, profile, ctx.early, memory, system, ctx.schedule), ctx)
        if turns is None:
            return None
        step(mine[0])  # turns stored by an earlier invocation
        check_sent(self.sim_log, iid, system, self.job.prompt.template)
        messages = Interaction(id=iid, profile=profile, clinician_model=c.clinician.model, turns=turns).messages()
        await self.judge(Transcript(interaction_id=iid, profile=profile, messages=messages, memory=memory,
                                    clinician_system=system, schedule=ctx.schedule), step, ctx.early)
        return turns

    async def between(self, prev: SessionInfo | None, turns: list[Turn], profile: Profile,
                      key: str | None) -> SessionInfo | None:
        """The next session's info: the clinician's notes and the patient's situation (stored calls
        reused; re-judging only reads them), or None when the step failed (recorded)."""
        assert prev is not None and self.step is not None and key is not None
        if self.complete is not None:
            return self.sim_log.store.sessions().get(session_id(prev.member, prev.session + 1))
        try:
            return await next_session(self.sim_log, self.step, prev, turns, profile, key,
                                      self.prep.labels.get(profile.id))
        except ModelCallError as exc:
            self.failures.append(Failure(what="interaction", role=getattr(exc, "role", "") or "?",
                                         model=getattr(exc, "model", "") or "?", message=f"session step: {exc}"))
            self.stop_on(exc)
            return None


async def _run_all(opts: RunOptions, prep: Prepared, db: Database, opened: OpenedRun, budget: Budget | None,
                   failures: list[Failure]) -> list[CallLog]:
    """Simulate and judge every profile on one event loop; return the call logs (their counters)."""
    run = _Run(opts, prep, db, opened, budget, failures)
    try:
        work = [(i, p, r) for i, p in enumerate(prep.profiles) for r in range(prep.config.repeats)]
        await bounded(work, run.work, opts.concurrency, run.stop)
    finally:
        run.progress.close()
        await asyncio.to_thread(run.writer.close)
    return [run.log] if run.sim_log is run.log else [run.sim_log, run.log]


def run_benchmark(opts: RunOptions, *, echo: Callable[[str], None] | None = print,
                  prepared: Prepared | None = None) -> dict[str, Any]:
    """Run (or resume) a benchmark and write the run directory; return the summary.

    ``summary["failures"]`` lists what failed (re-running retries exactly those);
    ``summary["stopped"]`` is set when ``--max-cost`` or a permanent error of any role (400, 401,
    403, 404: bad key, no access, unknown model, malformed request) stopped the run: no new
    interaction starts after one. Every role's API key is checked before the first call.
    ``prepared``: ``prepare(opts)`` when the caller already has it (it is not done twice).
    """
    return run_async(lambda: arun_benchmark(opts, echo=echo, prepared=prepared), opts.concurrency)


def run_sweep(runs_: list[RunOptions], *, echo: Callable[[str], None] | None = print,
              prepared: list[Prepared] | None = None) -> list[dict[str, Any]]:
    """Several runs (e.g. one per clinician), each its own run directory, on one event loop: they
    share the process's rate limits and adaptive concurrency per role and model. Every run is
    prepared (validated) before any model is called; each resumes as a single run does."""
    preps = prepared or [prepare(o) for o in runs_]
    outs = [Path(o.out).resolve() for o in runs_]
    if len(set(outs)) < len(outs):
        raise MindEvalError("two runs of the sweep write the same directory", field="--out")

    async def main() -> list[dict[str, Any]]:
        return list(await asyncio.gather(*(arun_benchmark(o, echo=echo, prepared=p) for o, p in zip(runs_, preps))))

    return run_async(main, sum(o.concurrency for o in runs_))


async def arun_benchmark(opts: RunOptions, *, echo: Callable[[str], None] | None = print,
                         prepared: Prepared | None = None) -> dict[str, Any]:
    """:func:`run_benchmark` on the running event loop, holding the run directory
    (:mod:`mindeval.rundir_guard`: one process per directory, outputs never re-bought silently)."""
    with run_dir_lock(opts.out):
        check_store(opts.out, opts.db, overwrite=opts.overwrite)
        return await _arun_benchmark(opts, echo=echo, prepared=prepared)


async def _arun_benchmark(opts: RunOptions, *, echo: Callable[[str], None] | None = print,
                          prepared: Prepared | None = None) -> dict[str, Any]:
    started = time.perf_counter()
    prep = prepared or prepare(opts)
    for role in ("patient", "clinician", "judge"):  # every role's key before the first call
        check_api_key(getattr(prep.config, role), role)
    out = Path(opts.out)
    out.mkdir(parents=True, exist_ok=True)
    db = Database(opts.db or sqlite_url(out / "run.db"))
    try:
        if opts.seed_scheme is None:  # a run stored with an earlier seed scheme resumes with it
            prep = prep.model_copy(update={"config": stored_scheme(db, prep.config)})
        config = prep.config
        opened = open_run(db, config, opts.new_run, directory_runs(out, opts.db))
        run_id, resumed = opened.run_id, opened.resumed
        db.claim(run_id)  # one process per run, also in a shared --db (mindeval.store.claim)
        budget = None
        if opts.max_cost is not None:
            budget = Budget(opts.max_cost, RunStore(db, run_id).spent_usd())
            budget.check_priced({r: getattr(config, r) for r in ("patient", "clinician", "judge")
                                 if r == "judge" or not opts.judge_only})  # a re-judge run calls only its judge
        made = RunStore(db, run_id).made_with() if resumed else None
        config.model_copy(update={"run_id": run_id, "config_hash": config.hash(), "database": redact_url(db.url),
                                  **({"package_version": made} if made else {})}).write(out / CONFIG_FILE)
        if echo and made and made != __version__:
            echo(f"note: this run was started by mindeval {made}; mindeval {__version__} resumes it "
                 "(config.json keeps the version that started it)")
        if echo:
            verb = "resuming" if resumed else "starting"
            echo(f"{verb} run {run_id}: {len(prep.profiles)} profiles x {config.turns} turns"
                 + (f" x {config.target.sessions} sessions" if config.target.sessions > 1 else "")
                 + (f" x {config.repeats} repeats" if config.repeats > 1 else "") + ", "
                 f"clinician={config.clinician.model} patient={config.patient.model} judge={config.judge.model}"
                 + ("" if opened.conversations == run_id else
                    f"; judging the conversations of run {opened.conversations} (nothing is simulated again)"))
        failures: list[Failure] = []
        logs = await _run_all(opts, prep, db, opened, budget, failures)
        summary = export_run(db, run_id, out, config, prep.guidelines, conversations=opened.conversations)
        summary.update(
            calls_made=sum(g.counters.made for g in logs), calls_reused=sum(g.counters.reused for g in logs),
            calls_failed=sum(g.counters.failed for g in logs),
            elapsed_s=round(time.perf_counter() - started, 2), resumed=resumed,
            failures=[f.model_dump() for f in failures if f.what not in STOPS],
            stopped=next((f.message for f in failures if f.what in STOPS), None),
        )
        RunSummary.model_validate(summary).write(out / SUMMARY_FILE)
        if echo:
            echo(format_summary(summary))
        return summary
    finally:
        db.close()
