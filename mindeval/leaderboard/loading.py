"""Read a run directory (``config.json``, ``judgments.jsonl``, ``interactions.jsonl``).

Every inconsistency in the files is a :class:`MindEvalError` naming file, line, field. The run is
then scored by the one scorer, :func:`mindeval.scoring.score_run` (which conversations count, one
row each, and how they are averaged: the summary's figures), and reduced to what the leaderboard
needs. A run's coverage is how many of the benchmark's conversations (its ``profile_ids`` x
repeats x sessions) were scored; failed judge samples are counted, never replaced.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..corrections import CorrectionTally
from ..errors import MindEvalError
from ..records import (
    CONFIG_FILE,
    INTERACTIONS_FILE,
    JUDGMENTS_FILE,
    BenchmarkConfig,
    InteractionRecord,
    JudgmentRecord,
    RunConfig,
    TargetInfo,
    require_kind,
)
from ..run_verify import verify_run_config
from ..rundir import read_run
from ..scoring import InteractionScore, Unit, criteria, reply_ratings, score_run
from ..scoring.coverage import Coverage
from ..stats.proportion import CategoricalReport, HarmShare
from ..stats.scale_spec import CriterionResult, Rating
from ..targets import target_identity
from .verbosity import VerbosityCounts


def axes_of(target: TargetInfo) -> tuple[str, ...]:
    """The dimensions of a run's target."""
    return tuple(target.axes)


def criteria_of(target: TargetInfo) -> tuple[str, ...]:
    """The leaderboard columns of a target: its axis codes and ``average``."""
    return (*axes_of(target), "average")


class RunSetup(BaseModel):
    """What must be equal for runs to share a leaderboard (judge, patient, profiles)."""

    model_config = ConfigDict(frozen=True)

    judge_protocol: str = "mindeval"
    judge_model: str
    judge_prompt: str
    fewshot: str
    guidelines_version: str
    patient_model: str
    patient_prompt: str
    profile_ids: tuple[str, ...]


class RunData(BaseModel):
    """One run directory reduced to what the leaderboard needs."""

    path: str
    run_id: str
    seed: int | None
    judge_samples: int
    clinician_model: str
    clinician_params: dict[str, Any]
    clinician_prompt: str
    clinician_prompt_sha256: str
    turns: int
    setup: RunSetup
    scores: list[InteractionScore]
    n_interactions: int
    n_failed_interactions: int  # status "failed" (the conversation itself broke)
    n_failed_samples: int  # judge samples that did not parse (excluded)
    n_unscored: int  # interactions without every requested judge sample parsed (excluded)
    n_partly_judged: int = 0  # of those, interactions with some samples parsed and some missing or failed
    n_benchmark: int = 0  # conversations of the benchmark (config.json profile_ids); coverage = scored / this
    n_judge_rounds: int = 0  # every judge round of every sample (refused or not; --retry-refused adds rounds)
    n_refused_rounds: int = 0  # rounds that ended refused (failed), retried or not
    verbosity: VerbosityCounts
    target: TargetInfo
    harm: HarmShare | None = None  # only for targets with harm levels
    levels: CategoricalReport | None = None  # per-level shares, only for categorical targets
    repeats: int = 1  # conversations per profile (``mindeval run --repeats``)
    # Pooled systems (mindeval.leaderboard.pooling): the run directories and patient models pooled.
    pooled: list[str] = Field(default_factory=list)
    # Each scored interaction's parsed judge samples (what pooled runs recompute their shares from).
    samples: dict[str, list[dict[str, float]]] = Field(default_factory=dict, exclude=True)
    # unit reply: one rating per judged reply of the scored conversations (the summary's reading)
    reply_ratings: list[Rating] = Field(default_factory=list, exclude=True)
    # point_criteria: each scored conversation's criterion results (the summary's points block reading)
    criteria: list[CriterionResult] = Field(default_factory=list, exclude=True)
    corrections: CorrectionTally | None = None  # --with-corrections: what the reviewers' corrections changed
    coverage: Coverage | None = None  # partial_judging: units judged of those asked, refused rounds
    session_coverage: dict[int, Coverage] = Field(default_factory=dict)  # partial_judging: per session number


def _short(sha: str) -> str:
    return sha[:12]


def load_run(run_dir: str | Path, with_corrections: bool = False) -> RunData:
    """Load and cross-check one run directory; ``with_corrections``: the judge's values with the
    reviewers' latest corrections applied (:mod:`mindeval.corrections`), counted in ``corrections``."""
    run_dir = Path(run_dir)
    run = read_run(run_dir)
    tally = None
    if with_corrections:
        from ..corrections import apply_corrections, run_corrections

        judgments, tally = apply_corrections(run, run_corrections(run_dir))
        run = run.model_copy(update={"judgments": judgments})
    cpath, ipath, jpath = (run_dir / name for name in (CONFIG_FILE, INTERACTIONS_FILE, JUDGMENTS_FILE))
    if run.config is None:
        raise MindEvalError(f"not a run directory ({CONFIG_FILE} not found)", path=run_dir)
    for path in (ipath, jpath):
        if not path.is_file():
            raise MindEvalError("file not found", path=path)
    if run.config.run_id is None:
        raise MindEvalError("missing required field", path=cpath, field="run_id")
    cfg = require_kind(run.config, BenchmarkConfig, cpath)
    verify_run_config(run_dir, run.config)  # an edited config.json is refused, never ranked
    target = run.target
    interactions, verbosity, n_failed_interactions = _read_interactions(run.interactions, cfg, ipath)
    n_failed_samples = _check_samples(run.judgments, cfg, interactions, target, jpath)
    rs = score_run([Unit.of(i) for i in interactions.values()], run.judgments, samples=cfg.judge_samples,
                   sessions=target.sessions, target=target)
    _check_repeats(rs.conversations, cfg.repeats * target.sessions, jpath)
    scored = rs.conversations
    prompts = cfg.prompts
    return RunData(
        path=str(run_dir),
        run_id=run.config.run_id,
        seed=cfg.seed,
        judge_samples=cfg.judge_samples,
        clinician_model=cfg.clinician.model,
        clinician_params=_clinician_params(cfg),
        clinician_prompt=prompts["clinician"].ref,
        clinician_prompt_sha256=prompts["clinician"].sha256,
        turns=cfg.turns,
        setup=_setup(cfg),
        scores=scored,
        n_interactions=len(interactions),
        n_failed_interactions=n_failed_interactions,
        n_failed_samples=n_failed_samples,
        n_unscored=len(interactions) - len(scored),
        n_partly_judged=rs.n_partly_judged,
        n_benchmark=len(cfg.profile_ids) * cfg.repeats * target.sessions,  # member x session pairs
        verbosity=verbosity,
        target=target,
        harm=rs.harm(),
        levels=rs.levels(),
        repeats=cfg.repeats,
        samples=rs.samples(),
        reply_ratings=reply_ratings(rs) if target.unit == "reply" else [],
        criteria=criteria(rs),
        corrections=tally,
        coverage=rs.coverage,
        session_coverage=rs.session_coverage,
        **_rounds(run.judgments),
    )


def _rounds(judgments: list[JudgmentRecord]) -> dict[str, int]:
    """The run's judge rounds and refused rounds (:func:`mindeval.judging.refusals.refusal_counts`)."""
    from ..judging.refusals import refusal_counts

    c = refusal_counts(judgments)
    return {"n_judge_rounds": c["n_judge_rounds"], "n_refused_rounds": c["n_refused_rounds"]}


def _read_interactions(rows: list[InteractionRecord], cfg: RunConfig, ipath: Path) -> tuple[dict[str, InteractionRecord], VerbosityCounts, int]:
    """The run's interactions by id (checked against config.json), the clinician's verbosity and
    the number of failed conversations."""
    interactions: dict[str, InteractionRecord] = {}
    known_profiles = set(cfg.profile_ids)
    verbosity = VerbosityCounts()
    n_failed_interactions = 0
    for row in rows:
        if row.id in interactions:
            raise MindEvalError(f"duplicate interaction id {row.id!r}", path=ipath, line=row.line, field="id")
        if row.model != cfg.clinician.model:
            raise MindEvalError(f"clinician {row.model!r} differs from config.json ({cfg.clinician.model!r})",
                                path=ipath, line=row.line, field="model")
        if row.profile_id not in known_profiles:
            raise MindEvalError(f"profile {row.profile_id!r} is not in config.json profile_ids",
                                path=ipath, line=row.line, field="profile_id")
        interactions[row.id] = row
        if row.status == "complete":
            verbosity.add_turns(m.content for m in row.messages if m.role == "assistant")
        elif row.status == "failed":
            n_failed_interactions += 1
    return interactions, verbosity, n_failed_interactions


def _check_samples(rows: list[JudgmentRecord], cfg: RunConfig, interactions: dict[str, InteractionRecord],
                   target: TargetInfo, jpath: Path) -> int:
    """Check every judge sample against config.json and the target; return how many failed."""
    axes = axes_of(target)
    seen: set[tuple[str, int]] = set()
    n_failed_samples = 0
    for jrow in rows:
        line = jrow.line
        if jrow.interaction_id not in interactions:
            raise MindEvalError(f"interaction {jrow.interaction_id!r} is not in interactions.jsonl",
                                path=jpath, line=line, field="interaction_id")
        if jrow.judge_model != cfg.judge.model:
            raise MindEvalError(f"judge {jrow.judge_model!r} differs from config.json ({cfg.judge.model!r})",
                                path=jpath, line=line, field="judge_model")
        if jrow.model != cfg.clinician.model:
            raise MindEvalError(f"clinician {jrow.model!r} differs from config.json ({cfg.clinician.model!r})",
                                path=jpath, line=line, field="model")
        key = (jrow.interaction_id, jrow.sample)
        if key in seen:
            raise MindEvalError(f"duplicate judge sample {jrow.sample} for {jrow.interaction_id!r}",
                                path=jpath, line=line, field="sample")
        seen.add(key)
        if jrow.scores is None:
            n_failed_samples += 1
        elif set(jrow.scores) != set(axes):
            raise MindEvalError(f"scores have the axes {', '.join(jrow.scores)}; the run's target "
                                f"{target_identity(target)} has {', '.join(axes)}", path=jpath, line=line,
                                field="scores")
    return n_failed_samples


def _check_repeats(scored: list[InteractionScore], per_profile: int, jpath: Path) -> None:
    """A profile is scored at most once per repeat and session."""
    seen: dict[str, list[str]] = {}
    for s in scored:
        ids = seen.setdefault(s.profile_id, [])
        ids.append(s.interaction_id)
        if len(ids) > per_profile:
            raise MindEvalError(
                f"profile {s.profile_id!r} is judged in {len(ids)} interactions ({ids[0]!r}, {ids[-1]!r}); a run "
                f"scores each profile once per repeat and session ({per_profile})", path=jpath, field="interaction_id")


def _setup(cfg: RunConfig) -> RunSetup:
    """What a run must share with the others on its leaderboard."""
    prompts = cfg.prompts
    fewshot = f"{_short(cfg.fewshot_sha256)} k={cfg.fewshot_k}" if cfg.fewshot_sha256 else "none"
    forgeable = getattr(cfg, "transcript_format", "mindeval") == "authors"
    return RunSetup(
        judge_protocol=cfg.judge_protocol + (", authors' transcript format: forgeable, not hardened" if forgeable else ""),
        judge_model=cfg.judge.model,
        judge_prompt=f"{prompts['judge'].ref} ({_short(prompts['judge'].sha256)})",
        fewshot=fewshot,
        guidelines_version=cfg.guidelines_version,
        patient_model=cfg.patient.model,
        patient_prompt=f"{prompts['patient'].ref} ({_short(prompts['patient'].sha256)})",
        profile_ids=tuple(sorted(set(cfg.profile_ids))),
    )


def _clinician_params(cfg: RunConfig) -> dict[str, Any]:
    params = cfg.clinician.model_dump(exclude={"model"}, exclude_none=True)
    if not params.get("extra"):
        params.pop("extra", None)
    return params
