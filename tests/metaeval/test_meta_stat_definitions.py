"""Each statistic is what docs/metaeval.md says it is: oracles written here from the definitions
(plain loops, exact fractions), sharing no code with the implementations they check.

* leave-one-out Kendall τ-b (the average annotator without one human): one value in ``metaeval
  compare`` and in the annotation app, the exact one, on the authors' 60 × 4 ratings;
* the unit-level leave-one-human-out rows: the judge and the left-out human on the same units;
* Cohen's κ in its degenerate cases as scikit-learn defines it, and a mean over human pairs that
  counts the pairs whose κ is undefined instead of skipping them silently.
"""

from __future__ import annotations

import math
import warnings
from fractions import Fraction
from types import SimpleNamespace

import numpy as np
import pytest

from annotation_app.store.raters import average_scores, loo_agreement
from metaeval.matrices import AVG_LABEL, MetricOptions, Panel, build_matrix
from metaeval.rollup import AVERAGE
from metaeval.sources import load_authors_annotations
from metaeval.unit_agreement import field_figures
from metaeval.unit_fields import UnitField
from metaeval.unit_report import unit_lines
from mindeval.stats import unit_agreement as ua
from mindeval.stats.agreement import cohen_kappa
from mindeval.targets.guidelines import load_guidelines

# ---------------------------------------------------------------- leave-one-out Kendall τ-b


def tau_b(x: list[Fraction], y: list[Fraction]) -> float:
    """Kendall τ-b from its definition: (C − D) / sqrt((n0 − n1)(n0 − n2)), ties counted exactly."""
    n = len(x)
    c = d = tx = ty = 0
    for i in range(n):
        for j in range(i + 1, n):
            sx, sy = (x[i] > x[j]) - (x[i] < x[j]), (y[i] > y[j]) - (y[i] < y[j])
            c += sx * sy > 0
            d += sx * sy < 0
            tx += sx == 0
            ty += sy == 0
    n0 = n * (n - 1) // 2
    return (c - d) / math.sqrt((n0 - tx) * (n0 - ty))


def exact_averages(ratings) -> dict[str, dict[str, Fraction]]:
    """rater → interaction → average score: per axis the mean of the rated (non-zero) sub-axes, then the mean
    of the axes, only when every axis is rated (paper footnote 7), all in fractions."""
    from mindeval.judging.authors import load_mapping

    axis_of = load_mapping().subaxis_axis
    axes = sorted(set(axis_of.values()))
    per: dict[tuple[str, str], dict[str, list[int]]] = {}
    for iid, rater, sub, score in zip(ratings["interaction_id"], ratings["rater"], ratings["subaxis_id"],
                                      ratings["score"], strict=True):
        if score != 0:
            per.setdefault((rater, iid), {}).setdefault(axis_of[sub], []).append(int(score))
    out: dict[str, dict[str, Fraction]] = {}
    for (rater, iid), by_axis in per.items():
        if all(by_axis.get(a) for a in axes):
            out.setdefault(rater, {})[iid] = sum(Fraction(sum(v), len(v)) for v in by_axis.values()) / len(axes)
    return out


def oracle_loo(avg: dict[str, dict[str, Fraction]], rater: str) -> tuple[float, int]:
    mine = avg[rater]
    keys = [i for i in mine if any(i in o for r, o in avg.items() if r != rater)]
    ref = []
    for i in keys:
        others = [o[i] for r, o in avg.items() if r != rater and i in o]
        ref.append(sum(others, Fraction(0)) / len(others))
    return tau_b([mine[i] for i in keys], ref), len(keys)


@pytest.fixture(scope="module")
def authors(shared_data):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_authors_annotations(shared_data / "human_annotations.jsonl")


def test_leave_one_out_tau_is_one_exact_value_in_metaeval_and_the_app(authors):
    avg = exact_averages(authors.ratings)
    assert sorted(avg) == ["P1", "P2", "P3", "P4"]
    # metaeval compare: the Avg. P column (the mean of the other humans) against each human
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = build_matrix(Panel(authors.raters, []), AVERAGE, MetricOptions(alpha=False))
    meta = {c.col: c.values["tau"][0] for c in m.cells if c.row == AVG_LABEL}
    # the app: its own average scores from the integer sub-axis ratings, then its leave-one-out τ
    items = {iid: SimpleNamespace(id=k) for k, iid in enumerate(sorted(authors.interactions))}
    rows: dict[tuple[str, str], dict[str, int]] = {}
    for iid, rater, sub, score in zip(authors.ratings["interaction_id"], authors.ratings["rater"],
                                      authors.ratings["subaxis_id"], authors.ratings["score"], strict=True):
        rows.setdefault((rater, iid), {})[sub] = int(score)
    app_avg = average_scores(load_guidelines(), [{"annotator": r, "item": items[i], "values": v}
                                                 for (r, i), v in rows.items()])
    for h in avg:
        want, n = oracle_loo(avg, h)
        got = loo_agreement(app_avg, h, resamples=10)
        assert got.n == n >= 59  # a rater without an average score on one interaction has 59
        assert got.tau == pytest.approx(want, abs=1e-12), h
        assert meta[h] == pytest.approx(want, abs=1e-12), h
    assert round(meta["P4"], 4) == round(oracle_loo(avg, "P4")[0], 4) == 0.3442


# -------------------------------------------------------- unit level: leave one human out


def _field(humans: dict[str, list[float]], judges: dict[str, list[list[float]]]) -> UnitField:
    n = len(next(iter(humans.values())))
    return UnitField(key="flag:x", kind="flag", unit="reply", group="reply", scale="categorical",
                     categories=["no", "yes"], severity=np.array([0.0, 1.0]), positive=np.array([False, True]),
                     clusters=np.arange(n), humans={h: np.array(v, dtype=float) for h, v in humans.items()},
                     judges={j: np.array(v, dtype=float) for j, v in judges.items()})


def _row(rows, metric: str, rater: str, reference: str):
    got = [r for r in rows if (r.metric, r.rater, r.reference) == (metric, rater, reference)]
    assert len(got) == 1
    return got[0]


def test_the_left_out_human_and_the_judge_are_scored_on_the_same_units():
    nan = math.nan
    humans = {"A": [1, 0, 1, 1, 0, 1, 0, 0], "B": [1, 0, 1, 0, 0, 1, 1, 0], "C": [1, 1, nan, nan, 0, 1, 0, 0]}
    judge = [1, 0, 0, 1, 1, 1, 0, 1]
    rows = field_figures(_field(humans, {"J": [judge]}), np.zeros((0, 8)), 0.95)
    maj = "majority of the other humans"
    # oracle: for each left-out human h, the majority of the others (tie -> "yes", the severe value) on the
    # units h rated; h and the judge scored there; exact agreement averaged over h; n summed over h
    per_h, per_j, n_h, n_j = [], [], 0, 0
    for h, mine in humans.items():
        units = [i for i in range(8) if not math.isnan(mine[i])]
        ref = {}
        for i in units:
            votes = [humans[o][i] for o in humans if o != h and not math.isnan(humans[o][i])]
            ref[i] = 1.0 if 2 * sum(votes) >= len(votes) else 0.0
        per_h.append(sum(mine[i] == ref[i] for i in units) / len(units))
        per_j.append(sum(judge[i] == ref[i] for i in units) / len(units))
        n_h, n_j = n_h + len(units), n_j + len(units)
    hum, jud = _row(rows, "agreement", "humans", maj), _row(rows, "agreement", "J", maj)
    assert (hum.n_items, jud.n_items) == (n_h, n_j) == (22, 22)
    assert hum.value == pytest.approx(sum(per_h) / 3, abs=1e-12)
    assert jud.value == pytest.approx(sum(per_j) / 3, abs=1e-12)


# ------------------------------------------------------------------- Cohen's κ, degenerate


def test_cohen_kappa_degenerate_cases_are_scikit_learns():
    """One shared item the raters disagree on: κ = 0 (1 − observed/chance disagreement = 1 − 1/1);
    one item they agree on, or one category used by both: undefined (chance disagreement 0)."""
    from sklearn.metrics import cohen_kappa_score

    w = np.ones((1, 1))
    assert cohen_kappa_score([0], [1]) == 0.0
    assert ua.kappa(ua.confusions(w, np.array([0.0]), np.array([1.0]), 2))[0] == 0.0
    assert ua.kappa(ua.confusions(w, np.array([0.0]), np.array([2.0]), 3), "quadratic")[0] == 0.0
    assert cohen_kappa([0, np.nan], [1, 1]) == 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert math.isnan(cohen_kappa_score([1, 1], [1, 1]))
        assert math.isnan(cohen_kappa([1, 1], [1, 1]))
    assert math.isnan(ua.kappa(ua.confusions(np.ones((1, 2)), np.array([1.0, 1.0]), np.array([1.0, 1.0]), 2))[0])
    # both constant, in different categories: chance disagreement 1, observed 1 -> 0
    assert cohen_kappa_score([0, 0], [1, 1]) == 0.0
    assert ua.kappa(ua.confusions(np.ones((1, 2)), np.array([0.0, 0.0]), np.array([1.0, 1.0]), 2))[0] == 0.0


def test_the_human_pair_mean_counts_the_pairs_whose_kappa_is_undefined():
    nan = math.nan
    # A-B share two units, both "yes" by both: κ undefined; A-C share one unit and disagree: κ 0;
    # B-C share three units: κ from its definition
    humans = {"A": [1, 1, 0, nan, nan, nan], "B": [1, 1, nan, 1, 0, 0], "C": [nan, nan, 1, 0, 0, 1]}
    rows = field_figures(_field(humans, {}), np.zeros((0, 6)), 0.95)
    b, c = [1, 0, 0], [0, 0, 1]
    po = sum(x == y for x, y in zip(b, c, strict=True)) / 3
    pe = sum((b.count(k) / 3) * (c.count(k) / 3) for k in (0, 1))
    kappa_bc = (po - pe) / (1 - pe)
    assert math.isnan(_row(rows, "kappa", "A", "B").value)
    assert _row(rows, "kappa", "A", "C").value == 0.0
    mean = _row(rows, "kappa", "humans", "humans")
    assert (mean.n_pairs, mean.n_undefined) == (3, 1)
    assert mean.value == pytest.approx((0.0 + kappa_bc) / 2, abs=1e-12)
    rep = {"target": "t", "unit": "reply", "n_conversations": 6, "humans": list(humans), "judges": [],
           "tie_rule": "", "figures": [r.model_dump() for r in rows], "alt_tests": []}
    line = next(x for x in unit_lines({"unit_agreement": rep}) if x.startswith("  flag:x humans:"))
    assert "1 of 3 pairs undefined, left out" in line
