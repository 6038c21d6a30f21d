"""Human-calibrated leaderboard: each system's mean on the human scale by prediction-powered
inference (docs/leaderboard.md, "Human scale").

The humans' mean rating on the rated conversations (a random sample of the system's conversations,
on the judge's axes' scale) with the judge's scores of the same conversations is the labeled part; the
judge's scores of the system's other scored conversations are the unlabeled part. A system with too few rated conversations, or with rated
conversations that are not among its own, is refused with one line.

In a multi-session run the unit is a session (``P#s<k>``, :func:`mindeval.sessions.unit_key`), for the
humans and the judge alike, and the standard error is clustered by member (:mod:`mindeval.stats.ppi`).
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np
from pydantic import BaseModel, SerializerFunctionWrapHandler, model_serializer

from ..errors import MindEvalError
from ..sessions import member_of, unit_key
from ..stats.ppi import Groups, MeanInterval, plan_n, ppi_diff, ppi_mean
from ..study_data import HumanScores
from .loading import RunData
from .table import Table

MIN_RATED = 10  # below this the normal interval of the rated subset is not to be trusted


class HumanScaleScore(BaseModel):
    """One system and criterion: judge-only, humans-only and prediction-powered means."""

    system: str
    criterion: str
    n_rated: int  # conversations (multi-session: sessions) with a human rating and a judge score
    n_rated_members: int | None = None  # multi-session: the members those sessions are of (the clusters)
    n_scored: int  # conversations the judge scored (the rated ones and the unlabeled rest)
    judge_mean: float
    humans: MeanInterval  # the rated subset alone (lam = 0)
    ppi: MeanInterval  # prediction-powered (PPI++ tuned lam)
    # Observed on the rated conversations (sd_judge: on every scored one), for planning (plan_width).
    corr: float
    sd_human: float
    sd_judge: float

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """``n_rated_members`` only for a multi-session study (the single-session output is as before)."""
        data = handler(self)
        if data.get("n_rated_members") is None:
            data.pop("n_rated_members", None)
        return data


class HumanScaleDiff(BaseModel):
    """System ``a`` minus system ``b`` on the human scale (PPI++), with its interval; the two systems'
    estimates taken as independent (``ppi_diff``: conservative when they share profiles)."""

    a: str
    b: str
    criterion: str
    estimate: float
    ci_low: float
    ci_high: float

    @property
    def significant(self) -> bool:
        return self.ci_low > 0 or self.ci_high < 0


def _has(scores: dict[str, float], c: str) -> bool:
    return c in scores and math.isfinite(scores[c])


def _check_models(table: Table, runs: dict[str, RunData], humans: HumanScores) -> None:
    """Human ratings name a clinician model: two ranked systems of one model cannot tell theirs apart."""
    seen: dict[str, str] = {}
    for s in table.systems:
        model = runs[s.label].clinician_model
        if model in seen:
            raise MindEvalError(f"systems {seen[model]} and {s.label} are both clinician model {model}; human ratings "
                                "name the model only, so rank one of them at a time", path=humans.source,
                                field="--humans")
        seen[model] = s.label


def check_one_per_profile(runs: dict[str, RunData]) -> None:
    """Human ratings are paired with the judge's scores by profile (and session): a system with
    several conversations of one profile (``--repeats``, or runs pooled over patient models) is
    refused with one line, before any rating is read."""
    for label, run in runs.items():
        counts = Counter(unit_key(sc.profile_id, sc.interaction_id) for sc in run.scores)
        unit, n = max(counts.items(), key=lambda kv: kv[1], default=("", 1))
        if n > 1:
            how = f"--repeats {run.repeats}" if run.repeats > 1 else f"{len(run.pooled)} pooled runs"
            raise MindEvalError(
                f"system {label} has {n} conversations of profile {unit} ({how}); human ratings are paired with "
                "the judge's scores by profile, so --humans ranks one conversation per profile (rank this system "
                "without --humans; docs/leaderboard.md, Human scale)", path=run.path, field="--humans")


def unmatched(runs: dict[str, RunData], humans: HumanScores) -> list[str]:
    """Clinician models the humans rated that no ranked system is (their ratings are not used)."""
    models = {r.clinician_model for r in runs.values()}
    return sorted({h.system for h in humans.rows} - models)


def _observed(y: list[float], yhat: list[float], yall: list[float]) -> dict[str, float]:
    sy, sf = float(np.std(y, ddof=1)), float(np.std([*yhat, *yall], ddof=1))
    corr = float(np.corrcoef(y, yhat)[0, 1]) if np.std(y) > 0 and np.std(yhat) > 0 else 0.0
    return {"corr": corr, "sd_human": sy, "sd_judge": sf}


def plan_markdown(scores: list[HumanScaleScore], width: float, level: float = 0.95) -> list[str]:
    """``--plan-width``: human ratings per system for a PPI interval of the Average of total width ``width``,
    from each system's observed judge-human correlation and spreads (``plan_n``), beside humans alone."""
    lines = ["", f"### Planning: human ratings per system for a {int(level * 100)}% interval of width {width:g}", "",
             "Assumes the rated conversations are a random sample, and the judge-human correlation and spreads "
             "observed on this study's rated conversations (Average); the interval is the PPI++ one above.", "",
             "| System | Judge-human r | SD human | SD judge | Scored | n (PPI) | n (humans only) |",
             "|---|---|---|---|---|---|---|"]
    for h in scores:
        if h.criterion != "average":
            continue
        kw = {"sd_human": h.sd_human, "sd_judge": h.sd_judge, "n_total": h.n_scored, "level": level, "min_n": MIN_RATED}
        n_ppi, n_hum = plan_n(width, corr=h.corr, **kw), plan_n(width, **{**kw, "corr": 0.0})
        cell = [f"> {h.n_scored} (all)" if n is None else str(n) for n in (n_ppi, n_hum)]
        lines.append(f"| {h.system} | {h.corr:.2f} | {h.sd_human:.2f} | {h.sd_judge:.2f} | {h.n_scored} | "
                     + " | ".join(cell) + " |")
    return lines


# human and judge on the rated, judge on the unrated; multi-session: and their members (ppi.Groups)
Parts = tuple[list[float], list[float], list[float]] | tuple[list[float], list[float], list[float], Groups]


def _parts(rated: dict[str, dict[str, float]], judged: dict[str, dict[str, float]], c: str) -> Parts | None:
    """One criterion's PPI inputs (``None`` below :data:`MIN_RATED` rated units, or one rated member);
    with sessions among the units (``P#s<k>``) their members too."""
    pids = [p for p, v in rated.items() if _has(v, c) and _has(judged[p], c)]
    rest = [p for p, v in judged.items() if p not in rated and _has(v, c)]
    y, yhat, yall = [rated[p][c] for p in pids], [judged[p][c] for p in pids], [judged[p][c] for p in rest]
    if len(pids) < MIN_RATED:
        return None
    if all(member_of(p) == p for p in judged):
        return y, yhat, yall
    groups = Groups(rated=[member_of(p) for p in pids], unrated=[member_of(p) for p in rest])
    return (y, yhat, yall, groups) if len(set(groups.rated)) >= 2 else None


def human_scale(table: Table, runs: dict[str, RunData], humans: HumanScores,
                level: float = 0.95) -> tuple[list[HumanScaleScore], list[HumanScaleDiff]]:
    """The human-scale estimates of every ranked system (``runs``: its loaded run, by label) and
    criterion the humans rated, and every pair's difference (in rank order, ``a`` above ``b``)."""
    _check_models(table, runs, humans)
    check_one_per_profile(runs)
    out: list[HumanScaleScore] = []
    parts: dict[tuple[str, str], Parts] = {}
    for s in table.systems:
        run = runs[s.label]
        judged = {unit_key(sc.profile_id, sc.interaction_id): sc.scores for sc in run.scores}
        rated = {h.profile_id: h.scores for h in humans.rows if h.system == run.clinician_model}
        outside = sorted(set(rated) - set(judged))
        if outside:
            raise MindEvalError(
                f"system {s.label}: {len(outside)} rated conversation(s) (e.g. profile {outside[0]}) are not among "
                "its scored conversations; the rated ones must be a random sample of them", path=humans.source,
                field="--humans")
        if len(rated) < MIN_RATED:
            raise MindEvalError(
                f"system {s.label} ({run.clinician_model}) has {len(rated)} rated conversation(s); a human-scale "
                f"interval needs at least {MIN_RATED} rated conversations per system", path=humans.source, field="--humans")
        for c in table.criteria:
            got = _parts(rated, judged, c)
            if got is None:
                continue
            parts[(s.label, c)] = got
            y, yhat, yall = got[:3]
            groups = got[3] if len(got) > 3 else None
            out.append(HumanScaleScore(
                system=s.label, criterion=c, n_rated=len(y), n_scored=len(yall) + len(y), judge_mean=s.results[c].mean,
                n_rated_members=None if groups is None else len(set(groups.rated)),
                humans=ppi_mean(y, yhat, yall, level=level, lam=0.0, groups=groups),
                ppi=ppi_mean(y, yhat, yall, level=level, groups=groups), **_observed(y, yhat, yall)))
    labels = [s.label for s in table.systems]
    diffs = [HumanScaleDiff(a=a, b=b, criterion=c, **dict(zip(("estimate", "ci_low", "ci_high"), ppi_diff(
                 parts[(a, c)], parts[(b, c)], level=level), strict=True)))
             for c in table.criteria for i, a in enumerate(labels) for b in labels[i + 1:]
             if (a, c) in parts and (b, c) in parts]
    return out, diffs

