"""Table-4 statistics when some scores are "not relevant" (NaN in the score matrix).

A dimension a judge rated "not relevant" leaves that dimension's denominator: its mean,
interval, paired tests and clusters are computed on the interactions where it was
rated. Each criterion is run through :func:`mindeval.leaderboard.table.compute_table`
on its own rows (the one home of those statistics), then the columns are put together.
Used only when a score matrix holds NaN, so tables without "not relevant" are computed
exactly as before.
"""

from __future__ import annotations

import math

import numpy as np

from .table import (
    CriterionResult,
    PairResult,
    StatsSettings,
    SystemResult,
    SystemScores,
    Table,
    compute_table,
)

_COLUMN = "average"  # compute_table ranks by its "average" column: each single-criterion run uses that name


def compute_table_masked(systems: list[SystemScores], settings: StatsSettings, criteria: tuple[str, ...]) -> Table:
    """Like ``compute_table``, each criterion over the rows where it is not NaN."""
    results: dict[str, dict[str, CriterionResult]] = {s.label: {} for s in systems}
    pairs: list[PairResult] = []
    warnings: list[str] = []
    for j, crit in enumerate(criteria):
        subs = []
        for s in systems:
            keep = ~np.isnan(s.values[:, j])
            if keep.any():
                subs.append(SystemScores(label=s.label, key=s.key,
                                         profile_ids=[p for p, k in zip(s.profile_ids, keep, strict=True) if k],
                                         values=s.values[keep][:, [j]]))
        table = compute_table(subs, settings, (_COLUMN,)) if subs else None
        got = {r.label: r.results[_COLUMN] for r in (table.systems if table else [])}
        for s in systems:
            results[s.label][crit] = got.get(s.label) or CriterionResult(
                mean=math.nan, ci_low=math.nan, ci_high=math.nan, cluster=0)
        if table is not None:
            pairs += [p.model_copy(update={"criterion": crit}) for p in table.pairs]
            warnings += [w for w in table.warnings if w not in warnings]
    avg = "average" if "average" in criteria else criteria[0]
    order = sorted(systems, key=lambda s: (-_finite(results[s.label][avg].mean), s.label))
    out = [SystemResult(label=s.label, key=s.key, n=len(s.profile_ids), rank=rank, results=results[s.label])
           for rank, s in enumerate(order, start=1)]
    return Table(settings=settings, criteria=criteria, systems=out, pairs=pairs, warnings=warnings)


def _finite(x: float) -> float:
    return x if math.isfinite(x) else -math.inf
