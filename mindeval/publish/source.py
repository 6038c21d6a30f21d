"""One run directory as it is published: its rows and configuration scrubbed of secrets
(:mod:`.scrub`) and its scores with their 95% bootstrap intervals (the leaderboard's, one home)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ..corrections import run_corrections
from ..errors import MindEvalError
from ..records import BenchmarkConfig, TargetInfo, require_kind
from ..run_verify import verify_run_config
from ..rundir import read_run
from .scrub import Scrubber


class Score(BaseModel):
    """One criterion of one run: mean over the scored conversations, its interval and n."""

    criterion: str  # a dimension, "average", or "harm_share" (targets with harm levels)
    mean: float
    ci_low: float
    ci_high: float
    n: int
    level: float
    method: str  # how the interval was computed
    resamples: int | None  # bootstrap resamples (None: not a bootstrap interval)
    seed: int | None
    lower_is_better: bool = False
    min_score: float | None = None
    max_score: float | None = None
    unit: str = "points"


class PublishedRun(BaseModel):
    path: str
    run_id: str
    config_hash: str
    clinician: str
    patient: str | None
    judge: str
    judge_protocol: str
    judge_prompt: str  # the judge prompt's ref@version
    target: str
    target_version: str
    scale_min: float | None
    scale_max: float | None
    scale_kind: str
    turns: int | None
    seed: int | None
    n_benchmark: int  # the benchmark's conversations (profiles)
    package_version: str
    config: dict[str, Any]  # config.json, scrubbed
    summary: dict[str, Any] | None  # summary.json, scrubbed
    interactions: list[dict[str, Any]]
    judgments: list[dict[str, Any]]
    scores: list[Score]
    # reviewers' corrections of judge values with provenance (mindeval.corrections); scores stay the judge's
    corrections: list[dict[str, Any]] = []
    redacted: int  # values replaced or dropped as secrets


def _bounds(target: TargetInfo) -> tuple[float | None, float | None]:
    """The score range: an ordinal scale's ends, a categorical scale's lowest and highest level value."""
    sc = target.scale
    if sc.kind == "ordinal":
        return (float(sc.min), float(sc.max)) if sc.min is not None and sc.max is not None else (None, None)
    values = [lv.value for lv in sc.levels]
    return (float(min(values)), float(max(values))) if values else (None, None)


def _scores(run_dir: Path, target: TargetInfo) -> list[Score]:
    """The run's leaderboard row (one home for means, intervals and the harm share)."""
    from ..leaderboard import StatsSettings, build_leaderboard

    settings = StatsSettings()
    lb = build_leaderboard([run_dir], settings, allow_incomplete=True)
    system = lb.table.systems[0]
    lo, hi = _bounds(target)
    scores = [Score(criterion=c, mean=r.mean, ci_low=r.ci_low, ci_high=r.ci_high, n=system.n, level=settings.level,
                    method="percentile bootstrap over profiles", resamples=settings.resamples,
                    seed=settings.seed, min_score=lo, max_score=hi)
              for c, r in system.results.items()]
    scores += [Score(criterion="harm_share", mean=h.share, ci_low=h.ci_low, ci_high=h.ci_high, n=h.n, level=0.95,
                     method="Wilson score interval", resamples=None, seed=None, lower_is_better=True, min_score=0.0,
                     max_score=1.0, unit="proportion")
               for h in lb.safety]
    return scores


def load_published(run_dirs: list[Path]) -> list[PublishedRun]:
    """Each run directory read, checked and scrubbed; a directory given twice is one error line."""
    seen: dict[str, Path] = {}
    out = []
    for run_dir in run_dirs:
        run = read_run(run_dir)
        if run.config is None or run.config.run_id is None:
            raise MindEvalError("not a run directory (config.json with a run_id not found)", path=run_dir)
        if (rid := run.config.run_id) in seen:
            raise MindEvalError(f"run {rid} given twice (also {seen[rid]})", path=run_dir)
        seen[rid] = run_dir
        scrub = Scrubber()
        cfg = require_kind(run.config, BenchmarkConfig, Path(run_dir) / "config.json")
        verify_run_config(run_dir, run.config)  # an edited config.json is refused, never published
        record = scrub(run.config.config_json())  # config.json as written
        summary = scrub(run.summary.model_dump(mode="json")) if run.summary is not None else None
        lo, hi = _bounds(run.target)
        out.append(PublishedRun(
            path=str(run_dir), run_id=rid, config_hash=run.config.config_hash or "",
            clinician=cfg.clinician.model, patient=cfg.patient.model if cfg.patient else None, judge=cfg.judge.model,
            judge_protocol=cfg.judge_protocol, judge_prompt=cfg.prompts["judge"].ref,
            target=run.target.name, target_version=run.target.version,
            scale_min=lo, scale_max=hi, scale_kind=run.target.scale.kind,
            turns=cfg.turns, seed=cfg.seed, n_benchmark=len(cfg.profile_ids),
            package_version=cfg.package_version or (summary or {}).get("package_version") or "unknown",
            config=record, summary=summary,
            interactions=[{"run_id": rid, **scrub(r.model_dump(mode="json"))} for r in run.interactions],
            judgments=[{"run_id": rid, **scrub(j.model_dump(mode="json"))} for j in run.judgments],
            scores=_scores(Path(run_dir), run.target),
            corrections=[scrub(c.provenance()) for c in run_corrections(run_dir)], redacted=scrub.replaced,
        ))
    return out
