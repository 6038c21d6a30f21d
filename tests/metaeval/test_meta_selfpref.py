"""Table 5: leaderboard pairwise accuracy and self-preference on hand-built rankings."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from metaeval.matrices import Panel
from metaeval.selfpref import (
    find_self_system,
    interaction_means,
    leaderboard,
    leaderboard_accuracy,
    self_preference,
)
from metaeval.sources import SCORE_COLUMNS, RaterScores
from mindeval.stats.agreement import AgreementWarning

SYSTEMS = ["me/judge", "x/other", "y/third"]


def judge_frame(label: str, table: dict[str, list[float]], runs: int = 1) -> RaterScores:
    """table: profile -> scores of SYSTEMS (NaN = missing)."""
    rows = []
    for r in range(runs):
        for pid, scores in table.items():
            for sys, v in zip(SYSTEMS, scores, strict=True):
                if not np.isnan(v):
                    rows.append((pid, sys, f"{pid}:{sys}", r, "average", float(v) + 0.0 * r))
    return RaterScores(label=label, kind="judge", source="t", frame=pd.DataFrame(rows, columns=list(SCORE_COLUMNS)))


REF = {"a": [2, 4, 3], "b": [5, 1, 3], "c": [1, 2, 3], "d": [4, 4, 1]}
ALT = {"a": [5, 4, 3], "b": [5, 1, 3], "c": [3, 2, 1], "d": [4, 5, 1]}
# ranks of me/judge (1 = best), reference -> judge:
#   a: 3 -> 1 (Δ +2)   b: 1 -> 1 (0)   c: 3 -> 1 (+2)   d: tie 1.5 -> 2 (-0.5)


def test_self_preference_by_hand():
    ref, alt = judge_frame("ref", REF), judge_frame("alt", ALT)
    panel = Panel([], [ref, alt])
    sp = self_preference(panel, interaction_means(panel, alt), interaction_means(panel, ref), "me/judge")
    assert sp.n_profiles == 4
    assert sp.avg_rank_delta == pytest.approx((2 + 0 + 2 - 0.5) / 4)
    assert sp.pct_rank_improvements == pytest.approx(50.0)


def test_profiles_without_the_self_system_or_a_rival_are_skipped():
    ref = judge_frame("ref", {**REF, "e": [np.nan, 3, 2], "f": [3, np.nan, np.nan]})
    alt = judge_frame("alt", {**ALT, "e": [np.nan, 1, 2], "f": [6, np.nan, np.nan]})
    panel = Panel([], [ref, alt])
    sp = self_preference(panel, interaction_means(panel, alt), interaction_means(panel, ref), "me/judge")
    assert sp.n_profiles == 4


def test_no_usable_profile_is_nan_with_warning():
    ref, alt = judge_frame("ref", REF), judge_frame("alt", ALT)
    panel = Panel([], [ref, alt])
    with pytest.warns(AgreementWarning, match="no profile"):
        sp = self_preference(panel, interaction_means(panel, alt), interaction_means(panel, ref), "not/here")
    assert math.isnan(sp.avg_rank_delta) and sp.n_profiles == 0


def test_leaderboards_and_pairwise_accuracy():
    ref, alt = judge_frame("ref", REF), judge_frame("alt", ALT)
    panel = Panel([], [ref, alt])
    lr = leaderboard(panel, interaction_means(panel, ref))
    la = leaderboard(panel, interaction_means(panel, alt))
    assert lr["me/judge"] == pytest.approx(3.0) and la["me/judge"] == pytest.approx(4.25)
    # ref: me 3.0, other 2.75, third 2.5 ; alt: me 4.25, other 3.0, third 2.0 -> same order
    assert leaderboard_accuracy(lr, la) == 1.0
    flipped = pd.Series({"me/judge": 1.0, "x/other": 2.0, "y/third": 0.0})
    assert leaderboard_accuracy(lr, flipped) == pytest.approx(2 / 3)


def test_runs_are_averaged_per_interaction():
    r = judge_frame("r", REF, runs=3)
    panel = Panel([], [r])
    assert interaction_means(panel, r)[0] == pytest.approx(2.0)


def test_find_self_system():
    assert find_self_system("me/judge", SYSTEMS) == "me/judge"
    assert find_self_system("azure/judge", SYSTEMS) == "me/judge"
    assert find_self_system("openai/gpt-5", SYSTEMS) is None
