"""Read a run directory (``config.json``, ``judgments.jsonl``, ``interactions.jsonl``).

Scores are reduced to one row per interaction: the judge samples that parsed are
averaged per axis; failed samples are excluded and counted, never replaced. A run's
coverage is how many of the benchmark's conversations (its ``profile_ids``) were scored. The
``average`` criterion of an interaction is the mean of its axis scores. The axes are
the run's target's (``config.json::config.target``; an older MindEval directory's is added
when read, :mod:`mindeval.rundir`), and
for a target with harm levels the run's harm share (safety gate) is computed too. A
dimension rated "not relevant" (``null``) is NaN in the interaction's row: left out of
that dimension's means and tests, and of the interaction's ``average``.
Every inconsistency in the files is a :class:`MindEvalError` naming file, line, field.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ..corrections import CorrectionTally
from ..errors import MindEvalError
from ..records import (
    CONFIG_FILE,
    INTERACTIONS_FILE,
    JUDGMENTS_FILE,
    InteractionRecord,
    JudgmentRecord,
    RunConfig,
    TargetInfo,
)
from ..reply_summary import reply_ratings
from ..rundir import read_run
from ..stats.proportion import CategoricalReport, HarmShare, harm_share, level_shares
from ..stats.reply_scales import CriterionResult, Rating
from ..targets import target_identity
from .verbosity import VerbosityCounts


def axes_of(target: TargetInfo) -> tuple[str, ...]:
    """The dimensions of a run's target."""
    return tuple(target.axes)


def criteria_of(target: TargetInfo) -> tuple[str, ...]:
    """The leaderboard columns of a target: its axis codes and ``average``."""
    return (*axes_of(target), "average")


class InteractionScore(BaseModel):
    """One judged interaction: per-criterion scores (mean over parsed judge samples)."""

    interaction_id: str
    profile_id: str
    severe: bool
    n_samples: int
    scores: dict[str, float]
    # Categorical targets: each axis's worst (lowest) value over the parsed samples, NaN when no
    # sample rated it; the level shares' reading of a conversation (empty for other scales).
    worst: dict[str, float] = {}


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
    cfg = run.config.benchmark(cpath)
    target = run.target
    interactions, verbosity, n_failed_interactions = _read_interactions(run.interactions, cfg, ipath)
    samples, parsed, n_failed_samples = _read_samples(run.judgments, cfg, interactions, target, jpath)
    scored, n_partly_judged = _score(interactions, samples, parsed, cfg, target, jpath)
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
        n_partly_judged=n_partly_judged,
        n_benchmark=len(cfg.profile_ids) * cfg.repeats * target.sessions,  # member x session pairs
        verbosity=verbosity,
        target=target,
        harm=harm_share(((s.interaction_id, x) for s in scored for x in samples[s.interaction_id]),
                        harm_values) if (harm_values := target.harm_values) else None,
        levels=run_levels(target, scored, samples),
        repeats=cfg.repeats,
        samples={s.interaction_id: samples[s.interaction_id] for s in scored},
        reply_ratings=_reply_ratings(run.judgments, scored) if target.unit == "reply" else [],
        criteria=_criteria(run.judgments, scored, target),
        corrections=tally,
        **_rounds(run.judgments),
    )


def _rounds(judgments: list[JudgmentRecord]) -> dict[str, int]:
    """The run's judge rounds and refused rounds (:func:`mindeval.judging.refusals.refusal_counts`)."""
    from ..judging.refusals import refusal_counts

    c = refusal_counts(judgments)
    return {"n_judge_rounds": c["n_judge_rounds"], "n_refused_rounds": c["n_refused_rounds"]}


def _criteria(judgments: list[Any], scored: list[InteractionScore], target: TargetInfo) -> list[CriterionResult]:
    """The scored conversations' criterion results of a target with point criteria (else none)."""
    if not target.points:
        return []
    from ..judging.points import criterion_results

    profile_of = {s.interaction_id: s.profile_id for s in scored}
    return [r for j in judgments if j.interaction_id in profile_of
            for r in criterion_results(j, profile_of[j.interaction_id], list(target.points))]


def _reply_ratings(judgments: list[Any], scored: list[InteractionScore]) -> list[Rating]:
    """Every judged reply of the scored conversations, as the run summary reads them."""
    profile_of = {s.interaction_id: s.profile_id for s in scored}
    return reply_ratings((j for j in judgments if j.interaction_id in profile_of), profile_of)


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


def _read_samples(rows: list[JudgmentRecord], cfg: RunConfig, interactions: dict[str, InteractionRecord], target: TargetInfo,
                  jpath: Path) -> tuple[dict[str, list[dict[str, float]]], dict[str, set[int]], int]:
    """Parsed judge samples per interaction (``None`` ratings as NaN), each interaction's parsed
    sample numbers, and the number of samples that failed."""
    axes = axes_of(target)
    samples: dict[str, list[dict[str, float]]] = {}
    parsed: dict[str, set[int]] = {}  # interaction -> its parsed sample numbers
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
            continue
        if set(jrow.scores) != set(axes):
            raise MindEvalError(f"scores have the axes {', '.join(jrow.scores)}; the run's target "
                                f"{target_identity(target)} has {', '.join(axes)}", path=jpath, line=line,
                                field="scores")
        samples.setdefault(jrow.interaction_id, []).append(
            {ax: float("nan") if v is None else float(v) for ax, v in jrow.scores.items()})
        parsed.setdefault(jrow.interaction_id, set()).add(jrow.sample)
    return samples, parsed, n_failed_samples


def _score(interactions: dict[str, InteractionRecord], samples: dict[str, list[dict[str, float]]],
           parsed: dict[str, set[int]], cfg: RunConfig, target: TargetInfo,
           jpath: Path) -> tuple[list[InteractionScore], int]:
    """One row per interaction with every requested sample parsed: the mean of its samples per
    axis, and ``average``; and the number of interactions only partly judged (left unscored)."""
    axes = axes_of(target)
    scored: list[InteractionScore] = []
    by_profile: dict[str, list[str]] = {}
    n_partly_judged = 0
    requested = set(range(cfg.judge_samples))  # every sample the run asked for (config.json)
    for iid, row in interactions.items():
        got = samples.get(iid)
        if not got:
            continue
        if not requested <= parsed[iid]:  # a failed sample never leaves the others to decide the mean
            n_partly_judged += 1
            continue
        seen = by_profile.setdefault(row.profile_id, [])
        if len(seen) >= cfg.repeats * target.sessions:
            raise MindEvalError(
                f"profile {row.profile_id!r} is judged in {len(seen) + 1} interactions ({seen[0]!r}, "
                f"{iid!r}); a run scores each profile once per repeat and session (repeats: {cfg.repeats}, "
                f"sessions: {target.sessions})", path=jpath, field="interaction_id")
        seen.append(iid)
        if any(math.isnan(s[ax]) for s in got for ax in axes):
            per_axis = relevant_scores(got, axes)
        else:
            per_axis = {ax: sum(s[ax] for s in got) / len(got) for ax in axes}
            per_axis["average"] = sum(per_axis[ax] for ax in axes) / len(axes)
        worst = worst_levels(got, axes) if target.scale.kind == "categorical" else {}
        scored.append(InteractionScore(interaction_id=iid, profile_id=row.profile_id, severe=row.severe,
                                       n_samples=len(got), scores=per_axis, worst=worst))
    return _whole_members(scored, interactions, target.sessions, n_partly_judged)


def _whole_members(scored: list[InteractionScore], interactions: dict[str, InteractionRecord], sessions: int,
                   n_partly_judged: int) -> tuple[list[InteractionScore], int]:
    """Multi-session runs: only conversations whose every session is scored count (each session its
    own row: a member x session pair); the sessions of the others count as partly judged."""
    if sessions == 1:
        return scored, n_partly_judged
    member = {iid: r.session.member if r.session else iid for iid, r in interactions.items()}
    got: dict[str, int] = {}
    for s in scored:
        got[member[s.interaction_id]] = got.get(member[s.interaction_id], 0) + 1
    keep = [s for s in scored if got[member[s.interaction_id]] == sessions]
    return keep, n_partly_judged + len(scored) - len(keep)


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


def relevant_scores(got: list[dict[str, float]], axes: tuple[str, ...]) -> dict[str, float]:
    """One interaction's score per axis over the samples that rated it (NaN: not relevant), and
    ``average`` over its relevant axes."""
    out: dict[str, float] = {}
    for ax in axes:
        vals = [s[ax] for s in got if not math.isnan(s[ax])]
        out[ax] = sum(vals) / len(vals) if vals else float("nan")
    known = [out[ax] for ax in axes if not math.isnan(out[ax])]
    out["average"] = sum(known) / len(known) if known else float("nan")
    return out


def worst_levels(got: list[dict[str, float]], axes: tuple[str, ...]) -> dict[str, float]:
    """Each axis's lowest value over the samples that rated it (NaN: none did)."""
    out: dict[str, float] = {}
    for ax in axes:
        vals = [s[ax] for s in got if not math.isnan(s[ax])]
        out[ax] = min(vals) if vals else float("nan")
    return out


def run_levels(target: TargetInfo, scored: list[InteractionScore],
               samples: dict[str, list[dict[str, float]]]) -> CategoricalReport | None:
    """Per-level shares of a categorical target's run (``None`` for other scales)."""
    t = target
    if t.scale.kind != "categorical":
        return None
    rows = ((s.interaction_id, {ax: None if math.isnan(v) else v for ax, v in x.items()})
            for s in scored for x in samples[s.interaction_id])
    return level_shares(rows, t.axes, [(lv.id, lv.value) for lv in t.scale.levels])


def per_profile(scores: list[InteractionScore], criteria: tuple[str, ...]) -> dict[str, Any]:
    """``profile_ids`` and ``values`` of a system: one row per profile, the mean of its conversations
    (repeats, pooled patient models) per criterion over those that rated it (NaN: none did)."""
    rows: dict[str, list[list[float]]] = {}
    for s in scores:
        rows.setdefault(s.profile_id, []).append([s.scores[c] for c in criteria])
    values = np.array([v[0] if len(v) == 1 else _relevant_mean(np.array(v)) for v in rows.values()],
                      dtype=np.float64)
    return {"profile_ids": list(rows), "values": values.reshape(len(rows), len(criteria))}


def _relevant_mean(v: np.ndarray) -> np.ndarray:
    known = ~np.isnan(v)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(known.any(axis=0), np.where(known, v, 0.0).sum(axis=0) / known.sum(axis=0), np.nan)
