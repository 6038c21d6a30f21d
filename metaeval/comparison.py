"""`metaeval compare`: human and judge sources in, agreement matrices and verdicts out.

The dimensions compared are the target's: ``--target NAME|PATH``, else the judge runs'
``config.json`` target block, else the annotation study's target, else MindEval. On a
categorical scale each dimension gets Cohen's κ (pairs of raters), Fleiss' κ (all
humans) and Krippendorff's α (nominal); the average score keeps τ, MIPSA and α.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pydantic import BaseModel, Field

from mindeval.config import DEFAULT_RESAMPLES
from mindeval.errors import MindEvalError
from mindeval.judging.authors import AUTHORS_FEWSHOT_IDS, load_mapping
from mindeval.stats import resampled
from mindeval.stats.agreement import AgreementWarning, TauVariant, TieRule
from mindeval.stats.alt_test import DEFAULT_EPSILON
from mindeval.study_data import StudyRatings

from . import unit_compare
from .alternative import JudgeAltTest, JudgeVerdict, alt_tests, judge_verdicts
from .confidence import (
    DEFAULT_MARGIN,
    Calibration,
    ConfidentVerdict,
    JudgeClusters,
    JudgeDiff,
    TieRow,
    calibration,
    confident_verdicts,
    judge_pairs,
    tie_table,
)
from .gold_gate import gate_raters
from .matrices import AVG_LABEL, Matrix, MetricOptions, Panel, Verdict, build_all, verdicts
from .rollup import AVERAGE, Dimensions, RollupWarning
from .selfpref import (
    find_self_system,
    interaction_means,
    leaderboard,
    leaderboard_accuracy,
    self_preference,
)
from .sources import (
    HumanSource,
    RaterScores,
    database_study,
    is_ratings_file,
    load_authors_annotations,
    load_judge_run,
    load_ratings_file,
    load_study,
)
from .unit_agreement import UnitReport
from .units import is_unit_file


class CompareOptions(BaseModel):
    humans: list[str] = Field(default_factory=list)
    judges: list[str] = Field(default_factory=list)
    study: str | None = None
    mapping: str | None = None
    zeros: str = "missing"
    tau_variant: TauVariant = "b"
    mipsa_ties: TieRule = "sign"
    alpha: bool = True
    exclude: list[str] = Field(default_factory=list)
    exclude_authors_examples: bool = False
    exact: bool = True  # False: float means in rater order, as the published tables
    reference: str | None = None
    self_systems: dict[str, str] = Field(default_factory=dict)
    target: str | None = None  # NAME|PATH; default: the judge runs' or the study's target
    resamples: int = DEFAULT_RESAMPLES  # bootstrap resamples for intervals and judge tests (0 = point values only)
    ci: float = 0.95
    seed: int = 0
    alpha_level: float = 0.05  # significance level of judge-vs-judge tests and clusters
    margin: float = DEFAULT_MARGIN  # non-inferiority margin of the verdict (τ units; half of it for MIPSA)
    epsilon: float = DEFAULT_EPSILON  # the alternative annotator test's ε (0.2 experts, 0.15 skilled, 0.1 crowd)
    min_gold_accuracy: float | None = None  # a study's raters below this gold accuracy are left out (gold_gate)


class CompareResult(BaseModel):
    model_config = {"arbitrary_types_allowed": True}

    matrices: dict[str, Matrix]
    verdicts: list[Verdict]
    extra: dict[str, Any]
    warnings: list[str]
    confident: list[ConfidentVerdict] = Field(default_factory=list)
    judge_diffs: list[JudgeDiff] = Field(default_factory=list)
    judge_clusters: list[JudgeClusters] = Field(default_factory=list)
    calibration: list[Calibration] = Field(default_factory=list)
    ties: list[TieRow] = Field(default_factory=list)
    alt_tests: list[JudgeAltTest] = Field(default_factory=list)
    judge_verdicts: list[JudgeVerdict] = Field(default_factory=list)
    units: UnitReport | None = None  # agreement at the judge's unit (question / reply), when rated


def _is_db_url(src: str) -> bool:
    return "://" in src


def load_humans(sources: Sequence[str], opts: CompareOptions, dims: Dimensions | None = None,
                studies: Mapping[str, StudyRatings] | None = None) -> list[HumanSource]:
    """Human sources, rated on ``dims`` (the target's dimensions); when ``dims`` is ``None`` an
    annotation study's target decides, else MindEval's. A database source's ratings are in
    ``studies`` (by source), as the command line read them."""
    loaded: dict[int, HumanSource] = {}
    for i, src in enumerate(sources):  # databases first: a study knows its target
        if _is_db_url(src):
            if not opts.study:
                raise MindEvalError("reading ratings from a database needs --study NAME", field="--study")
            loaded[i] = load_study(database_study(src, studies), zeros=opts.zeros, prefix=_prefix(sources, i),
                                   dims=dims)
            dims = dims or loaded[i].dims
    dims = dims or Dimensions()
    mapping = None
    for i, src in enumerate(sources):
        if i in loaded or is_unit_file(src):  # unit ratings: metaeval.unit_compare
            continue
        if is_ratings_file(src):
            loaded[i] = load_ratings_file(src, dims, prefix="" if len(sources) == 1 else f"S{i + 1}.")
        elif not dims.authors_release:
            raise MindEvalError(f"the authors' annotation file holds MindEval's ratings, not target {dims.target}'s; "
                                "give a ratings file (.csv, or .jsonl with subaxis_id) or the annotation database",
                                path=src, field="--humans")
        else:
            mapping = mapping or load_mapping(opts.mapping)
            loaded[i] = load_authors_annotations(src, mapping, zeros=opts.zeros, prefix=_prefix(sources, i))
    return [loaded[i] for i in range(len(sources)) if i in loaded]


def _prefix(sources: Sequence[str], i: int) -> str:
    return "P" if len(sources) == 1 else f"S{i + 1}.P"


def _split_label(arg: str) -> tuple[str | None, str]:
    if "=" in arg and not Path(arg).exists():
        label, path = arg.split("=", 1)
        return label.strip() or None, path
    return None, arg


def resolve_dimensions(target_ref: str | None, judges: Sequence[RaterScores]) -> Dimensions | None:
    """The target's dimensions from ``--target`` (``target_ref``) or the judge runs (all of one
    target); ``None`` when neither says (then the study's target, else MindEval)."""
    from mindeval.targets import load_target

    infos = {j.target.name: j for j in judges if j.target}  # every judge run carries its target
    if len(infos) > 1:
        raise MindEvalError("judge runs of different targets cannot be compared: "
                            + ", ".join(f"{j.source} is {name}" for name, j in infos.items()), field="--judges")
    if target_ref:
        t = load_target(target_ref)
        if infos and t.name not in infos:
            (name, j), = infos.items()
            raise MindEvalError(f"--target is {t.name} but judge run {j.source} was made for target {name}",
                                field="--target")
        return Dimensions.of_target(t)
    if not infos:
        return None
    (name, j), = infos.items()
    info = j.target
    try:
        t = load_target(name)
    except MindEvalError:
        t = None
    if t is not None and t.sha256 == info.sha256:
        return Dimensions.of_target(t)
    return Dimensions.from_info(info)  # only the block: the human form is one sub-axis per dimension


def load_judges(args: Sequence[str]) -> list[RaterScores]:
    """Judge runs by label; directories with the same label (e.g. one ``mindeval run`` per
    clinician, judged by the same model) are merged into one judge."""
    by_label: dict[str, RaterScores] = {}
    for arg in args:
        label, path = _split_label(arg)
        for r in load_judge_run(path, label):
            have = by_label.get(r.label)
            if have is None:
                by_label[r.label] = r
                continue
            overlap = set(zip(have.frame["profile_id"], have.frame["system"], strict=True)) & set(
                zip(r.frame["profile_id"], r.frame["system"], strict=True))
            if overlap:
                raise MindEvalError(
                    f"judge {r.label!r} appears in {have.source} and {r.source} with the same interactions; "
                    "give each run its own label (LABEL=DIR)", path=r.source, field="--judges")
            have.frame = pd.concat([have.frame, r.frame], ignore_index=True)
            have.source = f"{have.source}, {r.source}"
            have.meta["fewshot_interaction_ids"] = sorted(
                set(have.meta.get("fewshot_interaction_ids") or []) | set(r.meta.get("fewshot_interaction_ids") or []))
            have.meta["n_failed"] = int(have.meta.get("n_failed", 0)) + int(r.meta.get("n_failed", 0))
            if have.meta.get("n_not_relevant") or r.meta.get("n_not_relevant"):
                have.meta["n_not_relevant"] = int(have.meta.get("n_not_relevant", 0)) + int(r.meta.get("n_not_relevant", 0))
    return list(by_label.values())


def run_compare(opts: CompareOptions, studies: Mapping[str, StudyRatings] | None = None) -> CompareResult:
    """Load every source, build all matrices, verdicts and the Table-5 comparisons (``studies``: the
    ratings of each annotation database among ``opts.humans``, read by the caller)."""
    if not opts.humans and not opts.judges:
        raise MindEvalError("give at least one --humans source or --judges run")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", AgreementWarning)
        warnings.simplefilter("always", RollupWarning)
        judges = load_judges(opts.judges)
        dims = resolve_dimensions(opts.target, judges)
        studies, excluded_raters = gate_raters(studies, opts.min_gold_accuracy)
        human_sources = load_humans(opts.humans, opts, dims, studies)
        # a study's own target (checked against the judges') knows its form and names best
        dims = next((hs.dims for hs in human_sources if hs.dims is not None and hs.dims.titles), dims) or Dimensions()
        if dims.categorical and opts.zeros == "zero":
            raise MindEvalError(f"target {dims.target} has a categorical scale: a 0 is a level there, "
                                "so --zeros zero / --paper-compatible do not apply", field="--zeros")
        units = _UnitInputs(opts, judges, studies)
        humans = [r for hs in human_sources for r in hs.raters] + units.conversation_raters(judges)
        if len(humans) + len(judges) < 2:
            raise MindEvalError("need at least two raters in total (humans and judges) to compare")
        _known_exclusions(opts.exclude, [*humans, *judges])
        exclude = _exclusions(opts, judges)
        panel = Panel(humans, judges, exclude=sorted(exclude))
        if not panel.keys:
            raise MindEvalError("the sources share no interaction to compare")
        metric_opts = MetricOptions(tau_variant=opts.tau_variant, mipsa_ties=opts.mipsa_ties, alpha=opts.alpha,
                                    exact=opts.exact, resamples=opts.resamples, ci=opts.ci, seed=opts.seed)
        matrices = build_all(panel, metric_opts, dims=dims)
        verdict_list = [v for m in matrices.values() if m.categorical for v in verdicts(m)]
        verdict_list += verdicts(matrices[AVERAGE])
        extra = _table5(panel, humans, judges, opts)
        conf = _confidence(panel, matrices, metric_opts, opts, bool(judges))
        if judges:
            conf["judge_verdicts"] = judge_verdicts(conf.get("confident", []), verdict_list, conf["alt_tests"],
                                                    metric_opts)
        for key, items in conf.items():
            extra[key] = [x.model_dump() for x in items]
        unit = units.report(opts, exclude)
        if unit is not None:
            extra["unit_agreement"] = unit.model_dump()
    extra["notes"] = _notes(panel, opts, dims, judges)
    if not dims.legacy_files:
        extra["target"] = dims.target
    extra["inputs"] = {
        "humans": [{"source": hs.source, "raters": hs.rater_ids} for hs in human_sources],
        "judges": [{"label": j.label, "source": j.source, "runs": j.runs, **j.meta} for j in judges],
        "excluded_interaction_ids": sorted(exclude),
        "zeros": opts.zeros,
    }
    if opts.min_gold_accuracy is not None:  # who was left out, and why
        extra["inputs"].update(min_gold_accuracy=opts.min_gold_accuracy, excluded_raters=excluded_raters)
    msgs = sorted({f"{w.category.__name__}: {w.message}" for w in caught})
    return CompareResult(matrices=matrices, verdicts=verdict_list, extra=extra, warnings=msgs, units=unit, **conf)


class _UnitInputs:
    """The unit ratings of a comparison (:mod:`metaeval.unit_compare`): humans' and judges'."""

    def __init__(self, opts: CompareOptions, judges: list[RaterScores],
                 studies: Mapping[str, StudyRatings] | None) -> None:
        self.tg = unit_compare.target_guidelines(opts.target, judges, studies)
        files = [s for s in opts.humans if not _is_db_url(s) and is_unit_file(s)]
        if files and self.tg is None:
            raise MindEvalError("unit ratings need the target: give --target or judge runs of it", path=files[0],
                                field="--humans")
        self.humans = unit_compare.human_unit_sources(opts.humans, self.tg[1], studies) if self.tg else []
        self.judges = unit_compare.judge_unit_sources([_split_label(a) for a in opts.judges]) if self.tg and self.humans else []

    def conversation_raters(self, judges: list[RaterScores]) -> list[RaterScores]:
        """Conversation-level scores of the unit ratings files' annotators (a study has its own)."""
        assert self.tg is not None or not self.humans
        return [r for s in self.humans if "://" not in s.source
                for r in unit_compare.conversation_raters(s, self.tg[1], judges)] if self.tg else []

    def report(self, opts: CompareOptions, exclude: set[str]) -> UnitReport | None:
        if self.tg is None:
            return None
        return unit_compare.build_unit_report(self.tg[0], self.tg[1], self.humans, self.judges, exclude,
                                              resamples=opts.resamples, seed=opts.seed, level=opts.ci,
                                              epsilon=opts.epsilon, alpha_level=opts.alpha_level)


def _known_exclusions(ids: Sequence[str], raters: Sequence[RaterScores]) -> None:
    """Refuse an ``--exclude`` id that no source rated (a typo would otherwise leave everything in)."""
    known = {str(i) for r in raters for i in r.frame["interaction_id"].unique()}
    unknown = [i for i in ids if str(i) not in known]
    if unknown:
        raise MindEvalError(f"no source rated interaction {unknown[0]!r} ({len(unknown)} unknown id(s); "
                            f"{len(known)} interactions are rated)", field="--exclude")


def _exclusions(opts: CompareOptions, judges: list[RaterScores]) -> set[str]:
    """Interaction ids left out: --exclude, the judges' few-shot examples, the authors' (--paper-compatible)."""
    exclude = set(opts.exclude)
    for j in judges:
        exclude.update(j.meta.get("fewshot_interaction_ids") or [])
    if opts.exclude_authors_examples:
        exclude.update(AUTHORS_FEWSHOT_IDS)
    return exclude


def _confidence(panel: Panel, matrices: dict[str, Matrix], metric_opts: MetricOptions, opts: CompareOptions,
                with_judges: bool) -> dict[str, Any]:
    """Verdicts with confidence, judge-vs-judge tests, calibration (with resamples); ties and the alternative
    annotator test (with judges)."""
    ordinal_axes = [ax for ax, m in matrices.items() if not m.categorical]
    conf: dict[str, Any] = {}
    if opts.resamples > 0 and with_judges:
        conf["confident"] = [v for ax in ordinal_axes for v in confident_verdicts(panel, matrices[ax], opts.margin)]
        conf["judge_diffs"], conf["judge_clusters"] = judge_pairs(panel, metric_opts, ordinal_axes,
                                                                  alpha=opts.alpha_level)
        conf["calibration"] = calibration(panel, metric_opts, ordinal_axes)
    if with_judges:
        conf["ties"] = tie_table(panel, metric_opts, ordinal_axes)
        conf["alt_tests"] = alt_tests(panel, matrices, metric_opts, epsilon=opts.epsilon, level=opts.alpha_level)
    return conf


def _notes(panel: Panel, opts: CompareOptions, dims: Dimensions, judges: list[RaterScores]) -> list[str]:
    notes = [
        f"{len(panel.keys)} interactions ({len({k[0] for k in panel.keys})} profiles, "
        f"{len({k[1] for k in panel.keys})} systems); {len(panel.excluded_keys)} excluded as judge few-shot "
        "examples or by --exclude",
        f"human scores: zeros={opts.zeros} ('missing' = 0 means not rated; 'zero' = averaged in as 0, as the paper did)"
        if not dims.categorical else
        f"target {dims.target}: categorical scale, blank/NA = not rated (a 0 may be a level)",
    ]
    notes += [f"judge {j.label}: {j.meta['n_not_relevant']} dimension ratings 'not relevant', left out of "
              "that dimension's agreement" for j in judges if j.meta.get("n_not_relevant")]
    return notes


def _table5(panel: Panel, humans: list[RaterScores], judges: list[RaterScores], opts: CompareOptions) -> dict[str, Any]:
    """Leaderboards of every rater, pairwise accuracy against the reference, self-preference."""
    boards: dict[str, dict[str, float]] = {}
    means: dict[str, np.ndarray] = {}
    for j in judges:
        means[j.label] = interaction_means(panel, j)
        boards[j.label] = leaderboard(panel, means[j.label]).to_dict()
    if len(humans) >= 2:
        h = np.vstack([panel.matrix_of(r, AVERAGE)[0] for r in humans])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            means[AVG_LABEL] = np.nanmean(h, axis=0)
        boards[AVG_LABEL] = leaderboard(panel, means[AVG_LABEL]).to_dict()
    rows: list[dict[str, Any]] = []
    if judges:
        ref = opts.reference or judges[0].label
        if ref not in means:
            raise MindEvalError(f"--reference {ref!r} is not a judge label ({', '.join(means)})", field="--reference")
        systems = sorted({k[1] for k in panel.keys})
        ref_board = pd.Series(boards[ref])
        boot = panel.resampler(MetricOptions(resamples=opts.resamples, ci=opts.ci, seed=opts.seed))
        system_codes = np.array([systems.index(k[1]) for k in panel.keys])
        for j in judges:
            if j.label == ref:
                continue
            row: dict[str, Any] = {
                "judge": j.label, "reference": ref,
                "pairwise_accuracy": leaderboard_accuracy(pd.Series(boards[j.label]), ref_board),
            }
            if boot is not None:
                draws = resampled.leaderboard_accuracy(means[j.label], means[ref], system_codes, boot.profile_items)
                row["pairwise_accuracy_ci"] = list(boot.interval(draws))
            own = opts.self_systems.get(j.label) or find_self_system(str(j.meta.get("judge_model", "")), systems)
            if own:
                sp = self_preference(panel, means[j.label], means[ref], own, judge_label=j.label, reference_label=ref)
                row.update(self_system=own, avg_rank_delta=sp.avg_rank_delta,
                           pct_rank_improvements=sp.pct_rank_improvements, n_profiles=sp.n_profiles)
            rows.append(row)
        unknown = sorted(set(opts.self_systems) - {j.label for j in judges})
        if unknown:
            raise MindEvalError(f"--self-system names unknown judge(s) {', '.join(unknown)}", field="--self-system")
    return {"leaderboards": boards, "table5": rows}
