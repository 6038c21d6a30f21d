"""The statistic registry (metaeval.statistics): every entry's resampled twin is its point function on a
draw of ones, and a new statistic is one entry that reaches every output (docs/architecture.md)."""

from __future__ import annotations

import csv
import dataclasses
import json
import types

import numpy as np
import pytest
from test_meta_matrices import KEYS, H, J, rater

from metaeval import statistics
from metaeval.matrices import Panel, build_all, verdicts
from metaeval.report import write_outputs
from metaeval.rollup import AVERAGE, Dimensions
from metaeval.statistics import (
    GROUP_STATISTICS,
    LAYOUTS,
    STATISTICS,
    MetricOptions,
    Statistic,
)
from mindeval import extras
from mindeval.stats import agreement
from mindeval.stats.agreement import PairIndex

PROFILES = [k[0] for k in KEYS]


def _ones(pairs: PairIndex) -> types.SimpleNamespace:
    """A 'draw' that takes every interaction and every profile once."""
    return types.SimpleNamespace(items=np.ones((1, pairs.n_items)), profiles=np.ones((1, pairs.n_profiles)))


def _sample(st: Statistic):
    """Two raters' scores on the test interactions (categories for a categorical statistic), their
    pair index and options."""
    x, y = H[0], J[1]
    if st.scale == "categorical":
        x, y = np.round(x) % 3, np.round(y) % 3
    return x, y, PairIndex(PROFILES), MetricOptions(tau_variant="c", mipsa_ties="exclude")


@pytest.mark.parametrize("key", list(STATISTICS))
def test_each_statistic_on_a_draw_of_ones_is_its_point_value(key):
    st = STATISTICS[key]
    x, y, pairs, opts = _sample(st)
    assert st.on_draw(x, y, pairs, _ones(pairs), opts)[0] == pytest.approx(st.point(x, y, pairs, opts))


def _expanded(x, y, pairs: PairIndex, resample: str, counts: np.ndarray):
    """The sample a draw stands for, written out: each interaction (or each profile, whole, as a
    new profile per copy) repeated as often as the draw took it."""
    take = counts if resample == "items" else counts[pairs.item_profile]
    if resample == "items":
        idx = np.repeat(np.arange(pairs.n_items), take.astype(int))
        return x[idx], y[idx], PairIndex([PROFILES[i] for i in idx])
    idx, labels = [], []
    for p in range(pairs.n_profiles):
        members = np.flatnonzero(pairs.item_profile == p)
        for copy in range(int(counts[p])):
            idx.extend(members)
            labels.extend([f"{p}/{copy}"] * len(members))
    idx = np.asarray(idx)
    return x[idx], y[idx], PairIndex(labels)


@pytest.mark.parametrize("key", list(STATISTICS))
def test_each_statistic_on_a_real_draw_is_its_point_value_on_the_expanded_sample(key):
    """A resampled twin must read its draw: on three random draws it equals the point function on
    the sample each draw stands for (a twin that ignored its draw passes a draw of ones only)."""
    st = STATISTICS[key]
    x, y, pairs, opts = _sample(st)
    n = pairs.n_items if st.resample == "items" else pairs.n_profiles
    draws = np.random.default_rng(3).multinomial(n, np.full(n, 1 / n), size=3).astype(float)
    boot = types.SimpleNamespace(items=draws, profiles=draws)
    got = st.on_draw(x, y, pairs, boot, opts)
    want = [st.point(*_expanded(x, y, pairs, st.resample, c), opts) for c in draws]
    assert got == pytest.approx(want, nan_ok=True)
    assert len(set(np.round(want, 12))) > 1  # the draws differ, so a twin ignoring them fails


def test_the_draw_check_catches_a_twin_that_ignores_its_draw():
    lazy = dataclasses.replace(
        STATISTICS["tau"], resampled=lambda x, y, pairs, counts, opts: np.full(
            len(counts), STATISTICS["tau"].point(x, y, pairs, opts)))
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(STATISTICS, "tau", lazy)
        assert _ones_check_passes("tau")
        with pytest.raises(AssertionError):
            test_each_statistic_on_a_real_draw_is_its_point_value_on_the_expanded_sample("tau")


def _ones_check_passes(key: str) -> bool:
    test_each_statistic_on_a_draw_of_ones_is_its_point_value(key)
    return True


@pytest.mark.parametrize("key", list(GROUP_STATISTICS))
def test_each_group_statistic_on_a_draw_of_ones_is_its_point_value(key):
    g = GROUP_STATISTICS[key]
    m = np.vstack(H) if g.scale == "ordinal" else np.round(np.vstack(H)) % 3
    assert g.resampled(m, np.ones((1, m.shape[1])))[0] == pytest.approx(g.point(m))


@pytest.mark.parametrize("key", list(GROUP_STATISTICS))
def test_each_group_statistic_on_a_real_draw_is_its_point_value_on_the_expanded_sample(key):
    g = GROUP_STATISTICS[key]
    m = np.vstack(H) if g.scale == "ordinal" else np.round(np.vstack(H)) % 3
    draws = np.random.default_rng(4).multinomial(m.shape[1], np.full(m.shape[1], 1 / m.shape[1]), size=3)
    want = [g.point(m[:, np.repeat(np.arange(m.shape[1]), c)]) for c in draws]
    assert g.resampled(m, draws.astype(float)) == pytest.approx(want, nan_ok=True)
    assert len(set(np.round(want, 12))) > 1


def test_layouts_name_registered_statistics_of_one_scale():
    for lay in LAYOUTS.values():
        assert STATISTICS[lay.lower].scale == STATISTICS[lay.upper].scale


# The worked example of docs/architecture.md ("adding a metaeval statistic"): Spearman's ρ, a real entry
# (its resampled function is checked against its point function by the two parametrised tests above).
def test_spearman_is_scipys_on_the_interactions_both_raters_scored():
    from scipy.stats import spearmanr

    x = np.array([1, 2, 2, 3, np.nan, 5, 6, 4, 4, 1], dtype=float)
    y = np.array([2, 1, 3, 3, 6, np.nan, 5, 4, 6, 2], dtype=float)
    keep = ~(np.isnan(x) | np.isnan(y))
    assert agreement.spearman(x, y) == pytest.approx(spearmanr(x[keep], y[keep]).statistic, abs=1e-12)
    with pytest.warns(agreement.AgreementWarning, match="constant rater"):
        assert np.isnan(agreement.spearman(x, np.full_like(x, 3.0)))


def test_a_new_statistic_is_one_entry_and_reaches_every_output(tmp_path):
    humans = [rater(f"P{i + 1}", "human", [list(h)]) for i, h in enumerate(H)]
    panel = Panel(humans, [rater("judge", "judge", [list(j) for j in J])])
    opts = MetricOptions(resamples=50, alpha=False)
    with pytest.warns(UserWarning):  # 18 interactions: below the documented minimum
        matrices = build_all(panel, opts, axes=[AVERAGE], dims=Dimensions())
    cell = matrices[AVERAGE].cell("P1", "P2")
    assert cell.point("spearman") == pytest.approx(agreement.spearman(H[0], H[1]))
    assert len(cell.ci["spearman"]) == 2 and cell.ci["spearman"][0] <= cell.point("spearman")
    plots = extras.installed("plots")
    paths = write_outputs(tmp_path, matrices, verdicts(matrices[AVERAGE]), {}, plots=plots)
    rows = [r for r in csv.DictReader(paths["csv"].open()) if r["metric"] == "spearman"]
    assert rows and {r["variant"] for r in rows} == {"spearman rho"}
    data = json.loads(paths["json"].read_text())
    assert "spearman" in data["matrices"][AVERAGE]["cells"][0]["values"]
    md = paths["markdown"].read_text()
    assert "## Spearman ρ\n" in md and "Spearman ρ in both triangles" in md
    assert [v.metrics.keys() for v in verdicts(matrices[AVERAGE])] == [{"tau", "mipsa"}]  # not a verdict statistic
    if plots:
        assert (tmp_path / "heatmap_average_spearman.png").is_file()
    assert "spearman" not in statistics.verdict_keys()
