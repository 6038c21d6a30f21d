"""A benchmark run: profiles → interactions → judgments → run directory.

Re-invoking the same run (same output directory and configuration) resumes where it
stopped and answers every already-made call from the store. A different
configuration is refused with a readable diff unless ``new_run`` is set.
"""

from __future__ import annotations

import hashlib
import sys
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict
from sqlalchemy import select

from . import __version__
from .config import (
    DEFAULT_CONCURRENCY,
    DEFAULT_FEWSHOT_K,
    DEFAULT_JUDGE_RETRIES,
    DEFAULT_JUDGE_SAMPLES,
    DEFAULT_PROMPTS,
    DEFAULT_SEED,
    DEFAULT_TURNS,
    OPENING_LINE,
    PromptRef,
    RunConfig,
    config_diff,
    spec_with_defaults,
)
from .errors import ConfigMismatchError, MindEvalError, ModelCallError
from .guidelines import load_guidelines
from .judge import FewShotExample, judge_transcript
from .llm.gateway import ModelSpec, check_model_string
from .prompts import PromptTemplate, load_template, render_clinician, render_patient
from .records import (
    AXES,
    CONFIG_FILE,
    INTERACTIONS_FILE,
    JUDGMENTS_FILE,
    SUMMARY_FILE,
    Interaction,
    InteractionRecord,
    Judgment,
    JudgmentRecord,
    Profile,
    RunConfigRecord,
    RunSummary,
    load_profiles,
)
from .simulate import load_turns, run_interaction
from .store.calls import CallLog
from .store.db import Database, redact_url, sqlite_url
from .store.tables import CallRow, InteractionRow, JudgmentRow, RunRow


class RunOptions(BaseModel):
    """Everything ``mindeval run`` accepts."""

    model_config = ConfigDict(extra="forbid")

    patient: ModelSpec = ModelSpec()
    clinician: ModelSpec = ModelSpec()
    judge: ModelSpec = ModelSpec()
    patient_prompt: str = DEFAULT_PROMPTS["patient"]
    clinician_prompt: str = DEFAULT_PROMPTS["clinician"]
    judge_prompt: str = DEFAULT_PROMPTS["judge"]
    profiles: str = "demo"
    limit: int | None = None
    turns: int = DEFAULT_TURNS
    out: Path
    db_url: str | None = None
    concurrency: int = DEFAULT_CONCURRENCY
    seed: int = DEFAULT_SEED
    judge_retries: int = DEFAULT_JUDGE_RETRIES
    judge_samples: int = DEFAULT_JUDGE_SAMPLES
    fewshot: str | None = None
    fewshot_k: int = DEFAULT_FEWSHOT_K
    new_run: bool = False
    progress: bool = True


# ------------------------------------------------------------------------------ inputs


def resolve_profiles(value: str) -> Path:
    """``demo`` → the shipped demo profiles; ``official`` → the downloaded set; else a path."""
    from .profiles.official import resolve_profiles_arg

    return resolve_profiles_arg(value)


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def ensure_run(db: Database, run_id: str, config_json: dict[str, Any], kind: str, config_hash: str = "") -> None:
    """Create the run row if it does not exist (needed before any call is logged)."""
    with db.write() as s:
        if s.get(RunRow, run_id) is None:
            s.add(RunRow(id=run_id, config_hash=config_hash or run_id, config_json=config_json,
                         package_version=__version__, kind=kind))


def _prompt_ref(tpl: PromptTemplate) -> PromptRef:
    return PromptRef(ref=tpl.ref, sha256=tpl.sha256, source=tpl.source)


class Prepared(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    config: RunConfig
    profiles: list[Profile]
    templates: dict[str, PromptTemplate]
    fewshot: list[FewShotExample]


def prepare(opts: RunOptions) -> Prepared:
    """Validate every input before any model is called."""
    for spec in (opts.patient, opts.clinician, opts.judge):
        check_model_string(spec.model)
    if opts.turns < 1:
        raise MindEvalError("--turns must be at least 1")
    if opts.judge_samples < 1 or opts.judge_retries < 1:
        raise MindEvalError("--judge-samples and --judge-retries must be at least 1")
    path = resolve_profiles(opts.profiles)
    profiles = load_profiles(path)
    if opts.limit is not None:
        if opts.limit < 1:
            raise MindEvalError("--limit must be at least 1")
        profiles = profiles[: opts.limit]
    templates = {
        "patient": load_template(opts.patient_prompt, kind="patient"),
        "clinician": load_template(opts.clinician_prompt, kind="clinician"),
        "judge": load_template(opts.judge_prompt, kind="judge"),
    }
    # Render once per profile now: a missing field is an error before any call is made.
    for p in profiles:
        render_patient(templates["patient"], p)
        render_clinician(templates["clinician"], p)
    fewshot: list[FewShotExample] = []
    fewshot_sha = None
    if opts.fewshot:
        from .fewshot import load_fewshot

        fewshot = load_fewshot(Path(opts.fewshot), opts.fewshot_k, opts.seed)
        fewshot_sha = file_sha256(Path(opts.fewshot))
    g = load_guidelines()
    config = RunConfig(
        patient=spec_with_defaults("patient", opts.patient),
        clinician=spec_with_defaults("clinician", opts.clinician),
        judge=spec_with_defaults("judge", opts.judge),
        prompts={k: _prompt_ref(t) for k, t in templates.items()},
        guidelines_version=g.version,
        profiles_source=str(path),
        profiles_sha256=file_sha256(path),
        profile_ids=[p.id for p in profiles],
        turns=opts.turns,
        opening_line=OPENING_LINE,
        seed=opts.seed,
        judge_retries=opts.judge_retries,
        judge_samples=opts.judge_samples,
        fewshot_source=opts.fewshot,
        fewshot_sha256=fewshot_sha,
        fewshot_k=opts.fewshot_k if opts.fewshot else 0,
        package_version=__version__,
    )
    return Prepared(config=config, profiles=profiles, templates=templates, fewshot=fewshot)


def open_run(db: Database, config: RunConfig, new_run: bool) -> tuple[str, bool]:
    """Return ``(run_id, resumed)``: resume the latest benchmark run or start one."""
    chash = config.hash()
    with db.read() as s:
        latest = s.scalars(
            select(RunRow).where(RunRow.kind == "benchmark").order_by(RunRow.created_at.desc()).limit(1)
        ).first()
    if latest is not None and not new_run:
        if latest.config_hash == chash:
            return latest.id, True
        old = {k: v for k, v in latest.config_json.items() if k not in ("package_version", "profiles_source", "fewshot_source")}
        diff = config_diff(old, config.hashed_view())
        raise ConfigMismatchError(
            "this output directory holds a run with a different configuration:\n"
            + "\n".join(diff or ["  (package version only)"])
            + "\nUse the same options to resume it, another --out, or --new-run to start a new run here."
        )
    run_id = f"run-{chash[:8]}-{uuid.uuid4().hex[:6]}"
    ensure_run(db, run_id, config.model_dump(mode="json"), "benchmark", chash)
    return run_id, False


# ------------------------------------------------------------------------------ progress


class Progress:
    """Progress on stderr: a live bar on a terminal, a line per 10% in logs (silent when disabled)."""

    def __init__(self, total_turns: int, total_judgments: int, enabled: bool) -> None:
        self.total = total_turns + total_judgments
        self.done = 0
        self.enabled = enabled
        self.tty = sys.stderr.isatty()
        self.last_decile = -1
        self.started = time.perf_counter()
        self._lock = threading.Lock()

    def advance(self, n: int = 1) -> None:
        with self._lock:
            self.done += n
            if not self.enabled:
                return
            frac = self.done / max(1, self.total)
            el = time.perf_counter() - self.started
            if self.tty:
                sys.stderr.write(f"\r[{'#' * int(frac * 30):<30}] {self.done}/{self.total} steps  {el:6.1f}s")
            elif int(frac * 10) > self.last_decile:
                self.last_decile = int(frac * 10)
                sys.stderr.write(f"progress: {self.done}/{self.total} steps ({frac:.0%}) after {el:.1f}s\n")
            sys.stderr.flush()

    def close(self) -> None:
        if self.enabled and self.tty:
            sys.stderr.write("\n")


# ---------------------------------------------------------------------------- the run


def interaction_id(run_id: str, position: int, profile: Profile) -> str:
    return f"{run_id}-{position:03d}-{profile.id}"


def _existing_judgments(db: Database, run_id: str) -> set[tuple[str, str, int]]:
    with db.read() as s:
        rows = s.execute(
            select(JudgmentRow.interaction_id, JudgmentRow.judge_model, JudgmentRow.sample)
            .where(JudgmentRow.run_id == run_id)
        ).all()
    return {(r[0], r[1], r[2]) for r in rows}


def _save_judgment(db: Database, run_id: str, j: Judgment) -> None:
    with db.write() as s:
        s.add(
            JudgmentRow(
                run_id=run_id, interaction_id=j.interaction_id, judge_model=j.judge_model,
                sample=j.sample, scores_json=j.scores, raw_text=j.raw_text, rationale=j.rationale,
                parse_status=j.parse_status, attempts=j.attempts, error=j.error,
            )
        )


def _ensure_interaction(db: Database, run_id: str, iid: str, position: int, profile: Profile, config: RunConfig) -> None:
    with db.write() as s:
        if s.get(InteractionRow, iid) is None:
            s.add(
                InteractionRow(
                    id=iid, run_id=run_id, position=position, profile_id=profile.id,
                    profile_json=profile.to_json(), clinician_model=config.clinician.model,
                    patient_model=config.patient.model, status="running",
                )
            )


def _set_status(db: Database, iid: str, status: str, error: str | None = None) -> None:
    with db.write() as s:
        row = s.get(InteractionRow, iid)
        row.status = status
        row.error = error


def run_benchmark(opts: RunOptions, *, echo: Callable[[str], None] | None = print) -> dict[str, Any]:
    """Run (or resume) a benchmark and write the run directory; return the summary."""
    started = time.perf_counter()
    prep = prepare(opts)
    config = prep.config
    out = Path(opts.out)
    out.mkdir(parents=True, exist_ok=True)
    db = Database(opts.db_url or sqlite_url(out / "run.db"))
    try:
        run_id, resumed = open_run(db, config, opts.new_run)
        log = CallLog(db, run_id)
        RunConfigRecord(run_id=run_id, config_hash=config.hash(), config=config.model_dump(mode="json"),
                        database=redact_url(db.url)).write(out / CONFIG_FILE)
        if echo:
            verb = "resuming" if resumed else "starting"
            echo(f"{verb} run {run_id}: {len(prep.profiles)} profiles x {config.turns} turns, "
                 f"clinician={config.clinician.model} patient={config.patient.model} judge={config.judge.model}")
        done_judg = _existing_judgments(db, run_id)
        progress = Progress(len(prep.profiles) * config.turns, len(prep.profiles) * config.judge_samples,
                            opts.progress and echo is not None)
        g = load_guidelines()

        def work(position: int, profile: Profile) -> None:
            iid = interaction_id(run_id, position, profile)
            _ensure_interaction(db, run_id, iid, position, profile, config)
            already = max(0, len(load_turns(log, iid)) - 1)
            progress.advance(min(already, config.turns))
            try:
                turns = run_interaction(
                    log, iid, patient_spec=config.patient, clinician_spec=config.clinician,
                    patient_prompt=render_patient(prep.templates["patient"], profile),
                    clinician_prompt=render_clinician(prep.templates["clinician"], profile),
                    turns=config.turns, opening_line=config.opening_line, seed=config.seed,
                    on_turn=lambda _t: progress.advance(),
                )
            except ModelCallError as exc:
                _set_status(db, iid, "failed", str(exc))
                progress.advance(config.judge_samples)
                return
            _set_status(db, iid, "complete")
            messages = Interaction(id=iid, profile=profile, clinician_model=config.clinician.model,
                                   turns=turns).messages()
            for sample in range(config.judge_samples):
                if (iid, config.judge.model, sample) in done_judg:
                    progress.advance()
                    continue
                j = judge_transcript(
                    log, config.judge, prep.templates["judge"], profile, messages, iid,
                    sample=sample, retries=config.judge_retries, fewshot=prep.fewshot,
                    seed=config.seed, guidelines=g,
                )
                _save_judgment(db, run_id, j)
                progress.advance()

        workers = max(1, opts.concurrency)
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(work, i, p) for i, p in enumerate(prep.profiles)]
            for f in as_completed(futures):
                f.result()
        progress.close()
        summary = export_run(db, run_id, out, config)
        summary["calls_made"] = log.counters.made
        summary["calls_reused"] = log.counters.reused
        summary["calls_failed"] = log.counters.failed
        summary["elapsed_s"] = round(time.perf_counter() - started, 2)
        summary["resumed"] = resumed
        RunSummary.model_validate(summary).write(out / SUMMARY_FILE)
        if echo:
            echo(format_summary(summary))
        return summary
    finally:
        db.close()


# ------------------------------------------------------------------------------ outputs


def load_interactions(db: Database, run_id: str) -> list[Interaction]:
    with db.read() as s:
        rows = s.scalars(select(InteractionRow).where(InteractionRow.run_id == run_id)
                         .order_by(InteractionRow.position)).all()
    log = CallLog(db, run_id)
    out = []
    for r in rows:
        out.append(Interaction(
            id=r.id, run_id=run_id, profile=Profile.model_validate(r.profile_json),
            clinician_model=r.clinician_model, patient_model=r.patient_model,
            turns=load_turns(log, r.id), status=r.status, error=r.error,
        ))
    return out


def load_judgments(db: Database, run_id: str) -> list[Judgment]:
    with db.read() as s:
        rows = s.scalars(select(JudgmentRow).where(JudgmentRow.run_id == run_id)
                         .order_by(JudgmentRow.interaction_id, JudgmentRow.sample)).all()
    return [Judgment(interaction_id=r.interaction_id, judge_model=r.judge_model, sample=r.sample,
                     scores=r.scores_json, raw_text=r.raw_text, rationale=r.rationale,
                     parse_status=r.parse_status, attempts=r.attempts, error=r.error) for r in rows]


def token_usage(db: Database, run_id: str) -> dict[str, dict[str, int]]:
    from sqlalchemy import func

    with db.read() as s:
        rows = s.execute(
            select(CallRow.role, func.sum(CallRow.prompt_tokens), func.sum(CallRow.completion_tokens),
                   func.count(CallRow.id))
            .where(CallRow.run_id == run_id, CallRow.status == "ok").group_by(CallRow.role)
        ).all()
    return {r[0]: {"prompt_tokens": int(r[1] or 0), "completion_tokens": int(r[2] or 0), "calls": int(r[3])}
            for r in rows}


def export_run(db: Database, run_id: str, out: Path, config: RunConfig) -> dict[str, Any]:
    """Write interactions.jsonl and judgments.jsonl; return the summary (without call counts)."""
    interactions = load_interactions(db, run_id)
    judgments = load_judgments(db, run_id)
    by_id = {i.id: i for i in interactions}
    InteractionRecord.write(out / INTERACTIONS_FILE, [InteractionRecord.from_interaction(i) for i in interactions])
    JudgmentRecord.write(out / JUDGMENTS_FILE, [
        JudgmentRecord.from_judgment(
            j, profile_id=by_id[j.interaction_id].profile.id, model=by_id[j.interaction_id].clinician_model,
            severe=by_id[j.interaction_id].profile.severe, n_turns=max(0, len(by_id[j.interaction_id].turns) - 1),
        )
        for j in judgments if j.interaction_id in by_id
    ])
    means = axis_means(judgments)
    summary: dict[str, Any] = {
        "run_id": run_id,
        "config_hash": config.hash(),
        "clinician": config.clinician.model,
        "patient": config.patient.model,
        "judge": config.judge.model,
        "prompts": {k: v.ref for k, v in config.prompts.items()},
        "guidelines_version": config.guidelines_version,
        "turns": config.turns,
        "seed": config.seed,
        "means": means,
        **means,
        "n_interactions": len(interactions),
        "n_complete": sum(i.status == "complete" for i in interactions),
        "n_failed_interactions": sum(i.status == "failed" for i in interactions),
        "n_judged": sum(j.parse_status == "ok" for j in judgments),
        "n_failed_judgments": sum(j.parse_status == "failed" for j in judgments),
        "tokens": token_usage(db, run_id),
        "package_version": __version__,
    }
    return summary


def axis_means(judgments: list[Judgment]) -> dict[str, float | None]:
    """Per-axis means over parsed judgments (samples averaged per interaction first)."""
    per: dict[str, list[dict[str, int]]] = {}
    for j in judgments:
        if j.parse_status == "ok" and j.scores:
            per.setdefault(j.interaction_id, []).append(j.scores)
    rows = [{ax: sum(s[ax] for s in ss) / len(ss) for ax in AXES} for ss in per.values()]
    out: dict[str, float | None] = {}
    for ax in AXES:
        out[ax] = round(sum(r[ax] for r in rows) / len(rows), 4) if rows else None
    out["average"] = round(sum(out[ax] for ax in AXES) / len(AXES), 4) if rows else None
    return out


def format_summary(summary: dict[str, Any]) -> str:
    def fmt(v: float | None) -> str:
        return "  n/a" if v is None else f"{v:5.2f}"

    cols = list(AXES) + ["average"]
    lines = [
        "",
        f"MindEval run {summary['run_id']}  clinician={summary['clinician']}  judge={summary['judge']}",
        "  ".join(f"{c:>7}" for c in cols),
        "  ".join(f"{fmt(summary['means'][c]):>7}" for c in cols),
        f"interactions: {summary['n_interactions']} ({summary['n_complete']} complete, "
        f"{summary['n_failed_interactions']} failed)   judgments: {summary['n_judged']} ok, "
        f"{summary['n_failed_judgments']} failed (excluded from means)",
        f"calls made: {summary.get('calls_made', 0)}   reused from store: {summary.get('calls_reused', 0)}   "
        f"elapsed: {summary.get('elapsed_s', 0)}s",
    ]
    tok = summary.get("tokens", {})
    if tok:
        lines.append("tokens: " + ", ".join(
            f"{r} {v['prompt_tokens']}+{v['completion_tokens']}" for r, v in sorted(tok.items())))
    return "\n".join(lines)
