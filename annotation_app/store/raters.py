"""Per-rater quality of a rating study: gold accuracy, time, skips and flags, leave-one-out
agreement, and the drift of these over the rater's successive blocks of items.

* **Gold accuracy**: right answers among the rater's submitted gold items (first submission,
  :mod:`.gold`), with a 95% Wilson interval (:func:`mindeval.stats.proportion.share`).
* **Time per item**: median active seconds over the rater's submitted items (those with time
  recorded), with a 95% percentile-bootstrap interval.
* **Leave-one-out agreement**: Kendall τ-b (:func:`mindeval.stats.loo.loo_kendall_tau`, the one
  ``metaeval compare`` uses) between the rater's average score and the exact (rational) mean of the
  other raters' average scores, over the real items
  the rater shares with at least one other; 95% bootstrap interval over those items
  (:func:`mindeval.stats.resampled.kendall_tau`). Ordinal scales only (a categorical form is
  compared per dimension by ``metaeval compare``). Gold items never count here.
* **Drift**: the same per block of :data:`BLOCK` successive items, in the order the rater first
  submitted them.
"""

from __future__ import annotations

import json
import warnings
from collections import defaultdict
from fractions import Fraction
from typing import Any

import numpy as np
from pydantic import BaseModel, Field
from sqlalchemy import select

from mindeval.errors import MindEvalError
from mindeval.stats import resampled
from mindeval.stats.bootstrap import percentile_interval, resample_counts
from mindeval.stats.loo import loo_kendall_tau
from mindeval.stats.proportion import Share, share
from mindeval.stats.seeding import rng_for
from mindeval.store.db import Database
from mindeval.targets.guidelines import Guidelines

from . import gold
from .exporters import submitted_ratings
from .ratings import na_value
from .studies import get_study
from .tables import ADJUDICATED, AnnotatorRow, AssignmentRow, RatingRevisionRow, RatingRow

BLOCK = 10  # items per drift block
RATERS_FORMAT = "raters"  # `app admin export --format raters`
RESAMPLES = 1000


class LooAgreement(BaseModel):
    """Kendall τ-b of one rater against the mean of the others over ``n`` shared items."""

    tau: float | None
    ci95: tuple[float, float] | None
    n: int


class RaterBlock(BaseModel):
    """One block of a rater's successive items (``first``..``last``, 1-based, in submission order)."""

    block: int
    first: int
    last: int
    gold: Share
    loo: LooAgreement | None


class RaterRow(BaseModel):
    name: str
    qualification: str  # none | pending | passed | failed
    submitted: int
    gold: Share
    median_seconds: float | None
    median_seconds_ci95: tuple[float, float] | None
    timed: int  # items with active time recorded (the median's n)
    skips: int
    flags: int
    loo: LooAgreement | None  # None: categorical scale
    blocks: list[RaterBlock] = Field(default_factory=list)


class RaterTable(BaseModel):
    raters: list[RaterRow]
    block: int = BLOCK
    note: str = ""


def axis_scores(g: Guidelines, values: dict[str, int]) -> dict[str, Fraction]:
    """Per-axis score of one rating: the mean of its rated sub-axes (N/A left out), exact."""
    per: dict[str, list[int]] = defaultdict(list)
    na = na_value(g)
    for sub in g.human_subaxes:
        v = values.get(sub.id)
        if v is not None and v != na:
            per[sub.axis].append(v)
    return {axis: Fraction(sum(vs), len(vs)) for axis, vs in per.items() if vs}


def average_scores(g: Guidelines, ratings: list[dict[str, Any]]) -> dict[str, dict[int, Fraction]]:
    """rater → item id → average score (exact), for every complete rating (every axis rated)."""
    out: dict[str, dict[int, Fraction]] = defaultdict(dict)
    for r in ratings:
        scores = axis_scores(g, r["values"])
        if len(scores) == len(g.judge_axes):
            out[r["annotator"]][r["item"].id] = sum(scores.values()) / len(scores)
    return out


def loo_agreement(avg: dict[str, dict[int, Fraction]], rater: str, items: set[int] | None = None,
                  rng: np.random.Generator | None = None, resamples: int = RESAMPLES) -> LooAgreement:
    """τ-b of ``rater``'s average scores against the exact mean of the other raters'
    (:func:`mindeval.stats.loo.loo_kendall_tau`, as ``metaeval compare``), on the items (of ``items``,
    when given) she shares with at least one other; bootstrap interval over those items."""
    mine = avg.get(rater, {})
    keys = sorted(i for i in mine if (items is None or i in items)
                  and any(i in other for name, other in avg.items() if name != rater))
    if len(keys) < 2:
        return LooAgreement(tau=None, ci95=None, n=len(keys))
    matrix = [[mine[i] for i in keys]] + [[other.get(i) for i in keys] for name, other in avg.items() if name != rater]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tau, x, y = loo_kendall_tau(matrix, 0)
        draws = resampled.kendall_tau(x, y, resample_counts(len(keys), resamples, rng or rng_for(0, "raters", rater)))
    low, high = percentile_interval(draws[:, None])
    point = None if np.isnan(tau) else float(tau)
    ci = None if np.isnan(low[0]) else (float(low[0]), float(high[0]))
    return LooAgreement(tau=point, ci95=ci, n=len(keys))


def _median(xs: list[float], rater: str) -> tuple[float | None, tuple[float, float] | None]:
    if not xs:
        return None, None
    a = np.asarray(xs, dtype=float)
    idx = rng_for(0, "raters", "time", rater).integers(0, len(a), size=(RESAMPLES, len(a)))
    low, high = percentile_interval(np.median(a[idx], axis=1)[:, None])
    return float(np.median(a)), (float(low[0]), float(high[0]))


def _rows(s, study_id: int) -> list[tuple[AssignmentRow, RatingRow, str, Any]]:
    """Every rating of the study's raters (adjudicated left out) with its first submission time."""
    first = (select(RatingRevisionRow.rating_id, RatingRevisionRow.created_at)
             .where(RatingRevisionRow.revision == 1).subquery())
    return [tuple(r) for r in s.execute(
        select(AssignmentRow, RatingRow, AnnotatorRow.name, first.c.created_at)
        .join(RatingRow, RatingRow.assignment_id == AssignmentRow.id)
        .join(AnnotatorRow, AnnotatorRow.id == AssignmentRow.annotator_id)
        .outerjoin(first, first.c.rating_id == RatingRow.id)
        .where(AssignmentRow.study_id == study_id, AnnotatorRow.origin != ADJUDICATED)
        .order_by(AssignmentRow.position)).all()]


def _blocks(done: list[tuple[AssignmentRow, Any]], right: dict[int, bool], avg: dict[str, dict[int, float]],
            name: str, size: int, ordinal: bool) -> list[RaterBlock]:
    """The drift view: gold accuracy and leave-one-out τ per block of ``size`` successive items."""
    out = []
    for b, start in enumerate(range(0, len(done), size), start=1):
        chunk = [a for a, _at in done[start:start + size]]
        golds = [right[a.id] for a in chunk if a.id in right]
        reals = {a.item_id for a in chunk if a.kind == "real"}
        loo = loo_agreement(avg, name, reals, rng_for(0, "raters", name, str(b))) if ordinal else None
        out.append(RaterBlock(block=b, first=start + 1, last=start + len(chunk), gold=share(sum(golds), len(golds)),
                              loo=loo))
    return out


def rater_table(db: Database, g: Guidelines, study_ref: int | str, block: int = BLOCK) -> RaterTable:
    """The per-rater quality table of a rating study (see the module docstring)."""
    na = na_value(g)
    ordinal = g.scale_kind == "ordinal"
    with db.read() as s:
        study = get_study(s, study_ref)
        rows = _rows(s, study.id)
        answers = gold.first_answers(s, study.id)
        ids = {a.annotator_id: name for a, _r, name, _at in rows}
        quals = {name: gold.qualification(s, study, aid, na).status for aid, name in ids.items()}
    right = {r["assignment_id"]: gold.is_correct(r["expected"], r["values"], r["tolerance"], na) for r in answers}
    avg = average_scores(g, [r for r in submitted_ratings(db, study.id) if not r["adjudicated"]])
    by: dict[str, list[tuple[AssignmentRow, RatingRow, Any]]] = defaultdict(list)
    for a, r, name, at in rows:
        by[name].append((a, r, at))
    table = []
    for name in sorted(by):
        mine = by[name]
        done = sorted([(a, at) for a, r, at in mine if r.revision > 0 and at is not None], key=lambda x: (x[1], x[0].id))
        golds = [right[a.id] for a, _at in done if a.id in right]
        secs = [float(r.active_seconds) for _a, r, _at in mine if r.revision > 0 and (r.active_seconds or 0) > 0]
        med, med_ci = _median(secs, name)
        table.append(RaterRow(
            name=name, qualification=quals.get(name, "none"), submitted=len(done), gold=share(sum(golds), len(golds)),
            median_seconds=med, median_seconds_ci95=med_ci, timed=len(secs),
            skips=sum(1 for _a, r, _at in mine if r.flag == "skip"), flags=sum(1 for _a, r, _at in mine if r.flag == "flag"),
            loo=loo_agreement(avg, name) if ordinal else None, blocks=_blocks(done, right, avg, name, block, ordinal)))
    note = ("Gold accuracy: first submissions of gold items, 95% Wilson interval. Leave-one-out: Kendall τ-b of the "
            "rater's average score vs the mean of the others' on shared real items (gold items excluded), 95% "
            f"bootstrap interval ({RESAMPLES} resamples of the items). Drift: blocks of {block} successive items.")
    if not ordinal:
        note += " Leave-one-out τ needs an ordinal scale: compare categorical levels with `metaeval compare`."
    return RaterTable(raters=table, block=block, note=note)


def raters_jsonl(db: Database, g: Guidelines, study_ref: int | str) -> str:
    """The ``raters`` export: one JSON object per rater (:class:`RaterRow`)."""
    with db.read() as s:
        study = get_study(s, study_ref)
        if study.kind != "rating":
            raise MindEvalError(f"'raters' describes the raters of a rating study, but '{study.name}' is a "
                                "role-play study", field="format")
    return "".join(json.dumps(r.model_dump(mode="json"), ensure_ascii=False) + "\n"
                   for r in rater_table(db, g, study_ref).raters)
