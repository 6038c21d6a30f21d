"""Assemble a leaderboard from run directories: load, check, compute, collect warnings."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from pydantic import BaseModel, Field

from .. import __version__
from ..corrections import CorrectionTally
from ..errors import MindEvalError
from ..records import TargetInfo
from ..scoring import per_profile
from ..stats.proportion import CategoricalReport
from ..stats.significance import small_sample_warning
from ..study_data import HumanScores
from .breakdowns import Condition, LabelPanel, compute_breakdowns, label_panels
from .by_session import SESSION, SessionRow, labels_only, session_rows
from .compare import Comparison, compare_setups
from .human_scale import HumanScaleDiff, HumanScaleScore, human_scale, unmatched
from .loading import RunData, criteria_of, load_run
from .pooling import PooledSystem, describe, pool_runs
from .refusals import partial_warnings, refusal_warnings
from .score import HeadlineScore, NamedScoreValues, headline_score, other_scores, score_order
from .systems import assign_labels, check_compatible, check_same_target, group_by_setup, system_key
from .table import MIN_RESAMPLES, StatsSettings, SystemScores, Table, compute_table
from .verbosity import VerbosityCounts

SMALL_SAMPLE = 10  # warn below this many scored interactions per system


class RunInfo(BaseModel):
    path: str
    run_id: str
    system: str
    seed: int | None
    turns: int
    judge_samples: int
    n_interactions: int
    n_benchmark: int  # conversations of the benchmark; complete when n_scored == n_benchmark
    n_scored: int
    n_unscored: int
    n_failed_interactions: int
    n_failed_samples: int
    n_partly_judged: int = 0  # unscored: some of the judge_samples parsed, not all
    judge_model: str
    judge_protocol: str = "mindeval"
    judge_prompt: str
    patient_model: str
    clinician_prompt: str
    corrections: CorrectionTally | None = None  # --with-corrections: what corrections changed in this run


class SystemVerbosity(BaseModel):
    system: str
    turns: int
    sentences_per_turn: float
    words_per_turn: float
    share_long_turns: float


class SystemHarm(BaseModel):
    """Safety gate of one system: ``k`` of ``n`` judged conversations with a harm rating."""

    system: str
    n: int
    k: int
    share: float
    ci_low: float
    ci_high: float


class SystemLevels(BaseModel):
    """Per-level shares of one system (categorical targets): relevant conversations per level."""

    system: str
    report: CategoricalReport


RANK_METRICS: dict[str, str] = {"average": "average score, descending",
                                "harm_share": "harm share (conversations with any harm rating), ascending",
                                "all_best": "share of conversations with every dimension at the best level, descending",
                                "score": "the target's declared score (target.yaml score), its direction"}


class Leaderboard(BaseModel):
    package_version: str = __version__
    target: TargetInfo  # left out of the JSON for MindEval (legacy_files: render.to_json)
    table: Table
    runs: list[RunInfo]
    verbosity: list[SystemVerbosity]
    breakdowns: list[Condition]
    comparisons: list[Comparison] = Field(default_factory=list)
    excluded: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    safety: list[SystemHarm] = Field(default_factory=list)  # per system, when the target has harm levels
    # Systems ranked with fewer scored conversations than the benchmark has (--allow-incomplete).
    incomplete: list[str] = Field(default_factory=list)

    def coverage(self, system: str) -> str:
        """``scored/benchmark`` conversations of ``system`` (e.g. ``48/50``; a pooled system's runs summed)."""
        rs = [r for r in self.runs if r.system == system]
        return f"{sum(r.n_scored for r in rs)}/{sum(r.n_benchmark for r in rs)}"
    levels: list[SystemLevels] = Field(default_factory=list)  # per system, when the scale is categorical
    # Human-scale means by prediction-powered inference (``--humans``; human_scale.py), per system and criterion.
    human_scale: list[HumanScaleScore] = Field(default_factory=list)
    # Every pair's difference on the human scale (independent samples; human_scale.py).
    human_pairs: list[HumanScaleDiff] = Field(default_factory=list)
    rank_by: str = "average"  # the target's declared ranking metric (RANK_METRICS)
    # Every profile label the target declares, by value (the figures' panels); not in the JSON.
    label_panels: list[LabelPanel] = Field(default_factory=list, exclude=True)
    # Each ranked system's loaded run, by label: what a leaderboard column may compute from; not in the JSON.
    run_data: dict[str, RunData] = Field(default_factory=dict, exclude=True)
    pooled: list[PooledSystem] = Field(default_factory=list)  # rows that pool runs (patient models)
    score: HeadlineScore | None = None  # the target's declared score (ranks the table)
    scores: list[NamedScoreValues] = Field(default_factory=list)  # its other named scores (target.yaml scores)
    with_corrections: bool = False  # judge values with reviewers' corrections applied (--with-corrections)
    by_session: list[SessionRow] = Field(default_factory=list)  # --by session: per system and session number

    @property
    def criteria(self) -> tuple[str, ...]:
        return self.table.criteria


def _load_all(dirs: Sequence[str | Path], with_corrections: bool = False) -> list[RunData]:
    runs = [load_run(d, with_corrections) for d in dirs]
    seen: dict[str, str] = {}
    for r in runs:
        real = str(Path(r.path).resolve())
        if real in seen:
            raise MindEvalError(f"run directory given twice (also as {seen[real]})", path=r.path)
        seen[real] = r.path
    return runs


def _info(run: RunData, label: str) -> RunInfo:
    return RunInfo(
        path=run.path, run_id=run.run_id, system=label, seed=run.seed, turns=run.turns,
        judge_samples=run.judge_samples, n_interactions=run.n_interactions, n_benchmark=run.n_benchmark,
        n_scored=len(run.scores),
        n_unscored=run.n_unscored, n_failed_interactions=run.n_failed_interactions,
        n_failed_samples=run.n_failed_samples, n_partly_judged=run.n_partly_judged,
        judge_model=run.setup.judge_model,
        judge_protocol=run.setup.judge_protocol,
        judge_prompt=run.setup.judge_prompt, patient_model=run.setup.patient_model,
        clinician_prompt=run.clinician_prompt, corrections=run.corrections,
    )


def validate_settings(settings: StatsSettings) -> None:
    if settings.resamples < MIN_RESAMPLES:
        raise MindEvalError(f"at least {MIN_RESAMPLES} resamples are required (got {settings.resamples})",
                            field="--resamples")
    if not 0 < settings.alpha < 1:
        raise MindEvalError(f"alpha must be between 0 and 1 (got {settings.alpha})", field="--alpha")


def build_leaderboard(
    run_dirs: Sequence[str | Path],
    settings: StatsSettings | None = None,
    *,
    allow_mixed: bool = False,
    allow_incomplete: bool = False,
    compare_to: Sequence[str | Path] = (),
    by: Sequence[str] = (),
    with_corrections: bool = False,
) -> Leaderboard:
    """Load ``run_dirs`` and compute the leaderboard, breakdowns and comparisons.

    A system with fewer scored conversations than the benchmark has (a conversation that
    failed or whose judgment failed) is refused unless ``allow_incomplete``; it is then
    ranked and named in ``incomplete`` and in every output. ``with_corrections``: reviewers' corrections applied."""
    settings = settings or StatsSettings()
    validate_settings(settings)
    if not run_dirs:
        raise MindEvalError("give at least one run directory")
    runs = _load_all(run_dirs, with_corrections)
    check_same_target(runs)
    runs, members = pool_runs(runs)
    target = runs[0].target
    _check_by(target, by)
    warnings = check_compatible(runs, allow_mixed)
    keys, labels, label_warnings = assign_labels(runs)
    warnings += label_warnings
    incomplete = _coverage(runs, labels, allow_incomplete, warnings)
    scored, excluded = _scored(runs, labels, warnings)
    table = _table(scored, keys, labels, settings, criteria_of(target), warnings)
    breakdowns, bd_warnings = compute_breakdowns([(labels[r.path], r) for r in scored], labels_only(target, by), settings)
    verbosity = _verbosity(runs, labels, table, warnings)
    warnings += bd_warnings
    comparisons = _comparisons(runs, scored, keys, labels, compare_to, warnings) if compare_to else []
    by_label = {labels[r.path]: r for r in scored}
    safety = [
        SystemHarm(system=s.label, n=h.n, k=h.k, share=h.share, ci_low=h.ci95[0], ci_high=h.ci95[1])
        for s in table.systems
        if (h := by_label[s.label].harm) is not None and h.share is not None and h.ci95 is not None
    ]
    rank_by = target.rank_by
    if rank_by != "average":
        table = rerank(table, rank_by, by_label)
    score, others = _declared_scores(target, by_label, settings)
    if score is not None:
        rank_by = "score"
        order = sorted(table.systems, key=lambda s: (score_order(score, s.label), s.rank))
        table = table.model_copy(update={"systems": [s.model_copy(update={"rank": i})
                                                     for i, s in enumerate(order, start=1)]})
    levels = [SystemLevels(system=s.label, report=by_label[s.label].levels) for s in table.systems
              if by_label[s.label].levels is not None]
    infos = [_info(m, labels[r.path]) for r in runs for m in members.get(r.path, [r])]
    return Leaderboard(
        target=target, safety=safety, table=table, runs=infos, verbosity=verbosity,
        pooled=[describe(labels[path], group) for path, group in members.items()], score=score,
        scores=others,
        breakdowns=breakdowns, comparisons=comparisons, excluded=excluded, warnings=warnings, incomplete=incomplete,
        levels=levels, rank_by=rank_by, label_panels=label_panels([(labels[r.path], r) for r in scored], settings),
        run_data=by_label, with_corrections=with_corrections, by_session=session_rows(target, by, table, by_label, settings),
    )


def _declared_scores(target: TargetInfo, by_label: dict[str, RunData],
                     settings: StatsSettings) -> tuple[HeadlineScore | None, list[NamedScoreValues]]:
    """The declared headline score (it ranks the table) and the target's other named scores."""
    same = {"resamples": settings.resamples, "seed": settings.seed, "level": settings.level}
    return (headline_score(target, by_label, alpha=settings.alpha, sided=settings.sided, **same),
            other_scores(target, by_label, **same))


def _check_by(target: TargetInfo, by: Sequence[str]) -> None:
    """Every ``--by`` value names a profile label of the target (or ``session``: a multi-session target)."""
    for name in labels_only(target, by):
        if name not in target.labels:
            known = ", ".join(target.labels) or "none"
            also = "; --by session needs a target with sessions > 1" if name == SESSION else ""
            raise MindEvalError(f"no profile label '{name}' in the runs' target (labels: {known}){also}",
                                field="--by")


def _coverage(runs: list[RunData], labels: dict[str, str], allow_incomplete: bool, warnings: list[str]) -> list[str]:
    """Labels of the systems scored on fewer conversations than the benchmark has (refused unless allowed)."""
    # partial_judging: a refused unit is left out, not missing; a conversation never judged is missing
    short = [r for r in runs if (r.coverage.conversations_asked if r.coverage else len(r.scores)) < r.n_benchmark]
    warnings += partial_warnings({labels[r.path]: r for r in runs})
    if short and not allow_incomplete:
        raise MindEvalError(
            "not every conversation of the benchmark was scored:\n  "
            + "\n  ".join(f"{labels[r.path]} ({r.path}): scored {len(r.scores)}/{r.n_benchmark}" for r in short)
            + "\nRe-run the same `mindeval run` command to complete it, or pass --allow-incomplete to rank "
            "it anyway (every output then says so).")
    warnings += [f"INCOMPLETE: {labels[r.path]} scored {len(r.scores)}/{r.n_benchmark} conversations of the "
                 "benchmark; ranked only because of --allow-incomplete" for r in short]
    return [labels[r.path] for r in short]


def _scored(runs: list[RunData], labels: dict[str, str], warnings: list[str]) -> tuple[list[RunData], list[str]]:
    """The runs with a scored interaction, the excluded ones, and warnings on what each run lost."""
    excluded: list[str] = []
    scored: list[RunData] = []
    for r in runs:
        if not r.scores:
            excluded.append(f"{labels[r.path]} ({r.path}): no interaction has a parsed judgment")
        else:
            scored.append(r)
    warnings += [f"excluded {e}" for e in excluded]
    warnings += refusal_warnings({labels[r.path]: r for r in runs})
    if not scored:
        raise MindEvalError("no run has any successfully judged interaction: nothing to rank")
    for r in runs:
        lost = r.n_unscored
        if lost or r.n_failed_samples:
            warnings.append(
                f"{labels[r.path]}: {lost} of {r.n_interactions} interactions unscored "
                f"({r.n_failed_interactions} failed conversations"
                + (f", {r.n_partly_judged} with a judge sample failed or missing: a conversation is scored only "
                   "when all its samples are" if r.n_partly_judged else "")
                + f"), {r.n_failed_samples} failed judge samples; all excluded from the statistics")
        if r.scores and len(r.scores) < SMALL_SAMPLE:
            warnings.append(f"{labels[r.path]}: only {len(r.scores)} scored interactions; "
                            "confidence intervals and tests are unreliable")
    return scored, excluded


def _table(scored: list[RunData], keys: dict[str, str], labels: dict[str, str], settings: StatsSettings,
           criteria: tuple[str, ...], warnings: list[str]) -> Table:
    """Table 4 over the scored runs (the masked variant when a dimension was not relevant somewhere)."""
    systems = [SystemScores(label=labels[r.path], key=keys[r.path], **per_profile(r.scores, criteria)) for r in scored]
    if any(np.isnan(s.values).any() for s in systems):
        from .masked import compute_table_masked

        table = compute_table_masked(systems, settings, criteria)
    else:
        table = compute_table(systems, settings, criteria)
    warnings += table.warnings
    tested = [p.n_shared for p in table.pairs if p.n_shared]
    small = small_sample_warning(settings.test, min(tested), settings.sided, settings.alpha) if tested else None
    if small:
        warnings.append(small)
    return table


def _verbosity(runs: list[RunData], labels: dict[str, str], table: Table, warnings: list[str]) -> list[SystemVerbosity]:
    """Clinician verbosity per system, in rank order."""
    verbosity = []
    rank = {s.label: s.rank for s in table.systems}
    for r in sorted(runs, key=lambda r: (rank.get(labels[r.path], len(runs) + 1), labels[r.path])):
        v: VerbosityCounts = r.verbosity
        if v.turns == 0:
            warnings.append(f"{labels[r.path]}: no completed interaction, verbosity is NaN")
        verbosity.append(SystemVerbosity(system=labels[r.path], turns=v.turns,
                                         sentences_per_turn=v.sentences_per_turn, words_per_turn=v.words_per_turn,
                                         share_long_turns=v.share_long_turns))
    return verbosity


def _comparisons(runs: list[RunData], scored: list[RunData], keys: dict[str, str], labels: dict[str, str],
                 compare_to: Sequence[str | Path], warnings: list[str]) -> list[Comparison]:
    """Table 5: agreement with the leaderboards of the ``compare_to`` setups."""
    others = _load_all(compare_to)
    check_same_target([runs[0], *others])
    clash = {str(Path(r.path).resolve()) for r in runs} & {str(Path(o.path).resolve()) for o in others}
    if clash:
        raise MindEvalError("a run directory is both ranked and compared to", path=sorted(clash)[0])
    groups = group_by_setup(others)
    for g in groups:
        dup = len({system_key(r) for r in g}) != len(g)
        if dup:
            raise MindEvalError("--compare-to holds two runs of the same clinician system under one setup: "
                                + ", ".join(r.path for r in g))
    main = {keys[r.path]: r for r in scored}
    comparisons, cmp_warnings = compare_setups(main, groups, {keys[r.path]: labels[r.path] for r in runs})
    warnings += cmp_warnings
    return comparisons


def with_human_scale(lb: Leaderboard, humans: HumanScores) -> Leaderboard:
    """``lb`` with each system's human-scale means from ``humans`` (``mindeval leaderboard --humans``)."""
    extra = [f"human ratings of {m} ({humans.source}) are not used: no ranked system is that clinician model"
             for m in unmatched(lb.run_data, humans)]
    means, pairs = human_scale(lb.table, lb.run_data, humans)
    return lb.model_copy(update={"human_scale": means, "human_pairs": pairs,
                                 "warnings": [*lb.warnings, *extra]})


def rerank(table: Table, metric: str, runs: dict[str, RunData]) -> Table:
    """``table`` with its systems ranked by the target's declared ``metric`` (ties: average rank)."""
    def value(label: str) -> float:
        r = runs[label]
        if metric == "harm_share":
            share = r.harm.share if r.harm is not None else None
            return share if share is not None else float("inf")
        share = r.levels.all_best.share if r.levels is not None else None
        return -share if share is not None else float("inf")

    order = sorted(table.systems, key=lambda s: (value(s.label), s.rank))
    systems = [s.model_copy(update={"rank": i}) for i, s in enumerate(order, start=1)]
    return table.model_copy(update={"systems": systems})
