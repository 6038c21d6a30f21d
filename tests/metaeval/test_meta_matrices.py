"""Matrices: alignment, leave-one-out average annotator, quartiles over runs, verdicts."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from metaeval.matrices import AVG_LABEL, MetricOptions, Panel, build_matrix, verdicts
from metaeval.sources import SCORE_COLUMNS, RaterScores
from mindeval.stats.agreement import kendall_tau, mipsa

KEYS = [(f"p{p}", f"s{s}") for p in range(6) for s in range(3)]


def rater(label: str, kind: str, runs: list[list[float]], keys=KEYS, ids=None) -> RaterScores:
    rows = []
    for r, scores in enumerate(runs):
        for n, ((pid, sys), v) in enumerate(zip(keys, scores, strict=True)):
            iid = ids[n] if ids else f"{pid}:{sys}"
            rows.append((pid, sys, iid, r, "average", float(v)))
    return RaterScores(label=label, kind=kind, source="test", frame=pd.DataFrame(rows, columns=list(SCORE_COLUMNS)))


RNG = np.random.default_rng(7)
TRUE = RNG.normal(3.5, 1, len(KEYS))
H = [np.round(TRUE + RNG.normal(0, 0.8, len(KEYS)) * 2) / 2 for _ in range(3)]
J = [np.round(TRUE + RNG.normal(0, 0.6, len(KEYS))) for _ in range(5)]
PROFILES = [k[0] for k in KEYS]


@pytest.fixture
def panel() -> Panel:
    humans = [rater(f"P{i + 1}", "human", [list(h)]) for i, h in enumerate(H)]
    return Panel(humans, [rater("judge", "judge", [list(j) for j in J])])


def test_layout_labels_and_runs(panel):
    m = build_matrix(panel, "average", MetricOptions(alpha=False))
    assert m.labels == ["P1", "P2", "P3", "judge", AVG_LABEL]
    assert m.runs == {"P1": 1, "P2": 1, "P3": 1, "judge": 5, AVG_LABEL: 1}
    assert m.n_interactions == len(KEYS)


def test_human_pair_and_leave_one_out_average(panel):
    m = build_matrix(panel, "average", MetricOptions(alpha=False))
    assert m.cell("P1", "P2").point("tau") == pytest.approx(kendall_tau(H[0], H[1]))
    loo = (H[1] + H[2]) / 2  # Avg. P against P1 leaves P1 out
    assert m.cell(AVG_LABEL, "P1").point("tau") == pytest.approx(kendall_tau(loo, H[0]))
    assert m.cell(AVG_LABEL, "P1").point("mipsa") == pytest.approx(mipsa(loo, H[0], PROFILES))


def test_judge_runs_give_quartiles_and_full_average(panel):
    m = build_matrix(panel, "average", MetricOptions(alpha=False, tau_variant="c"))
    per_run = [kendall_tau(j, H[1], "c") for j in J]
    c = m.cell("judge", "P2")
    assert c.values["tau"] == pytest.approx(per_run)
    assert c.summary("tau") == pytest.approx(list(np.percentile(per_run, [25, 50, 75])))
    full = (H[0] + H[1] + H[2]) / 3
    assert m.cell("judge", AVG_LABEL).values["mipsa"] == pytest.approx([mipsa(j, full, PROFILES) for j in J])


def test_missing_interactions_and_exclusions():
    short = rater("P2", "human", [list(H[1][:-3])], keys=KEYS[:-3])
    p = Panel([rater("P1", "human", [list(H[0])]), short], [])
    m = build_matrix(p, "average", MetricOptions(alpha=False))
    assert m.cell("P1", "P2").n_items == [len(KEYS) - 3]
    assert m.cell("P1", "P2").point("tau") == pytest.approx(kendall_tau(H[0][:-3], H[1][:-3]))
    excluded = Panel([rater("P1", "human", [list(H[0])]), rater("P2", "human", [list(H[1])])], [],
                     exclude=["p0:s0", "p1:s2"])
    assert len(excluded.keys) == len(KEYS) - 2 and ("p0", "s0") not in excluded.keys


def test_constant_judge_run_is_nan_with_a_note_not_a_crash(panel):
    const = rater("flat", "judge", [[3.0] * len(KEYS)])
    p = Panel(panel.humans, [const])
    m = build_matrix(p, "average", MetricOptions())
    c = m.cell("flat", "P1")
    assert math.isnan(c.point("tau")) and any("constant" in n for n in c.notes)
    assert math.isnan(c.point("alpha_interval")) is False  # α is defined: the humans vary


def test_judge_pairs_are_paired_by_run():
    a = rater("A", "judge", [list(j) for j in J[:3]])
    b = rater("B", "judge", [list(j) for j in J[2:]])
    one = rater("C", "judge", [list(J[0])])
    two = rater("D", "judge", [list(J[0]), list(J[1])])
    m = build_matrix(Panel([], [a, b, one, two]), "average", MetricOptions(alpha=False))
    assert m.cell("A", "B").values["tau"] == pytest.approx([kendall_tau(J[i], J[i + 2]) for i in range(3)])
    assert m.cell("A", "C").values["tau"] == pytest.approx([kendall_tau(J[i], J[0]) for i in range(3)])
    assert any("paired by index" in n for n in m.cell("A", "D").notes)
    assert AVG_LABEL not in m.labels


def test_verdicts(panel):
    good = rater("good", "judge", [list((H[0] + H[1] + H[2]) / 3)])
    bad = rater("bad", "judge", [list(-(H[0] + H[1] + H[2]))])
    m = build_matrix(Panel(panel.humans, [good, bad]), "average", MetricOptions(alpha=False))
    v = {x.judge: x for x in verdicts(m)}
    assert v["good"].inside and not v["bad"].inside
    assert v["bad"].metrics["tau"]["position"] == "below"
    hh = [m.cell(a, b).point("tau") for a, b in [("P1", "P2"), ("P1", "P3"), ("P2", "P3")]]
    assert v["good"].metrics["tau"]["low"] == pytest.approx(min(hh))
    assert "YES" in v["good"].line(m.options) and "τ-b" in v["good"].line(m.options)
