"""What a run's counted conversations (:func:`mindeval.scoring.score_run`) report beyond the means:
the target blocks of ``summary.json`` (harm, levels, reply aggregates, points, per-label breakdowns),
the rated units the declared score reads and the declared score itself (:mod:`mindeval.formula`).
The leaderboard reads the same functions (one home)."""

from __future__ import annotations

import math
from typing import Any

from ..config import DEFAULT_RESAMPLES
from ..errors import MindEvalError
from ..formula import Formula, FormulaError, parse_formula
from ..records import TargetInfo
from ..stats.reply_scales import ScoreEstimate, scale_report
from ..stats.scale_spec import CriterionResult, Rating, ScaleSpec, quantity_names
from ..stats.seeding import rng_for
from .by_session import session_reports
from .scorer import RunScore


def reply_ratings(rs: RunScore) -> list[Rating]:
    """Every judged reply of the counted conversations (a judge sample is its own conversation)."""
    from ..reply_summary import reply_ratings as read

    return read(rs.judgments, rs.profile_of)


def criteria(rs: RunScore) -> list[CriterionResult]:
    """The counted conversations' criterion results of a target with point criteria (else none)."""
    if not rs.target.points:
        return []
    from ..judging.points import criterion_results

    profile_of = rs.profile_of
    return [r for j in rs.judgments for r in criterion_results(j, profile_of[j.interaction_id], list(rs.target.points))]


def scale_spec(target: TargetInfo) -> ScaleSpec:
    """The run's scale as the statistics read it: levels best to worst (by value), weights; a
    reply-level target's recorded reply scale (its flags included)."""
    if target.unit == "reply" and target.reply_scale is not None:
        return ScaleSpec.model_validate(target.reply_scale)
    levels = sorted(target.scale.levels, key=lambda lv: -lv.value)
    weights = target.score.weights if target.score is not None else None
    return ScaleSpec(levels=[lv.id for lv in levels], weights=weights, points=target.points)


def ratings(rs: RunScore, where: str = "") -> list[Rating]:
    """The declared score's rated units: per counted conversation and dimension the level of its
    worst sample; under reply-level judging, each judged reply. ``where`` names the run in an error."""
    target = rs.target
    if target.unit == "reply":
        return reply_ratings(rs)
    by_value = {lv.value: lv.id for lv in target.scale.levels}
    out = []
    for s in rs.conversations:
        for ax in target.axes:
            v = s.worst.get(ax, s.scores[ax])
            if math.isnan(v):
                level = None
            elif v in by_value:
                level = by_value[v]
            else:  # an ordinal mean over samples is no level
                raise MindEvalError(f"{ax} = {v} is not a level of the scale: a declared score needs one judge "
                                    "sample per conversation or a categorical scale", path=where or None,
                                    field="scores")
            out.append(Rating(profile=s.profile_id, conversation=s.interaction_id, unit=ax, level=level))
    return out


def formula_of(target: TargetInfo, spec: ScaleSpec, text: str | None = None,
               field: str = "config.target.score.formula") -> Formula:
    """The target's declared formula (or ``text``, one of its named scores), checked against the
    quantities ``spec`` reports, per dimension too (``NAME[CODE]``) unless replies are the unit."""
    assert text is not None or target.score is not None
    units = () if target.unit == "reply" else target.axes
    try:
        return parse_formula(text if text is not None else target.score.formula,  # type: ignore[union-attr]
                             quantity_names(spec, units))
    except FormulaError as exc:
        raise MindEvalError(str(exc), field=field) from None


def named_scores(target: TargetInfo, rated: list[Rating], results: list[CriterionResult], *, resamples: int,
                 rng_key: str, seed: int = 0, level: float = 0.95) -> dict[str, ScoreEstimate]:
    """Each of the target's named scores (``scores``) over one system's rated units: one scale
    report, so every score's interval reads the same profile resamples as the headline's."""
    spec = scale_spec(target)
    report = scale_report(spec, rated, results, resamples=resamples, rng=rng_for(seed, "score", rng_key), level=level)
    return {sc.name: report.score(formula_of(target, spec, sc.formula, f"config.target.scores.{i}.formula"))
            for i, sc in enumerate(target.scores)}


def declared_score(target: TargetInfo, rated: list[Rating], results: list[CriterionResult], *, resamples: int,
                   rng_key: str, seed: int = 0, level: float = 0.95) -> ScoreEstimate:
    """The target's declared score over one system's rated units, with its interval resampling profiles."""
    spec = scale_spec(target)
    return scale_report(spec, rated, results, resamples=resamples, rng=rng_for(seed, "score", rng_key),
                        level=level).score(formula_of(target, spec))


def label_breakdowns(rs: RunScore) -> dict[str, dict[str, dict[str, Any]]]:
    """The summary's ``by_label`` block: per label field and value, the conversations counted, the
    means (over profiles), the harm share and (categorical) the level shares."""
    t = rs.target
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for field, values in t.labels.items():
        out[field] = {}
        for value in values:
            sub = rs.subset(lambda c, f=field, v=value: t.profile_labels.get(c.profile_id, {}).get(f) == v)
            block: dict[str, Any] = {"n": len(sub.conversations), "means": sub.means()}
            if (harm := sub.harm()) is not None:
                block["harm"] = harm.model_dump(mode="json")
            if (levels := sub.levels()) is not None:
                block["levels"] = levels.model_dump(mode="json")
            out[field][value] = block
    return out


def summary_blocks(rs: RunScore, seed: int = 0, resamples: int = DEFAULT_RESAMPLES) -> dict[str, Any]:
    """The summary's target-specific blocks: ``target`` (not MindEval's), ``harm``, ``levels``,
    ``replies``, ``points``, ``score`` (a declared score: value and 95% interval), ``by_label``,
    ``by_session`` (sessions > 1: :mod:`.by_session`)."""
    from ..reply_summary import points_block, replies_block

    t = rs.target
    extra: dict[str, Any] = {} if t.legacy_files else {"target": t.name}
    if (harm := rs.harm()) is not None:
        extra["harm"] = harm.model_dump(mode="json")
    if (levels := rs.levels()) is not None:
        extra["levels"] = levels.model_dump(mode="json")
    if t.unit == "reply":
        extra["replies"] = replies_block(rs.judgments, t, rs.profile_of, seed, resamples)
    if t.points:
        extra["points"] = points_block(rs.judgments, t, rs.profile_of, seed, resamples)
    if t.score is not None:
        extra["score"] = _score_block(rs, seed, resamples)
    if t.scores:
        extra["scores"] = _scores_block(rs, seed, resamples)
    if t.profile_labels:
        extra["by_label"] = label_breakdowns(rs)
    if t.sessions > 1:
        extra["by_session"] = by_session_block(rs, seed, resamples)
    return extra


def _score_block(rs: RunScore, seed: int, resamples: int) -> dict[str, Any]:
    """The summary's ``score``: the declared score's value and 95% interval (the leaderboard's value);
    ``value`` None with ``why`` when it cannot be read (an ordinal mean over several samples is no level)."""
    t = rs.target
    assert t.score is not None
    head = {"label": t.score.label, "formula": t.score.formula, "higher_is_better": t.score.higher_is_better}
    try:
        est = declared_score(t, ratings(rs), criteria(rs), resamples=resamples, rng_key="summary", seed=seed)
    except MindEvalError as exc:
        return {**head, "value": None, "ci95": None, "why": exc.message}
    return {**head, **est.model_dump(mode="json", exclude=set() if est.why else {"why"})}


def _scores_block(rs: RunScore, seed: int, resamples: int) -> dict[str, Any]:
    """The summary's ``scores``: name -> label, formula, direction, headline, value, ci95 (and
    ``why`` when undefined); the headline's value is the ``score`` block's (same resamples)."""
    t = rs.target
    heads = {sc.name: sc.model_dump(mode="json", exclude={"name"}) for sc in t.scores}
    try:
        ests = named_scores(t, ratings(rs), criteria(rs), resamples=resamples, rng_key="summary", seed=seed)
    except MindEvalError as exc:
        return {name: {**head, "value": None, "ci95": None, "why": exc.message} for name, head in heads.items()}
    return {name: {**head, **ests[name].model_dump(mode="json", exclude=set() if ests[name].why else {"why"})}
            for name, head in heads.items()}


def by_session_block(rs: RunScore, seed: int = 0, resamples: int = DEFAULT_RESAMPLES) -> dict[str, Any]:
    """The summary's ``by_session``: session number -> the scale report's figures (``conversations``:
    n) and the declared score; ``{"why": ...}`` when the units cannot be read as levels."""
    target = rs.target
    spec = scale_spec(target)
    try:
        rated = ratings(rs)
        formula = formula_of(target, spec) if target.score is not None else None
    except MindEvalError as exc:
        return {"why": exc.message}
    out: dict[str, Any] = {}
    for k, report in session_reports(spec, rated, criteria(rs), resamples=resamples, seed=seed,
                                     rng_key="summary").items():
        block = report.model_dump(mode="json", exclude={"rows"})
        if formula is not None:
            score = report.score(formula)
            block["score"] = score.model_dump(mode="json", exclude=set() if score.why else {"why"})
        if (cov := rs.session_coverage.get(k)) is not None:  # the partial rule: judged units beside the figures
            block["coverage"] = cov.block()
        out[str(k)] = block
    return out
