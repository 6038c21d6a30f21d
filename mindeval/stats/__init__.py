"""Pure statistics for leaderboards and the meta-evaluation: bootstrap CIs, paired tests, clusters,
ranking agreement, agreement between raters (agreement, resampled: Kendall τ, MIPSA, α, κ),
Wilson intervals and the harm share of the safety gate, and the shares, weights and points of
reply-level scales (reply_scales).

Nothing here knows about language models: inputs are numpy arrays and system names.
"""

from .bootstrap import bootstrap_mean_ci, percentile_interval, resample_counts
from .clusters import greedy_clusters
from .proportion import HarmShare, harm_share, wilson_interval
from .ranking import PairwiseAccuracy, SelfPreference, pairwise_accuracy, self_preference
from .seeding import rng_for
from .significance import (
    TESTS,
    PairedTest,
    paired_bootstrap_pvalue,
    paired_permutation_pvalue,
    paired_pvalue,
)

__all__ = [
    "TESTS",
    "HarmShare",
    "PairedTest",
    "PairwiseAccuracy",
    "SelfPreference",
    "bootstrap_mean_ci",
    "greedy_clusters",
    "harm_share",
    "paired_bootstrap_pvalue",
    "paired_permutation_pvalue",
    "paired_pvalue",
    "pairwise_accuracy",
    "percentile_interval",
    "resample_counts",
    "rng_for",
    "self_preference",
    "wilson_interval",
]
