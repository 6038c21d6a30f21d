"""A benchmark run: profiles → interactions → judgments → run directory.

Re-invoking the same run (same output directory and configuration) resumes where it
stopped and answers every already-made call from the store. A different
configuration is refused with a readable diff unless ``new_run`` is set.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from . import __version__
from .budget import (
    Budget,
    BudgetExceeded,
    cached_usage,
    check_max_cost,
    prompt_tokens,
    reply_tokens,
)
from .config import (
    CHARS_PER_TOKEN,
    DEFAULT_PROMPTS,
    JUDGE_PROTOCOL,
    PAPER_JUDGE_PROMPT,
    SEED_SCHEME,
    TOKENS_PER_MESSAGE,
)
from .errors import MindEvalError, ModelCallError
from .files import sha256_file
from .guidelines import Guidelines
from .judging.fewshot import FewShotExample
from .judging.job import JudgeJob, Transcript
from .judging.judge import judge_sample
from .judging.protocols import protocol_label
from .judging.refusals import ADVICE, refusal_counts, refusal_line
from .judging.render import JudgePrompt
from .judging.replies import ReplyOutcome, judge_reply
from .llm.gateway import ModelSpec, check_api_key, check_model_string
from .llm.retry import stops_run
from .profiles.official import resolve_profiles_arg
from .prompts import PromptTemplate, render_clinician, render_patient
from .records import (
    CONFIG_FILE,
    INTERACTIONS_FILE,
    JUDGMENTS_FILE,
    SUMMARY_FILE,
    Interaction,
    InteractionRecord,
    JudgmentRecord,
    Profile,
    PromptRecord,
    Role,
    RunConfig,
    RunSummary,
    SessionInfo,
    Turn,
    Usage,
    load_profiles,
    simulation_view,
)
from .run_config import PromptRef, judge_spec_for_protocol, spec_with_defaults
from .run_options import RunOptions
from .rundir_guard import check_store, run_dir_lock
from .scoring import Unit, score_run, summary_blocks
from .seeds import conversation_key, recorded_scheme, stored_scheme
from .sessions import SessionStep, first_session, next_session, session_id
from .simulate import Speaker, run_interaction
from .store import runs
from .store.calls import CallLog, calls_line
from .store.db import Database, redact_url, sqlite_url
from .store.runs import RunStore, Writer
from .target_folder import target_source
from .targets import Target, load_target
from .workers import Progress, bounded, check_concurrency, run_async

# ------------------------------------------------------------------------------ inputs


def resolve_profiles(value: str) -> Path:
    """``demo`` → the shipped demo profiles; ``official`` → the downloaded set; else a path."""
    return resolve_profiles_arg(value)


def _prompt_ref(tpl: PromptTemplate) -> PromptRef:
    return PromptRef(ref=tpl.ref, sha256=tpl.sha256, source=tpl.source)


class Prepared(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    config: RunConfig
    profiles: list[Profile]
    templates: dict[str, PromptTemplate]
    fewshot: list[FewShotExample]
    guidelines: Guidelines
    target: Target
    labels: dict[str, dict[str, str]] = {}  # profile id -> the label values the templates name

    def judge_prompt(self) -> JudgePrompt:
        """What every judge request of this run shares."""
        c = self.config
        return JudgePrompt(template=self.templates["judge"], guidelines=self.guidelines, protocol=c.judge_protocol,
                           transcript_format=c.transcript_format, fewshot=self.fewshot,
                           speakers=self.target.speakers())


def _profiles_path(opts: RunOptions, target: Target) -> Path:
    """``--profiles`` if given, else the target's profiles, else (MindEval) the demo set."""
    if opts.profiles is not None:
        return resolve_profiles(opts.profiles)
    return target.profiles_path or resolve_profiles("demo")


class JudgeSetup(BaseModel):
    """The judge of a run: its settings (role defaults and the protocol's filled in) and template."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    spec: ModelSpec
    template: PromptTemplate


def judge_setup(target: Target, judge: ModelSpec, prompt: str | None, protocol: str,
                transcript_format: str = "mindeval") -> JudgeSetup:
    """The one judge set-up of every run kind (``mindeval run``/``judge``, ``metaeval judge``):
    ``prompt`` None is the target's judge prompt; the ``paper`` protocol (MindEval's own judge only)
    uses the authors' prompt and sampling settings; the ``authors`` transcript format the user's
    copy of the authors' template."""
    if transcript_format == "authors":
        if protocol != "paper" or not target.manifest.authors_release:
            raise MindEvalError("--transcript-format authors reproduces the authors' judge: it needs "
                                "--judge-protocol paper and the mindeval target", field="--transcript-format")
        if not prompt or not Path(prompt).is_file():
            raise MindEvalError("--transcript-format authors needs --judge-prompt FILE: your copy of the authors' "
                                "judge template (with MindEval front matter)", field="--judge-prompt")
    elif transcript_format != "mindeval":
        raise MindEvalError(f"unknown transcript format {transcript_format!r} (mindeval or authors)",
                            field="--transcript-format")
    elif protocol == "paper":
        if not target.manifest.authors_release:
            raise MindEvalError(f"--judge-protocol paper is MindEval's own judge; target {target.name} "
                                "needs --judge-protocol mindeval", field="--judge-protocol")
        if prompt in (None, DEFAULT_PROMPTS["judge"]):
            prompt = PAPER_JUDGE_PROMPT
    spec = judge_spec_for_protocol(spec_with_defaults("judge", judge), protocol)
    if judge.is_embedded and judge.max_tokens is None and target.guidelines.judging_unit == "reply":
        from .judging.replies import reply_max_tokens

        spec = spec.model_copy(update={"max_tokens": reply_max_tokens(target.guidelines)})
    return JudgeSetup(spec=spec, template=target.template("judge", prompt))


def _answer_prompt(protocol: str, unit: str) -> PromptRecord:
    from .judging.answer import answer_prompt_file

    ref, sha = answer_prompt_file(protocol, unit)
    return PromptRecord(ref=ref, sha256=sha)


def _check_options(opts: RunOptions, turns: int) -> None:
    for spec in (opts.patient, opts.clinician, opts.judge):
        check_model_string(spec.model)
    if turns < 1:
        raise MindEvalError("--turns must be at least 1")
    check_max_cost(opts.max_cost)
    check_concurrency(opts.concurrency)
    if opts.judge_samples < 1 or opts.judge_retries < 1:
        raise MindEvalError("--judge-samples and --judge-retries must be at least 1")


def _fewshot(opts: RunOptions, target: Target) -> tuple[list[FewShotExample], Path | None, str | None]:
    """The judge's few-shot examples, where they came from and their SHA-256: a run directory's corrected
    conversations (:func:`mindeval.corrections.corrected_fewshot`) or an annotated file."""
    from .judging.fewshot import check_fewshot_target, judge_fewshot

    if opts.fewshot_file and Path(opts.fewshot_file).is_dir():
        from .corrections import corrected_fewshot

        examples, sha = corrected_fewshot(opts.fewshot_file, opts.fewshot_k, opts.seed, target.name)
        return examples, Path(opts.fewshot_file), sha
    check_fewshot_target(target.name, target.manifest.authors_release, opts.fewshot_file, opts.fewshot_k)
    examples, path = judge_fewshot(opts.judge_protocol, opts.fewshot_file, opts.fewshot_k, opts.seed)
    return examples, path, sha256_file(path) if path else None


def prepare(opts: RunOptions) -> Prepared:
    """Validate every input before any model is called. The target gives the profiles, prompts,
    guidelines, turns and opening line; explicit options (``--profiles``, ``--turns``,
    ``--ROLE-prompt``) override it."""
    target = load_target(opts.target)
    turns = opts.turns if opts.turns is not None else target.manifest.turns
    _check_options(opts, turns)
    path = _profiles_path(opts, target)
    profiles = load_profiles(path)
    if opts.limit is not None:
        if opts.limit < 1:
            raise MindEvalError("--limit must be at least 1")
        if opts.limit > len(profiles):
            raise MindEvalError(f"{opts.limit} is more than the {len(profiles)} profiles of {path}",
                                field="--limit")
        profiles = profiles[: opts.limit]
    judge = judge_setup(target, opts.judge, opts.judge_prompt, opts.judge_protocol, opts.transcript_format)
    templates = {
        "patient": target.template("patient", opts.patient_prompt),
        "clinician": target.template("clinician", opts.clinician_prompt),
        "judge": judge.template,
    }
    templates.update({r: target.template(r) for r in target.roles_with_prompts()[3:]})  # sessions > 1
    # Render once per profile now: a missing field or label is an error before any call is made.
    labels = target.template_labels(list(templates.values()), profiles)
    for p in profiles:
        render_patient(templates["patient"], p, labels.get(p.id))
        render_clinician(templates["clinician"], p, labels.get(p.id))
    fewshot, fewshot_path, fewshot_sha = _fewshot(opts, target)
    g = target.guidelines
    config = RunConfig(
        patient=spec_with_defaults("patient", opts.patient),
        clinician=spec_with_defaults("clinician", opts.clinician),
        judge=judge.spec,
        prompts={k: _prompt_ref(t) for k, t in templates.items()},
        guidelines_version=g.version,
        profiles_source=str(path),
        profiles_sha256=sha256_file(path),
        profile_ids=[p.id for p in profiles],
        turns=turns,
        opening_line=target.manifest.opening_line,
        seed=opts.seed, seed_scheme=recorded_scheme(opts.seed_scheme or SEED_SCHEME),
        judge_retries=opts.judge_retries,
        judge_samples=opts.judge_samples, repeats=opts.repeats,
        fewshot_source=str(fewshot_path) if fewshot_path else None,
        fewshot_sha256=fewshot_sha,
        fewshot_k=len(fewshot),
        judge_protocol=opts.judge_protocol,
        target=target.block(), **target_source(opts.target, target),
        transcript_format=opts.transcript_format,
        answer_prompt=None if opts.transcript_format == "authors" else _answer_prompt(opts.judge_protocol, g.judging_unit),
        package_version=__version__,
    )
    return Prepared(config=config, profiles=profiles, templates=templates, fewshot=fewshot, guidelines=g,
                    target=target, labels=labels)


# ---------------------------------------------------------------------------- dry run


def estimate_run(prep: Prepared, assumed_replies: dict[str, int] | None = None) -> dict[str, dict[str, Any]]:
    """Calls, tokens and dollars per role for ``prep``, without calling any model.

    Every request is built as the run builds it: each profile's rendered system prompts,
    the opening line, then one reply per turn of the assumed length
    (:func:`mindeval.budget.reply_tokens`; ``assumed_replies`` overrides it per role), so
    the history grows as it will; the judge prompt is the rendered template over a
    transcript of such replies. Prompt caching as the provider would apply it
    (:func:`mindeval.budget.cached_usage`): each turn can read the previous turn's prompt,
    each judge call after the first the judge's shared prefix. One judge attempt per
    sample (no parse retries).
    """
    from .judging.cost import JudgeCost
    from .llm.cost import billed_input_tokens, cost_usd

    c = prep.config
    specs = {"patient": c.patient, "clinician": c.clinician, "judge": c.judge}
    reply = {r: reply_tokens(r, s, assumed=(assumed_replies or {}).get(r)) for r, s in specs.items()}
    usage = {r: Usage() for r in specs}
    calls = dict.fromkeys(specs, 0)
    judge_prompt = prep.judge_prompt()
    judge_seen = 0
    _step_estimate(prep, reply, usage, calls)
    for profile in (p for p in prep.profiles for _ in range(c.repeats * c.target.sessions)):  # every repeat, session
        tags = prep.labels.get(profile.id)
        system = {"patient": prompt_tokens([{"content": render_patient(prep.templates["patient"], profile, tags)}]),
                  "clinician": prompt_tokens([{"content": render_clinician(prep.templates["clinician"], profile,
                                                                           tags)}])}
        history = prompt_tokens([{"content": c.opening_line}])
        last = {"patient": 0, "clinician": 0}
        role: Role = "clinician"
        for _ in range(c.turns):
            prompt = system[role] + history
            usage[role] += cached_usage(specs[role].model, prompt, reply[role], last[role], prompt)
            calls[role] += 1
            last[role] = prompt
            history += reply[role] + TOKENS_PER_MESSAGE
            role = "patient" if role == "clinician" else "clinician"
        filler = [{"role": "user", "content": c.opening_line}] + [
            {"role": "user" if i % 2 == 0 else "assistant",
             "content": "x" * (CHARS_PER_TOKEN * reply["patient" if i % 2 == 0 else "clinician"])}
            for i in range(1, c.turns + 1)]
        nonce = None if c.transcript_format == "authors" else "0" * 16  # the answer code's length
        u, n, judge_seen = JudgeCost(model=c.judge.model, prompt=judge_prompt, reply=reply["judge"], nonce=nonce
                                     ).conversation(profile, filler, tags, c.judge_samples, judge_seen)
        usage["judge"] += u
        calls["judge"] += n
    est: dict[str, dict[str, Any]] = {}
    for role, u in usage.items():
        model = specs[role].model
        billed = billed_input_tokens(model, u)
        est[role] = {"model": model, "calls": calls[role], "reply_tokens": reply[role], **u.model_dump(),
                     "billed_input_tokens": None if billed is None else round(billed),
                     "cost_usd": cost_usd(model, u)}
    return est


def _step_estimate(prep: Prepared, reply: dict[str, int], usage: dict[str, Usage], calls: dict[str, int]) -> None:
    """Add the calls of the step between sessions (sessions > 1): per conversation and session
    after the first, the clinician's notes and the patient's next situation, each over its
    template and a session's transcript (uncached)."""
    c = prep.config
    steps = len(prep.profiles) * c.repeats * (c.target.sessions - 1)
    if not steps:
        return
    transcript = c.turns * (TOKENS_PER_MESSAGE + (reply["patient"] + reply["clinician"]) // 2)
    for role, kind in (("clinician", "memory"), ("patient", "next_session")):
        body = prompt_tokens([{"content": prep.templates[kind].body}]) + transcript
        usage[role] += Usage(prompt_tokens=body * steps, completion_tokens=reply[role] * steps)
        calls[role] += steps


def format_estimate(est: dict[str, dict[str, Any]], n_profiles: int, turns: int) -> str:
    lines = [f"dry run: {n_profiles} profiles x {turns} turns; no model was called",
             f"{'role':<10} {'model':<32} {'calls':>6} {'input tok':>10} {'cache read':>10} {'billed in':>10} "
             f"{'output tok':>10} {'cost $':>9}"]
    for role, e in est.items():
        dollars = "n/a" if e["cost_usd"] is None else f"{e['cost_usd']:.4f}"
        billed = "n/a" if e["billed_input_tokens"] is None else e["billed_input_tokens"]
        lines.append(f"{role:<10} {e['model']:<32} {e['calls']:>6} {e['prompt_tokens']:>10} {e['cached_tokens']:>10} "
                     f"{billed:>10} {e['completion_tokens']:>10} {dollars:>9}")
    priced = [e["cost_usd"] for e in est.values()]
    total = "n/a (a model has no price)" if None in priced else f"${sum(priced):.4f}"
    lines += [
        f"total: {sum(e['calls'] for e in est.values())} calls, estimated {total}",
        "method: every request as the run builds it (each profile's rendered prompts, the whole history "
        "resent each turn, the judge template over the transcript), ~"
        f"{CHARS_PER_TOKEN} characters per token, replies of "
        + ", ".join(f"{r} {e['reply_tokens']}" for r, e in est.items())
        + " tokens (--assume-reply-tokens ROLE=N to change; input grows about linearly with them); "
        "prompt caching as the provider applies it (billed in: price-weighted input); "
        "judge parse retries not included",
    ]
    return "\n".join(lines)


class OpenedRun(BaseModel):
    """The run an invocation works on: its id, the run that holds its conversations (itself,
    or an earlier run of the same simulation with another judge), and whether it resumed."""

    run_id: str
    conversations: str
    resumed: bool


def open_run(db: Database, config: RunConfig, new_run: bool) -> OpenedRun:
    """Resume the run with this configuration, or start one.

    A stored run that differs only in the judge (:func:`mindeval.run_config.simulation_view`)
    lends its conversations: the new run judges them and simulates nothing. Any other
    stored configuration is refused with a diff unless ``new_run``.
    """
    stored = runs.stored_runs(db, "benchmark")
    full = config.hash()
    if not new_run:
        for rid, chash, _ in reversed(stored):
            if chash == full:
                return OpenedRun(run_id=rid, conversations=_owner(stored, rid), resumed=True)
    sim = simulation_view(config.model_dump(mode="json"))
    owner = next((rid for rid, _, cfg in stored if simulation_view(cfg) == sim), None)
    if owner is None:
        run_id, resumed = runs.open_run(db, "benchmark", "run", config.model_dump(mode="json"), full,
                                        config.hashed_view(), new_run=new_run)
        return OpenedRun(run_id=run_id, conversations=run_id, resumed=resumed)
    run_id = f"run-{full[:8]}-{uuid.uuid4().hex[:6]}"
    runs.ensure_run(db, run_id, config.model_dump(mode="json"), "benchmark", full)
    return OpenedRun(run_id=run_id, conversations=_owner(stored, owner), resumed=False)


def _owner(stored: list[tuple[str, str, dict[str, Any]]], run_id: str) -> str:
    """The first stored run with ``run_id``'s simulation: the one whose conversations it judges."""
    sim = simulation_view(next(cfg for rid, _, cfg in stored if rid == run_id))
    return next(rid for rid, _, cfg in stored if simulation_view(cfg) == sim)


# ---------------------------------------------------------------------------- the run


def interaction_id(run_id: str, position: int, profile: Profile, repeat: int = 0) -> str:
    """A conversation's id; repeat 0 keeps the id of a run without repeats, a later repeat adds ``-rN``
    (its seeds: :func:`mindeval.seeds.conversation_key`)."""
    return f"{run_id}-{position:03d}-{profile.id}" + (f"-r{repeat}" if repeat else "")


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


def session_step(prep: Prepared) -> SessionStep | None:
    """The step between sessions of a multi-session target (None: one session)."""
    c, t = prep.config, prep.templates
    if c.target.sessions == 1:
        return None
    return SessionStep(memory=t["memory"], next_session=t["next_session"], clinician=c.clinician, patient=c.patient,
                       seed=c.seed, speakers=prep.target.speakers())


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
                 memory: str | None = None) -> Callable[[list[Turn]], None] | None:
        """Reply-level judging: a task per sample judging each clinician reply as soon as it is stored
        (its judge sees the turns up to it only), kept in ``early`` for :meth:`judge` to await."""
        if self.job.prompt.guidelines.judging_unit != "reply":
            return None
        c = self.prep.config
        samples = [s for s in range(self.job.samples) if self.job.pending(iid, s)]

        def start(history: list[Turn]) -> None:
            messages = Interaction(id=iid, profile=profile, clinician_model=c.clinician.model, turns=history).messages()
            item = Transcript(interaction_id=iid, profile=profile, messages=messages, memory=memory)
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
        c, store, labels = self.prep.config, self.store, self.prep.labels.get(profile.id)
        await store.arun(self.sim_log.store.ensure_interaction(iid, position, profile, c.clinician.model,
                                                               c.patient.model))
        info = (ctx or SessionCtx()).info
        if info is not None:
            await store.arun(self.sim_log.store.save_session(iid, info))
        t = self.prep.templates
        try:
            turns = await run_interaction(
                self.sim_log, iid,
                patient=Speaker(spec=c.patient, prompt=render_patient(t["patient"], profile, labels, *(
                    [info.situation or ""] if info else []))),
                clinician=Speaker(spec=c.clinician, prompt=render_clinician(t["clinician"], profile, labels, *(
                    [info.memory or ""] if info else []))),
                turns=c.turns, opening_line=c.opening_line, on_turn=on_turn,
                seed=(c.seed, ctx.seed_key) if ctx is not None and ctx.seed_key else c.seed,
            )
        except ModelCallError as exc:
            self.failures.append(Failure(what="interaction", role=getattr(exc, "role", "") or "?",
                                         model=getattr(exc, "model", "") or "?", message=str(exc)))
            await store.arun(store.set_status(iid, "failed", str(exc)))
            self.stop_on(exc)
            return None
        await store.arun(store.set_status(iid, "complete"))
        return turns

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
            info, turns = (first_session(member, n) if n > 1 else None), None
            for k in range(1, n + 1):
                if k > 1:
                    info = await self.between(info, turns or [], profile, conversation_key(c, profile.id, repeat, k))
                    if info is None:
                        return
                ctxs.append(SessionCtx(info=info, seed_key=conversation_key(c, profile.id, repeat, k)))
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
        memory = ctx.info.memory if ctx.info is not None else None
        turns = await self.simulate(iid, position, profile, turn_step, self.on_reply(iid, profile, ctx.early, memory),
                                    ctx)
        if turns is None:
            return None
        step(mine[0])  # turns stored by an earlier invocation
        messages = Interaction(id=iid, profile=profile, clinician_model=c.clinician.model, turns=turns).messages()
        await self.judge(Transcript(interaction_id=iid, profile=profile, messages=messages, memory=memory), step,
                         ctx.early)
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


def run_benchmark(opts: RunOptions, *, echo: Callable[[str], None] | None = print) -> dict[str, Any]:
    """Run (or resume) a benchmark and write the run directory; return the summary.

    ``summary["failures"]`` lists what failed (re-running retries exactly those);
    ``summary["stopped"]`` is set when ``--max-cost`` or a permanent error of any role (400, 401,
    403, 404: bad key, no access, unknown model, malformed request) stopped the run: no new
    interaction starts after one. Every role's API key is checked before the first call.
    """
    return run_async(lambda: arun_benchmark(opts, echo=echo), opts.concurrency)


def run_sweep(runs_: list[RunOptions], *, echo: Callable[[str], None] | None = print) -> list[dict[str, Any]]:
    """Several runs (e.g. one per clinician), each its own run directory, on one event loop: they
    share the process's rate limits and adaptive concurrency per role and model. Every run is
    prepared (validated) before any model is called; each resumes as a single run does."""
    for o in runs_:
        prepare(o)
    outs = [Path(o.out).resolve() for o in runs_]
    if len(set(outs)) < len(outs):
        raise MindEvalError("two runs of the sweep write the same directory", field="--out")

    async def main() -> list[dict[str, Any]]:
        return list(await asyncio.gather(*(arun_benchmark(o, echo=echo) for o in runs_)))

    return run_async(main, sum(o.concurrency for o in runs_))


async def arun_benchmark(opts: RunOptions, *, echo: Callable[[str], None] | None = print) -> dict[str, Any]:
    """:func:`run_benchmark` on the running event loop, holding the run directory
    (:mod:`mindeval.rundir_guard`: one process per directory, outputs never re-bought silently)."""
    with run_dir_lock(opts.out):
        check_store(opts.out, opts.db, overwrite=opts.overwrite)
        return await _arun_benchmark(opts, echo=echo)


async def _arun_benchmark(opts: RunOptions, *, echo: Callable[[str], None] | None = print) -> dict[str, Any]:
    started = time.perf_counter()
    prep = prepare(opts)
    for role in ("patient", "clinician", "judge"):  # every role's key before the first call
        check_api_key(getattr(prep.config, role), role)
    out = Path(opts.out)
    out.mkdir(parents=True, exist_ok=True)
    db = Database(opts.db or sqlite_url(out / "run.db"))
    try:
        if opts.seed_scheme is None:  # a run stored with an earlier seed scheme resumes with it
            prep = prep.model_copy(update={"config": stored_scheme(db, prep.config)})
        config = prep.config
        opened = open_run(db, config, opts.new_run)
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


# ------------------------------------------------------------------------------ outputs


def export_run(db: Database, run_id: str, out: Path, config: RunConfig,
               guidelines: Guidelines | None = None, conversations: str | None = None) -> dict[str, Any]:
    """Write interactions.jsonl and judgments.jsonl; return the summary (without call counts).

    ``conversations``: the run holding the conversations when it is not ``run_id`` (a run that
    re-judges them). Means are per axis code of the target; a target with harm levels adds ``harm``.
    """
    store = RunStore(db, run_id)
    sim = store if conversations in (None, run_id) else RunStore(db, conversations)
    interactions = sim.interactions()
    target = config.target
    judgments = store.judgments(config.judge_protocol, target.name)
    by_id = {i.id: i for i in interactions}
    InteractionRecord.write(out / INTERACTIONS_FILE, [InteractionRecord.from_interaction(i) for i in interactions])
    JudgmentRecord.write(out / JUDGMENTS_FILE, [
        JudgmentRecord.from_judgment(
            j, profile_id=by_id[j.interaction_id].profile.id, model=by_id[j.interaction_id].clinician_model,
            severe=by_id[j.interaction_id].profile.severe, n_turns=max(0, len(by_id[j.interaction_id].turns) - 1),
            target=target,
        )
        for j in judgments if j.interaction_id in by_id
    ])
    scored = score_run([Unit.of(i) for i in interactions], judgments, samples=config.judge_samples,
                       sessions=target.sessions, target=target)
    means = scored.means()
    extra = summary_blocks(scored)
    return {
        "run_id": run_id,
        "config_hash": config.hash(),
        "clinician": config.clinician.model,
        "patient": config.patient.model,
        "judge": config.judge.model,
        "judge_protocol": config.judge_protocol,
        "judge_protocol_label": protocol_label(config.judge_protocol, config.transcript_format),
        **({"transcript_format": "authors", "hardened": False} if config.transcript_format == "authors" else {}),
        **extra,
        "prompts": {k: v.ref for k, v in config.prompts.items()},
        "guidelines_version": config.guidelines_version,
        "turns": config.turns,
        "seed": config.seed,
        "means": means,
        **means,
        "n_profiles": len(config.profile_ids),
        **_units(config),
        "n_interactions": len(interactions),
        "n_complete": sum(i.status == "complete" for i in interactions),
        "n_failed_interactions": sum(i.status == "failed" for i in interactions),
        "n_judged": sum(j.parse_status == "ok" for j in judgments),
        "n_failed_judgments": sum(j.parse_status == "failed" for j in judgments),
        **refusal_counts(judgments),
        "judge_samples": config.judge_samples,
        "n_means_over": len(scored.conversations),
        "n_partly_judged": scored.n_partly_judged,
        "tokens": store.usage_by_role() if sim is store else dict(sorted({
            **{r: v for r, v in sim.usage_by_role().items() if r != "judge"},
            **{r: v for r, v in store.usage_by_role().items() if r == "judge"}}.items())),
        "package_version": __version__,
    }


def _units(config: RunConfig) -> dict[str, int]:
    """The summary's unit counts: with --repeats, the benchmark's conversations (profiles x repeats);
    with sessions > 1, its member x session pairs (one interaction per session). Absent without."""
    members = len(config.profile_ids) * config.repeats
    out = {"repeats": config.repeats, "n_conversations": members} if config.repeats > 1 else {}
    if (n := config.target.sessions) > 1:
        out.update(sessions=n, n_members=members, n_conversations=members * n)
    return out


def format_levels(levels: dict[str, Any]) -> list[str]:
    """Summary lines of a ``levels`` block: per dimension, n relevant, not relevant, % per level."""
    lines = []
    for code, d in levels["dimensions"].items():
        parts = [f"{lv} {s['share']:.0%}" if s["share"] is not None else f"{lv} n/a" for lv, s in d["levels"].items()]
        lines.append(f"  {code}: {', '.join(parts)} of {d['n']} relevant ({d['not_relevant']} not relevant)")
    ab = levels["all_best"]
    if ab["n"]:
        lines.append(f"  every dimension at the best level: {ab['k']} of {ab['n']} ({ab['share']:.0%})")
    return lines


def is_complete(summary: dict[str, Any]) -> bool:
    """Every profile simulated and judged, nothing failed, the run not stopped."""
    return (not summary.get("stopped") and summary["n_failed_interactions"] == 0
            and summary["n_failed_judgments"] == 0 and summary["n_means_over"] == n_conversations(summary))


def n_conversations(summary: dict[str, Any]) -> int:
    """The conversations of the run's benchmark: one per profile and repeat."""
    return summary.get("n_conversations", summary["n_profiles"])


def format_failures(failures: list[dict[str, Any]]) -> list[str]:
    """One line per distinct error: what, role, model, count, first message."""
    groups: dict[tuple[str, str, str], list[str]] = {}
    for f in failures:
        groups.setdefault((f["what"], f["role"], f["model"]), []).append(f["message"])
    lines = [f"  {n} {what}{'s' if n > 1 else ''} failed  {role} {model}: {msgs[0].removeprefix(f'{role} {model}: ')}"
             for (what, role, model), msgs in groups.items() for n in [len(msgs)]]
    return lines


def _target_lines(summary: dict[str, Any]) -> list[str]:
    """The summary's target-specific lines: levels, reply-level aggregates, label breakdowns."""
    lines = format_levels(summary["levels"]) if summary.get("levels") else []
    if summary.get("replies"):
        from .reply_summary import format_replies

        lines += format_replies(summary["replies"])
    if summary.get("points"):
        from .reply_summary import format_points

        lines.append(format_points(summary["points"]))
    for field, values in (summary.get("by_label") or {}).items():
        parts = [f"{v} n={b['n']}" + (f" harm {b['harm']['k']}/{b['harm']['n']}" if b.get("harm") else "")
                 for v, b in values.items()]
        lines.append(f"  by {field}: " + "; ".join(parts))
    return lines


def format_summary(summary: dict[str, Any]) -> str:
    def fmt(v: float | None) -> str:
        return "  n/a" if v is None else f"{v:5.2f}"

    cols = list(summary["means"])
    over, total = summary["n_means_over"], n_conversations(summary)
    target = f"  target={summary['target']}" if summary.get("target") else ""
    unit = (f"member x session pairs ({summary['n_members']} members x {summary['sessions']} sessions; a member "
            "counts only when every session is judged)" if summary.get("sessions") else "conversations")
    lines = [
        "",
        f"MindEval run {summary['run_id']}{target}  clinician={summary['clinician']}  judge={summary['judge']} "
        f"({summary.get('judge_protocol', JUDGE_PROTOCOL)} judge protocol)"
        + ("  NOT HARDENED: " + summary["judge_protocol_label"] if summary.get("hardened") is False else ""),
        f"scored {over}/{total} {unit} of the benchmark; means over them"
        + ("" if over == total else "  (INCOMPLETE: re-run the same command to complete what is missing"
           + ("; refused judgments stay refused unless --retry-refused" if summary["n_failed_judgments"] else "")
           + ")")
        + (f"\n  {summary['n_partly_judged']} conversation(s) with some of their {summary.get('judge_samples', 1)} "
           "judge samples failed: not scored (a conversation is scored only when all its samples are)"
           if summary.get("n_partly_judged") else ""),
        "  ".join(f"{c:>7}" for c in cols),
        "  ".join(f"{fmt(summary['means'][c]):>7}" for c in cols),
        f"interactions: {summary['n_interactions']} of {total} started ({summary['n_complete']} complete, "
        f"{summary['n_failed_interactions']} failed)   judgments: {summary['n_judged']} ok, "
        f"{summary['n_failed_judgments']} failed (excluded from means)",
        f"{calls_line(summary.get('calls_made', 0), summary.get('calls_reused', 0))}   "
        f"elapsed: {summary.get('elapsed_s', 0)}s",
    ]
    harm = summary.get("harm")
    if harm and harm.get("n"):
        lo, hi = harm["ci95"]
        lines.insert(5, f"potential harm: {harm['k']} of {harm['n']} conversations ({harm['share']:.0%}; "
                        f"95% CI {lo:.0%}-{hi:.0%}) with any dimension rated at a harm level")
    at = next(i for i, ln in enumerate(lines) if ln.startswith("interactions:"))
    lines[at + 1:at + 1] = [ln for ln in [refusal_line(summary)] if ln]
    lines[at:at] = _target_lines(summary)
    tok = summary.get("tokens", {})
    if tok:
        lines.append(f"{'role':<10} {'calls':>6} {'input tok':>10} {'cache read':>10} {'written':>9} "
                     f"{'billed in':>10} {'output tok':>10} {'cost $':>9}")
        for role, v in sorted(tok.items()):
            dollars = "n/a" if v["cost_usd"] is None else f"{v['cost_usd']:.4f}"
            billed = v.get("billed_input_tokens")
            lines.append(f"{role:<10} {v['calls']:>6} {v['prompt_tokens']:>10} {v['cached_tokens']:>10} "
                         f"{v.get('cache_write_tokens', 0):>9} {'n/a' if billed is None else billed:>10} "
                         f"{v['completion_tokens']:>10} {dollars:>9}")
    failures = summary.get("failures") or []
    if failures:
        lines.append("FAILED:")
        lines += format_failures(failures)
    if summary.get("stopped"):
        spent = [v["cost_usd"] for v in tok.values() if v.get("cost_usd") is not None]
        total = f" (spent ${sum(spent):.4f} in all, as in the table above)" if spent else ""
        lines.append(f"STOPPED: {summary['stopped']}{total}")
    if failures or not is_complete(summary):
        lines.append("Re-run the same command to resume what is missing; completed calls are reused from the "
                     "store, never repeated" + (f"; {ADVICE}." if summary["n_failed_judgments"] else "."))
    return "\n".join(lines)
