"""The statistic registry (metaeval.statistics): every entry's resampled twin is its point function on a
draw of ones, and a new statistic is one entry that reaches every output (docs/architecture.md)."""

from __future__ import annotations

import csv
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
    Heatmap,
    Layout,
    MetricOptions,
    Statistic,
)
from mindeval import extras
from mindeval.stats.agreement import PairIndex

PROFILES = [k[0] for k in KEYS]


def _ones(pairs: PairIndex) -> types.SimpleNamespace:
    """A 'draw' that takes every interaction and every profile once."""
    return types.SimpleNamespace(items=np.ones((1, pairs.n_items)), profiles=np.ones((1, pairs.n_profiles)))


@pytest.mark.parametrize("key", list(STATISTICS))
def test_each_statistic_on_a_draw_of_ones_is_its_point_value(key):
    st = STATISTICS[key]
    pairs = PairIndex(PROFILES)
    opts = MetricOptions(tau_variant="c", mipsa_ties="exclude")
    x, y = H[0], J[1]
    if st.scale == "categorical":
        x, y = np.round(x) % 3, np.round(y) % 3
    assert st.on_draw(x, y, pairs, _ones(pairs), opts)[0] == pytest.approx(st.point(x, y, pairs, opts))


@pytest.mark.parametrize("key", list(GROUP_STATISTICS))
def test_each_group_statistic_on_a_draw_of_ones_is_its_point_value(key):
    g = GROUP_STATISTICS[key]
    m = np.vstack(H) if g.scale == "ordinal" else np.round(np.vstack(H)) % 3
    assert g.resampled(m, np.ones((1, m.shape[1])))[0] == pytest.approx(g.point(m))


def test_layouts_name_registered_statistics_of_one_scale():
    for lay in LAYOUTS.values():
        assert STATISTICS[lay.lower].scale == STATISTICS[lay.upper].scale


# The worked example of docs/architecture.md ("adding a metaeval statistic"): Spearman's ρ.
def spearman(x, y, pairs, opts):
    from scipy.stats import spearmanr

    keep = ~(np.isnan(x) | np.isnan(y))
    return float(spearmanr(x[keep], y[keep]).statistic)


def spearman_draws(x, y, pairs, counts, opts):
    from scipy.stats import spearmanr

    keep = ~(np.isnan(x) | np.isnan(y))
    return np.array([spearmanr(np.repeat(x[keep], c[keep].astype(int)),
                               np.repeat(y[keep], c[keep].astype(int))).statistic for c in counts])


SPEARMAN = Statistic(
    key="spearman", label=lambda o: "Spearman ρ", short=lambda o: "ρ", variant=lambda o: "spearman rho",
    scale="ordinal", point=spearman, resampled=spearman_draws, resample="items",
    heatmap=Heatmap("RdBu", -1.0, 1.0, "Spearman ρ"),
)


def test_a_new_statistic_is_one_entry_and_reaches_every_output(tmp_path, monkeypatch):
    monkeypatch.setitem(STATISTICS, "spearman", SPEARMAN)
    monkeypatch.setitem(LAYOUTS, "spearman", Layout("spearman", "spearman", "spearman", "Spearman ρ"))
    humans = [rater(f"P{i + 1}", "human", [list(h)]) for i, h in enumerate(H)]
    panel = Panel(humans, [rater("judge", "judge", [list(j) for j in J])])
    opts = MetricOptions(resamples=50, alpha=False)
    with pytest.warns(UserWarning):  # 18 interactions: below the documented minimum
        matrices = build_all(panel, opts, axes=[AVERAGE], dims=Dimensions())
    cell = matrices[AVERAGE].cell("P1", "P2")
    assert cell.point("spearman") == pytest.approx(spearman(H[0], H[1], None, opts))
    assert len(cell.ci["spearman"]) == 2 and cell.ci["spearman"][0] <= cell.point("spearman")
    plots = extras.installed("plots")
    paths = write_outputs(tmp_path, matrices, verdicts(matrices[AVERAGE]), {}, plots=plots)
    rows = [r for r in csv.DictReader(paths["csv"].open()) if r["metric"] == "spearman"]
    assert rows and {r["variant"] for r in rows} == {"spearman rho"}
    data = json.loads(paths["json"].read_text())
    assert "spearman" in data["matrices"][AVERAGE]["cells"][0]["values"]
    md = paths["markdown"].read_text()
    assert "## Spearman ρ\n" in md and "Spearman ρ below the diagonal, Spearman ρ above" in md
    assert [v.metrics.keys() for v in verdicts(matrices[AVERAGE])] == [{"tau", "mipsa"}]  # not a verdict statistic
    if plots:
        assert (tmp_path / "heatmap_average_spearman.png").is_file()
    assert "spearman" not in statistics.verdict_keys()
