"""The alternative annotator test (Calderon et al., ACL 2025) against an independent implementation.

The reference below is written from the paper's procedure with plain loops, its own t statistic
(Student's t distribution) and its own Benjamini-Yekutieli step-up, sharing no code with
``mindeval.stats.alt_test``. A judge with several runs is one rater (docs/metaeval.md): per item
the mean of its runs (ordinal), or its runs' most frequent category (a tie: the mean accuracy of
the tied categories), scored exactly as the left-out human is.
"""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.stats import t as student_t

from metaeval.alternative import alt_tests
from metaeval.matrices import MetricOptions, Panel, build_all
from metaeval.rollup import AVERAGE
from metaeval.sources import RaterScores, load_authors_annotations
from mindeval.stats.alt_test import EPSILON_GRID, alt_test

# ------------------------------------------------------------------ the independent reference


def _score(pred: float, others: list[float], categorical: bool) -> float:
    if categorical:
        return sum(1.0 for o in others if o == pred) / len(others)
    return -math.sqrt(sum((pred - o) ** 2 for o in others) / len(others))


def _p_less(d: list[float], eps: float) -> float:
    n = len(d)
    mean = sum(d) / n
    var = sum((x - mean) ** 2 for x in d) / (n - 1)
    if var == 0:
        return 0.0 if mean < eps else 1.0
    return float(student_t.cdf((mean - eps) / math.sqrt(var / n), n - 1))


def _by(ps: list[float]) -> list[float]:
    m = len(ps)
    c = sum(1 / i for i in range(1, m + 1))
    order = sorted(range(m), key=lambda i: ps[i])
    out = [0.0] * m
    running = 1.0
    for rank in range(m, 0, -1):
        i = order[rank - 1]
        running = min(running, ps[i] * m * c / rank)
        out[i] = min(1.0, running)
    return out


def reference(judge: np.ndarray, humans: np.ndarray, categorical: bool, eps: float,
              level: float = 0.05) -> tuple[float, float, list[float]]:
    """ω, ρ and the corrected p-values per human."""
    ps, rhos = [], []
    for j in range(humans.shape[0]):
        d, wj_all = [], []
        for i in range(humans.shape[1]):
            if math.isnan(humans[j, i]):
                continue
            others = [humans[k, i] for k in range(humans.shape[0]) if k != j and not math.isnan(humans[k, i])]
            runs = [r[i] for r in judge if not math.isnan(r[i])]
            if not others or not runs:
                continue
            if categorical:
                top = max(runs.count(c) for c in runs)
                modes = sorted({c for c in runs if runs.count(c) == top})
                s_judge = sum(_score(c, others, True) for c in modes) / len(modes)
            else:
                s_judge = _score(sum(runs) / len(runs), others, False)
            s_human = _score(humans[j, i], others, categorical)
            wj, wh = float(s_judge >= s_human), float(s_human >= s_judge)
            d.append(wh - wj)
            wj_all.append(wj)
        ps.append(_p_less(d, eps))
        rhos.append(sum(wj_all) / len(wj_all))
    q = _by(ps)
    return sum(1 for x in q if x < level) / len(q), sum(rhos) / len(rhos), q


def _check(judge: np.ndarray, humans: np.ndarray, categorical: bool) -> None:
    labels = [f"P{i + 1}" for i in range(humans.shape[0])]
    scale = "categorical" if categorical else "ordinal"
    for eps in EPSILON_GRID:
        got = alt_test(judge, humans, labels, scale, epsilon=eps)
        omega, rho, q = reference(judge, humans, categorical, eps)
        assert got.omega == omega and got.omega_grid[f"{eps:g}"] == omega
        assert got.rho == pytest.approx(rho, abs=1e-12)
        assert [h.p_corrected for h in got.humans] == pytest.approx(q, abs=1e-12)


# ------------------------------------------------------------------------------ random data


@pytest.mark.parametrize("seed", range(5))
def test_equals_the_reference_on_random_ordinal_and_categorical_data(seed):
    rng = np.random.default_rng(seed)
    n = 40
    truth = rng.normal(3.5, 1, n)
    humans = np.clip(np.round(truth + rng.normal(0, 0.8, (4, n))), 1, 6)
    humans[rng.random((4, n)) < 0.1] = np.nan
    judge = np.clip(np.round(truth + rng.normal(0, 0.3 + seed * 0.4, (2, n))), 1, 6)
    judge[0, :3] = np.nan
    _check(judge, humans, categorical=False)
    _check(judge, humans / 2, categorical=False)  # half points: ties between judge and human become rare
    cats = rng.integers(0, 3, (5, n)).astype(float)
    cats[1] = np.where(rng.random(n) < 0.6, cats[0], cats[1])
    _check(np.where(rng.random((1, n)) < 0.5, cats[0], rng.integers(0, 3, n)).astype(float), cats, categorical=True)
    # three categorical runs: majorities and ties between categories
    _check(np.where(rng.random((3, n)) < 0.5, cats[0], rng.integers(0, 3, (3, n))).astype(float), cats,
           categorical=True)


def test_below_the_papers_minimums_it_reports_without_pass_or_fail():
    rng = np.random.default_rng(0)
    humans = rng.integers(1, 7, (2, 50)).astype(float)
    res = alt_test(humans[:1], humans, ["P1", "P2"], "ordinal")
    assert res.status.startswith("not applicable: 2 humans")
    humans = rng.integers(1, 7, (3, 20)).astype(float)
    res = alt_test(humans[:1], humans, ["P1", "P2", "P3"], "ordinal")
    assert res.status.startswith("not applicable: a human has 20 testable items")


# -------------------------------------------------------------------------- the authors' data


AXES = ("CAC", "EPC", "AR", "TRA", "ASCQ")


def _judge(label: str, frame: pd.DataFrame) -> RaterScores:
    return RaterScores(label=label, kind="judge", source=label, frame=frame.reset_index(drop=True))


@pytest.fixture(scope="module")
def authors_panel(shared_data):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        src = load_authors_annotations(shared_data / "human_annotations.jsonl")
    humans = src.raters
    base = humans[0].frame
    rng = np.random.default_rng(7)
    rand = base.assign(score=rng.integers(1, 7, len(base)).astype(float))
    rand.loc[rand["axis"] == AVERAGE, "score"] = np.nan
    wide = rand[rand["axis"] != AVERAGE].pivot_table(index="interaction_id", columns="axis", values="score")
    rand = rand.set_index("interaction_id")
    rand.loc[rand["axis"] == AVERAGE, "score"] = wide.mean(axis=1).reindex(rand[rand["axis"] == AVERAGE].index)
    judges = [_judge("random", rand.reset_index()), _judge("copies-P1", base.copy())]
    return humans, judges


def test_on_the_authors_release_equals_the_reference_and_separates_the_judges(authors_panel):
    humans, judges = authors_panel
    panel = Panel(humans, judges)
    opts = MetricOptions(alpha=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tests = alt_tests(panel, build_all(panel, opts), opts)
    by = {(t.judge, t.axis): t for t in tests}
    assert len(by) == 2 * (len(AXES) + 1)
    keys = {k: i for i, k in enumerate(panel.keys)}
    for (judge, axis), t in by.items():
        human = np.full((len(humans), len(keys)), np.nan)
        for h, r in enumerate(humans):
            f = r.frame[r.frame.axis == axis]
            for p, s, v in zip(f.profile_id, f.system, f.score, strict=True):
                human[h, keys[(p, s)]] = v
        jr = next(j for j in judges if j.label == judge).frame
        jr = jr[jr.axis == axis]
        jm = np.full((1, len(keys)), np.nan)
        for p, s, v in zip(jr.profile_id, jr.system, jr.score, strict=True):
            jm[0, keys[(p, s)]] = v
        omega, rho, q = reference(jm, human, False, 0.2)
        assert t.result.omega == omega, (judge, axis)
        assert t.result.rho == pytest.approx(rho, abs=1e-12)
        assert [h.p_corrected for h in t.result.humans] == pytest.approx(q, abs=1e-12)
    # the copy always beats the human it copies; it ranks above a random judge on the average score
    assert all(by[("copies-P1", ax)].result.humans[0].p_corrected == 0.0 for ax in (*AXES, AVERAGE))
    copy, rand = by[("copies-P1", AVERAGE)].result, by[("random", AVERAGE)].result
    assert copy.status == "pass" and copy.omega == 0.75 and copy.rho > rand.rho
    # the psychologists agree so little on some axes that even random scores pass at ε = 0.2 there;
    # on TRA and ASCQ a random judge beats none of them
    assert by[("random", "TRA")].result.omega == by[("random", "ASCQ")].result.omega == 0.0


def test_compare_takes_epsilon_and_writes_the_test_everywhere(shared_data, tmp_path, capsys):
    from metaeval_builders import write_judgments

    from mindeval.cli.meta import main

    ann = shared_data / "human_annotations.jsonl"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        src = load_authors_annotations(ann)
    p1 = src.raters[0].frame
    rows = [{"interaction_id": iid, "profile_id": it.profile_id, "model": it.system, "judge_model": "copy/p1",
             "protocol": "paper",  # P1's axis scores are means of criteria: fractional
             "scores": {ax: float(p1[(p1.interaction_id == iid) & (p1.axis == ax)]["score"].iloc[0]) for ax in AXES}}
            for iid, it in src.interactions.items()]
    jdir = write_judgments(tmp_path / "copy", rows, {"run_id": "c"})
    out = tmp_path / "cmp"
    assert main(["compare", "--humans", str(ann), "--judges", f"C={jdir}", "--epsilon", "0.3", "--resamples", "0",
                 "--no-plots", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    line = next(x for x in printed.splitlines() if x.startswith("verdict C (average): "))
    assert "is its agreement at least the lowest human-human agreement?" in line
    assert "may it replace a human annotator (alternative annotator test, ε = 0.3)? PASS" in line
    report = json.loads((out / "agreement.json").read_text())
    assert {t["result"]["epsilon"] for t in report["alt_tests"]} == {0.3} and len(report["alt_tests"]) == 6
    assert "## Alternative annotator test (Calderon et al. 2025)" in (out / "agreement.md").read_text()


def test_a_judge_with_several_runs_is_one_rater_scored_on_the_mean_of_its_runs(authors_panel):
    """Three runs P1 − 1, P1, P1 + 1 average to P1: the judge is then exactly the single-run copy of P1
    (every ω, ρ and p equal), not a rater charged for the spread of its runs."""
    humans, judges = authors_panel
    base = humans[0].frame
    three = pd.concat([base.assign(run=k, score=base.score + d) for k, d in enumerate((-1.0, 0.0, 1.0))])
    panel = Panel(humans, [judges[1], _judge("three-runs", three)])
    opts = MetricOptions(alpha=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tests = alt_tests(panel, build_all(panel, opts), opts)
    by = {(t.judge, t.axis): t.result for t in tests}
    for ax in (*AXES, AVERAGE):
        one, many = by[("copies-P1", ax)], by[("three-runs", ax)]
        assert (many.omega, many.status, many.omega_grid) == (one.omega, one.status, one.omega_grid), ax
        assert many.rho == pytest.approx(one.rho, abs=1e-12)
        assert [h.p_corrected for h in many.humans] == pytest.approx([h.p_corrected for h in one.humans], abs=1e-12)
    assert by[("three-runs", "TRA")].status == by[("three-runs", "ASCQ")].status == "pass"
