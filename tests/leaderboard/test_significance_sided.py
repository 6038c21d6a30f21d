"""One- vs two-sided paired tests, and the bootstrap small-sample warning backed by simulation."""

from __future__ import annotations

import numpy as np
import pytest

from mindeval.stats.power import rejection_rate
from mindeval.stats.significance import (
    BOOTSTRAP_MIN_N,
    PairedTest,
    paired_pvalue,
    small_sample_warning,
)


@pytest.mark.parametrize("test", ["permutation", "bootstrap"])
def test_one_sided_is_half_the_two_sided_in_the_observed_direction(test):
    d = np.array([1.0] * 9 + [-1.0] * 2 + [0.0] * 19)
    one = paired_pvalue(d, test=test, resamples=20000, rng=np.random.default_rng(1), sided="one")[0]
    two = paired_pvalue(d, test=test, resamples=20000, rng=np.random.default_rng(1), sided="two")[0]
    assert one == pytest.approx(two / 2, rel=0.05)
    # the direction is the observed winner's: flipping a and b gives the same p-value
    flipped = paired_pvalue(-d, test=test, resamples=20000, rng=np.random.default_rng(1), sided="one")[0]
    assert flipped == pytest.approx(one)


def test_exact_one_sided_permutation():
    d = np.array([1.0, 1.0, 1.0, 1.0, -1.0])  # 2**5 sign vectors <= resamples: enumerated
    t = PairedTest(5, test="permutation", resamples=100, rng=np.random.default_rng(0), sided="one")
    assert t.exact and t.pvalue(d)[0] == pytest.approx(6 / 32)  # sums >= 3: five with one -1, one with none
    t2 = PairedTest(5, test="permutation", resamples=100, rng=np.random.default_rng(0), sided="two")
    assert t2.pvalue(d)[0] == pytest.approx(12 / 32)


def test_bootstrap_warning_threshold_matches_a_simulation():
    """A small simulation: the bootstrap over-rejects below the threshold; the warning fires there."""
    small = rejection_rate("bootstrap", "two", 10, sims=600, resamples=400, seed=11).rate
    perm = rejection_rate("permutation", "two", 10, sims=600, resamples=400, seed=11).rate
    assert small > 0.05 + 0.01 and perm <= 0.05 + 0.01
    for sided in ("one", "two"):
        need = BOOTSTRAP_MIN_N[sided]
        assert small_sample_warning("bootstrap", need - 1, sided) is not None
        assert small_sample_warning("bootstrap", need, sided) is None
        assert small_sample_warning("permutation", 5, sided) is None
    assert "one-sided" in small_sample_warning("bootstrap", 10, "one")


def test_power_simulation_is_reproducible_and_one_sided_is_stronger():
    one = rejection_rate("permutation", "one", 50, delta=0.15, sims=300, resamples=400, seed=5)
    again = rejection_rate("permutation", "one", 50, delta=0.15, sims=300, resamples=400, seed=5)
    two = rejection_rate("permutation", "two", 50, delta=0.15, sims=300, resamples=400, seed=5)
    assert one.rate == again.rate and one.rate > two.rate


def test_leaderboard_warns_on_a_small_bootstrap(make_run):
    from leaderboard_rundirs import uniform

    from mindeval.leaderboard import StatsSettings, build_leaderboard

    runs = [make_run("a", "m1", uniform(4, n=20)), make_run("b", "m2", uniform(3, n=20))]
    warned = build_leaderboard(runs, StatsSettings(test="bootstrap")).warnings
    assert any("paired bootstrap (one-sided) on 20 shared profiles" in w for w in warned)
    assert not any("paired bootstrap" in w for w in build_leaderboard(runs).warnings)
