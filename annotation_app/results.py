"""Study results for the admin: progress, per-axis means, human agreement (via metaeval)."""

from __future__ import annotations

import importlib
import math
import warnings
from collections import defaultdict
from typing import Any

from sqlalchemy import func, select

from mindeval.guidelines import Guidelines
from mindeval.store import Database
from mindeval.store.annotations import (
    NA_VALUE,
    AnnotatorRow,
    AssignmentRow,
    RatingRow,
    RoleplaySessionRow,
    StudyRow,
)

from .exporters import submitted_ratings
from .models import AnnotatorProgress, StudyResults
from .studies import get_study


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def axis_scores(g: Guidelines, values: dict[str, int]) -> dict[str, float]:
    """Per-axis score of one rating: the mean of its rated sub-axes (N/A left out)."""
    per: dict[str, list[int]] = defaultdict(list)
    for sub in g.human_subaxes:
        v = values.get(sub.id)
        if v is not None and v != NA_VALUE:
            per[sub.axis].append(v)
    return {axis: sum(vs) / len(vs) for axis, vs in per.items() if vs}


def ratings_frame(db: Database, study_id: int):
    """Submitted ratings as a pandas frame ``(interaction_id, profile_id, system, rater, subaxis_id, score)``.

    ``score`` 0 means not applicable / not rated (the authors' convention).
    """
    import pandas as pd

    rows = []
    for r in submitted_ratings(db, study_id):
        item = r["item"]
        profile = str((item.member_attributes or {}).get("name", ""))
        for sub, v in r["values"].items():
            rows.append({"interaction_id": item.external_id, "profile_id": profile,
                         "system": item.clinician_model or "", "rater": r["annotator"],
                         "subaxis_id": sub, "score": v})
    return pd.DataFrame(rows, columns=["interaction_id", "profile_id", "system", "rater", "subaxis_id", "score"])


def _progress(db: Database, study: StudyRow) -> list[AnnotatorProgress]:
    with db.read() as s:
        if study.kind == "rating":
            rows = s.execute(
                select(AnnotatorRow.name, func.count(AssignmentRow.id),
                       func.count(RatingRow.id).filter(RatingRow.state == "submitted"),
                       func.count(RatingRow.id).filter(RatingRow.state == "draft"))
                .join(AssignmentRow, AssignmentRow.annotator_id == AnnotatorRow.id)
                .outerjoin(RatingRow, RatingRow.assignment_id == AssignmentRow.id)
                .where(AssignmentRow.study_id == study.id)
                .group_by(AnnotatorRow.name).order_by(AnnotatorRow.name)
            ).all()
        else:
            rows = s.execute(
                select(AnnotatorRow.name, func.count(RoleplaySessionRow.id),
                       func.count(RoleplaySessionRow.id).filter(RoleplaySessionRow.status == "finished"),
                       func.count(RoleplaySessionRow.id).filter(RoleplaySessionRow.status == "active"))
                .join(RoleplaySessionRow, RoleplaySessionRow.annotator_id == AnnotatorRow.id)
                .where(RoleplaySessionRow.study_id == study.id)
                .group_by(AnnotatorRow.name).order_by(AnnotatorRow.name)
            ).all()
    return [AnnotatorProgress(name=n, assigned=a, submitted=d, drafts=p) for n, a, d, p in rows]


def agreement_summary(ratings: list[dict[str, Any]], g: Guidelines) -> tuple[dict[str, float | None] | None, str]:
    """Human-human agreement on the average score, computed with metaeval's metrics.

    Mean pairwise Kendall τ-b over shared transcripts, mean pairwise MIPSA (τ-b tie
    rule) and Krippendorff's α (interval). ``None`` values could not be computed.
    """
    try:
        agreement = importlib.import_module("metaeval.agreement")
    except ImportError:
        return None, "The agreement summary appears here when the metaeval module is installed."
    import numpy as np

    items: dict[str, int] = {}
    profiles: list[str] = []
    raters: dict[str, dict[int, float]] = defaultdict(dict)
    for r in ratings:
        scores = axis_scores(g, r["values"])
        if len(scores) != len(g.judge_axes):
            continue
        item = r["item"]
        if item.external_id not in items:
            items[item.external_id] = len(items)
            profiles.append(str((item.member_attributes or {}).get("name", "")))
        raters[r["annotator"]][items[item.external_id]] = sum(scores.values()) / len(scores)
    if len(raters) < 2:
        return None, "Agreement needs at least two annotators who rated the same transcripts."
    names = sorted(raters)
    m = np.full((len(names), len(items)), np.nan)
    for i, n in enumerate(names):
        for j, v in raters[n].items():
            m[i, j] = v
    taus, mipsas = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for a in range(len(names)):
            for b in range(a + 1, len(names)):
                taus.append(agreement.kendall_tau(m[a], m[b]))
                mipsas.append(agreement.mipsa(m[a], m[b], profiles, ties="taub"))
        alpha = agreement.krippendorff_alpha(m, "interval")

    def clean(xs: list[float]) -> float | None:
        xs = [x for x in xs if not math.isnan(x)]
        return sum(xs) / len(xs) if xs else None

    summary = {
        "annotators": float(len(names)), "transcripts": float(len(items)),
        "mean_pairwise_kendall_tau": clean(taus), "mean_pairwise_mipsa": clean(mipsas),
        "krippendorff_alpha_interval": clean([alpha]),
    }
    return summary, "Average-score agreement between annotators, computed with metaeval (paper §3.2)."


def study_results(db: Database, g: Guidelines, study_ref: int | str) -> StudyResults:
    with db.read() as s:
        study = get_study(s, study_ref)
    res = StudyResults(study_id=study.id, name=study.name, kind=study.kind, progress=_progress(db, study), n_ratings=0)
    if study.kind != "rating":
        return res
    ratings = submitted_ratings(db, study.id)
    res.n_ratings = len(ratings)
    if not ratings:
        return res
    for sub in g.human_subaxes:
        vals = [r["values"][sub.id] for r in ratings if r["values"].get(sub.id) not in (None, NA_VALUE)]
        res.subaxis_means[sub.id] = _mean(vals)
    per_axis: dict[str, list[float]] = defaultdict(list)
    averages = []
    for r in ratings:
        scores = axis_scores(g, r["values"])
        for axis, v in scores.items():
            per_axis[axis].append(v)
        if len(scores) == len(g.judge_axes):
            averages.append(sum(scores.values()) / len(scores))
    for axis in g.axis_codes:
        res.axis_means[axis] = _mean(per_axis.get(axis, []))
    res.axis_means["average"] = _mean(averages)
    res.agreement, res.agreement_note = agreement_summary(ratings, g)
    return res
