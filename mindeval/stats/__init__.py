"""Pure statistics for leaderboards and the meta-evaluation: bootstrap CIs, paired tests, clusters,
ranking agreement, agreement between raters (agreement, resampled: Kendall τ, MIPSA, α, κ),
Wilson intervals and the harm share of the safety gate, and the shares, weights and points of
reply-level scales (reply_scales).

Nothing here knows about language models: inputs are numpy arrays and system names.
"""

from __future__ import annotations

import importlib
from typing import Any

# name -> its module: loaded on first use (a target's scale loads this package; numpy waits for a statistic)
_HOMES = {
    "bootstrap_mean_ci": "bootstrap", "percentile_interval": "bootstrap", "resample_counts": "bootstrap",
    "greedy_clusters": "clusters",
    "HarmShare": "proportion", "harm_share": "proportion", "wilson_interval": "proportion",
    "PairwiseAccuracy": "ranking", "SelfPreference": "ranking", "pairwise_accuracy": "ranking",
    "self_preference": "ranking",
    "rng_for": "seeding",
    "TESTS": "significance", "PairedTest": "significance", "paired_bootstrap_pvalue": "significance",
    "paired_permutation_pvalue": "significance", "paired_pvalue": "significance",
}
__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_HOMES[name]}", __name__), name)
    globals()[name] = value
    return value
