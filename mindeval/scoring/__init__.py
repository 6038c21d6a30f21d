"""The one scorer of a run (:mod:`.scorer`: which conversations count, how they are averaged) and
what it reports (:mod:`.blocks`: harm, levels, replies, points, the declared score, per-label)."""

from .blocks import (
    criteria,
    declared_score,
    formula_of,
    named_scores,
    ratings,
    reply_ratings,
    scale_spec,
    summary_blocks,
)
from .scorer import (
    AVERAGE,
    InteractionScore,
    RunScore,
    Unit,
    as_floats,
    per_profile,
    profile_means,
    relevant_scores,
    run_levels,
    score_run,
)

__all__ = ["AVERAGE", "InteractionScore", "RunScore", "Unit", "as_floats", "criteria", "declared_score", "formula_of", "named_scores",
           "per_profile", "profile_means", "ratings", "relevant_scores", "reply_ratings", "run_levels",
           "scale_spec", "score_run", "summary_blocks"]
