"""Python API: ``metaeval.compare(...)`` returns pandas frames of everything `metaeval compare` prints.

The same computation as the command (:func:`metaeval.comparison.run_compare`): one implementation
of every statistic, frames instead of text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
from pydantic import BaseModel, ConfigDict

from mindeval.study_data import StudyRatings

from .comparison import CompareOptions, CompareResult, run_compare
from .matrices import long_table


class CompareFrames(BaseModel):
    """``agreement``: one row per rater pair, axis and metric (q1/median/q3 over runs, ci_low/ci_high,
    n_interactions, n_raters); ``judge_pairs``: judge-vs-judge tests; ``clusters``: tied judges;
    ``verdicts``: verdicts with confidence (one row per judge, ordinal dimension and metric); ``calibration``;
    ``ties``; ``alt_tests``: the alternative annotator test (one row per judge, dimension and left-out human);
    ``result``: the full :class:`~metaeval.comparison.CompareResult`."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    agreement: pd.DataFrame
    judge_pairs: pd.DataFrame
    clusters: pd.DataFrame
    verdicts: pd.DataFrame
    calibration: pd.DataFrame
    ties: pd.DataFrame
    alt_tests: pd.DataFrame
    result: CompareResult


def compare(humans: Sequence[str] = (), judges: Sequence[str] = (), *,
            studies: Mapping[str, StudyRatings] | None = None, **options: Any) -> CompareFrames:
    """Compare judges with humans; ``options`` are :class:`~metaeval.comparison.CompareOptions` fields
    (``resamples``, ``ci``, ``seed``, ``alpha_level``, ``margin``, ``mipsa_ties``, ``zeros``...).
    An annotation database among ``humans`` needs its study's ratings in ``studies`` (by URL:
    ``annotation_app.store.read_ratings(url, study)``)."""
    res = run_compare(CompareOptions(humans=list(humans), judges=list(judges), **options), studies)
    verdict_rows = [{"judge": v.judge, "axis": v.axis, "overall": v.outcome, **m.model_dump()}
                    for v in res.confident for m in v.metrics]
    cluster_rows = [{"axis": c.axis, "metric": c.metric, "reference": c.reference, "judge": j,
                     "agreement": c.values[j], "cluster": k} for c in res.judge_clusters for j, k in c.clusters.items()]
    return CompareFrames(
        agreement=long_table(res.matrices),
        judge_pairs=pd.DataFrame([d.model_dump() for d in res.judge_diffs]),
        clusters=pd.DataFrame(cluster_rows),
        verdicts=pd.DataFrame(verdict_rows),
        calibration=pd.DataFrame([c.model_dump() for c in res.calibration]),
        ties=pd.DataFrame([t.model_dump() for t in res.ties]),
        alt_tests=pd.DataFrame([{"judge": t.judge, "axis": t.axis, "epsilon": t.result.epsilon, "status": t.result.status,
                                 "omega": t.result.omega, "rho": t.result.rho, **h.model_dump()}
                                for t in res.alt_tests for h in t.result.humans]),
        result=res,
    )
