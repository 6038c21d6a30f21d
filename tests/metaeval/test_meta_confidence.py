"""Intervals, judge-vs-judge tests, verdicts with confidence, calibration, tie calibration, power."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pandas as pd
import pytest

from metaeval.confidence import OUTCOMES, calibration, confident_verdicts, judge_pairs
from metaeval.matrices import AVG_LABEL, MetricOptions, Panel, build_matrix
from metaeval.sources import SCORE_COLUMNS, RaterScores
from mindeval.stats import agreement as point
from mindeval.stats import resampled
from mindeval.stats.bootstrap import percentile_interval, resample_counts
from mindeval.stats.power import power_at, required_n
from mindeval.stats.significance import PairedTest, bootstrap_pvalue
from mindeval.stats.ties import accuracy_at, tie_calibrated_accuracy


def _noisy(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    x = np.round(rng.normal(3, 1, n) * 2) / 2
    y = np.round(x + rng.normal(0, 1, n))
    x[rng.random(n) < 0.1] = np.nan
    return x, y


# ------------------------------------------------------------ resampled = point, = expanded sample


@pytest.mark.parametrize("seed", range(6))
def test_resampled_statistics_equal_the_point_implementation_on_the_sample(seed):
    rng = np.random.default_rng(seed)
    n = 24
    x, y = _noisy(rng, n)
    third = np.where(rng.random(n) < 0.3, np.nan, np.clip(y + 1, 1, 6))
    ones = np.ones((1, n))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for v in ("b", "c"):
            assert resampled.kendall_tau(x, y, ones, v)[0] == pytest.approx(point.kendall_tau(x, y, v), abs=1e-12)
        for level in ("nominal", "ordinal", "interval"):
            m = np.vstack([x, y, third])
            assert resampled.krippendorff_alpha(m, level, ones)[0] == pytest.approx(
                point.krippendorff_alpha(m, level), abs=1e-12)
        xi, yi = np.round(x), np.round(y)
        assert resampled.cohen_kappa(xi, yi, ones)[0] == pytest.approx(point.cohen_kappa(xi, yi), abs=1e-12)
        m = np.vstack([np.nan_to_num(xi, nan=3), yi, np.clip(yi + 1, 1, 6)])
        assert resampled.fleiss_kappa(m, ones)[0] == pytest.approx(point.fleiss_kappa(m), abs=1e-12)
        idx = point.PairIndex([i // 3 for i in range(n)])
        for rule in ("sign", "exclude", "taub"):
            assert resampled.mipsa(x, y, idx, np.ones((1, idx.n_profiles)), rule)[0] == pytest.approx(
                point.mipsa(x, y, idx, rule), abs=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_a_row_of_counts_is_the_expanded_resample(seed):
    """A resample drawn as counts gives the statistic of the sample indexed with replacement."""
    rng = np.random.default_rng(seed)
    n = 30
    x = rng.normal(size=n)
    y = np.round(x + rng.normal(size=n))
    x = np.round(x * 2) / 2
    picks = rng.integers(0, n, n)
    counts = np.bincount(picks, minlength=n)[None, :].astype(float)
    assert resampled.kendall_tau(x, y, counts)[0] == pytest.approx(point.kendall_tau(x[picks], y[picks]))
    for level in ("nominal", "ordinal", "interval"):
        m = np.vstack([x, y])
        assert resampled.krippendorff_alpha(m, level, counts)[0] == pytest.approx(
            point.krippendorff_alpha(m[:, picks], level))
    # profiles resampled whole: MIPSA of the drawn profiles, a profile drawn twice counting twice
    prof = np.arange(n) // 3
    idx = point.PairIndex(list(prof))
    chosen = rng.integers(0, idx.n_profiles, idx.n_profiles)
    pc = np.bincount(chosen, minlength=idx.n_profiles)[None, :].astype(float)
    shares = point.mipsa_profiles(x, y, idx, "sign")
    assert resampled.mipsa(x, y, idx, pc, "sign")[0] == pytest.approx(np.mean(shares[chosen]))


def test_coverage_of_the_tau_interval_light():
    """Light version of benchmarks/bench_metaeval_confidence.py: a known population τ (bivariate
    normal, τ = 2/π arcsin ρ) is inside the 95% interval in about 95% of simulated studies."""
    rng = np.random.default_rng(7)
    tau, n, studies = 0.38, 55, 150
    rho = math.sin(math.pi * tau / 2)
    hits = 0
    for _ in range(studies):
        h = rng.normal(size=n)
        j = rho * h + math.sqrt(1 - rho**2) * rng.normal(size=n)
        low, high = percentile_interval(resampled.kendall_tau(h, j, resample_counts(n, 400, rng))[:, None])
        hits += bool(low[0] <= tau <= high[0])
    assert 0.89 <= hits / studies <= 0.99


def test_bootstrap_pvalue_is_the_paired_tests_bootstrap_rule():
    rng = np.random.default_rng(3)
    d = rng.normal(0.2, 1, (40, 2))
    for sided in ("one", "two"):
        t = PairedTest(40, test="bootstrap", resamples=500, rng=np.random.default_rng(1), sided=sided)
        via_test = t.pvalue(d)
        resampled_means = (t.weights @ d) / 40
        assert np.allclose(bootstrap_pvalue(resampled_means, d.sum(axis=0), sided), via_test)


# ----------------------------------------------------------------------------------- ties


@pytest.mark.parametrize("seed", range(25))
def test_tie_calibration_equals_brute_force(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 9))
    metric = np.round(rng.normal(0, 1, n), int(rng.integers(0, 2)))
    gold = rng.integers(1, 4, n).astype(float)
    groups = rng.integers(0, 2, n) if seed % 2 else None
    got = tie_calibrated_accuracy(metric, gold, groups)
    # brute force: every pair by hand, every threshold on a fine grid and at every |difference|
    pairs = [(i, j) for i, j in itertools.combinations(range(n), 2) if groups is None or groups[i] == groups[j]]
    if not pairs:
        assert got.n_pairs == 0 and math.isnan(got.accuracy)
        return
    diffs = sorted({abs(metric[i] - metric[j]) for i, j in pairs})
    grid = sorted(set(diffs) | {0.0} | set(np.linspace(0, max(diffs) + 1, 301)))

    def acc(eps: float) -> float:
        ok = 0
        for i, j in pairs:
            dm = metric[i] - metric[j]
            sm = 0 if abs(dm) <= eps else (1 if dm > 0 else -1)
            ok += sm == np.sign(gold[i] - gold[j])
        return ok / len(pairs)

    best = max(acc(e) for e in grid)
    assert got.accuracy == pytest.approx(best)
    assert acc(got.epsilon) == pytest.approx(best)
    assert accuracy_at(metric, gold, got.epsilon, groups) == pytest.approx(best)
    assert got.accuracy_exact_ties == pytest.approx(acc(0.0))
    assert got.epsilon == min(e for e in [0.0, *diffs] if acc(e) == pytest.approx(best))


# ---------------------------------------------------------------- judges with confidence


def _rater(label: str, kind: str, keys: list[tuple[str, str]], scores: np.ndarray) -> RaterScores:
    """``scores``: runs × interactions on the average axis."""
    rows = [(pid, sys, f"{pid}-{sys}", r, "average", float(scores[r, i]))
            for r in range(scores.shape[0]) for i, (pid, sys) in enumerate(keys)]
    return RaterScores(label, kind, "synthetic", pd.DataFrame(rows, columns=list(SCORE_COLUMNS)))


def _study(n_profiles: int, seed: int = 0) -> tuple[Panel, MetricOptions]:
    rng = np.random.default_rng(seed)
    keys = [(f"p{p:02d}", f"s{s}") for p in range(n_profiles) for s in range(3)]
    truth = rng.normal(0, 1, len(keys))
    humans = [_rater(f"P{h + 1}", "human", keys, np.round(3.5 + truth + rng.normal(0, 0.7, len(keys)))[None, :])
              for h in range(4)]
    avg = np.mean([h.frame["score"].to_numpy() for h in humans], axis=0)
    good = _rater("good", "judge", keys, np.vstack([avg + rng.normal(0, 0.05, len(keys)) for _ in range(2)]))
    twin = _rater("twin", "judge", keys, good.frame["score"].to_numpy().reshape(2, -1))
    noise = _rater("noise", "judge", keys, rng.integers(1, 7, (2, len(keys))).astype(float))
    like = _rater("humanlike", "judge", keys, np.round(3.5 + truth + rng.normal(0, 0.7, len(keys)))[None, :])
    opts = MetricOptions(alpha=False, resamples=400, seed=1)
    return Panel(humans, [good, twin, noise, like]), opts


def test_judge_pairs_paired_test_and_clusters():
    panel, opts = _study(20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        diffs, clusters = judge_pairs(panel, opts, ["average"], references=[AVG_LABEL])
    by = {(d.metric, d.judge_a, d.judge_b): d for d in diffs}
    same = by[("tau", "good", "twin")]
    assert same.diff == 0 and same.ci_low == same.ci_high == 0 and same.p_value == 1.0
    far = by[("tau", "good", "noise")]
    assert far.diff > 0.5 and far.ci_low > 0 and far.p_value < 0.01
    (tau_clusters,) = [c for c in clusters if c.metric == "tau"]
    assert tau_clusters.clusters["good"] == tau_clusters.clusters["twin"] == 1
    assert tau_clusters.clusters["noise"] == max(tau_clusters.clusters.values()) > 1


def test_verdicts_with_confidence_have_the_three_outcomes():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        panel, opts = _study(20)
        m = build_matrix(panel, "average", opts)
        verdicts = {v.judge: v for v in confident_verdicts(panel, m)}
        small_panel, small_opts = _study(3, seed=2)
        small = {v.judge: v for v in confident_verdicts(small_panel, build_matrix(small_panel, "average", small_opts))}
    assert verdicts["good"].outcome == OUTCOMES[0] and verdicts["noise"].outcome == OUTCOMES[1]
    tau = verdicts["noise"].metrics[0]
    assert tau.metric == "tau" and tau.diff_ci[1] < 0 and tau.p_value < 0.05
    assert tau.human_low <= tau.human_high and tau.judge_vs_avg_ci[0] <= tau.judge_vs_avg <= tau.judge_vs_avg_ci[1]
    assert "as good as humans" in verdicts["good"].line(opts) and "[" in verdicts["good"].line(opts)
    # 9 interactions cannot tell a judge that rates like a fifth psychologist from the humans
    assert small["humanlike"].outcome == OUTCOMES[2]
    assert small["humanlike"].n_interactions == 9 and small["humanlike"].n_humans == 4


def test_calibration_bias_confusion_and_distance():
    panel, opts = _study(10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = {c.judge: c for c in calibration(panel, opts, ["average"])}
    good = rows["good"]
    assert abs(good.bias) < 0.05 and good.bias_ci[0] <= good.bias <= good.bias_ci[1]
    assert sum(map(sum, good.confusion)) == 2 * 30  # every run of every interaction
    assert np.trace(np.array(good.confusion)) >= 0.8 * 60  # on the diagonal: it is the rounded Avg. P
    assert rows["noise"].wasserstein > good.wasserstein


def test_required_n_reaches_the_power():
    n = required_n(0.07, 60, 0.1, 0.05, 0.8)
    assert power_at(n, 0.07, 60, 0.1) >= 0.8 > power_at(n - 1, 0.07, 60, 0.1)
    assert power_at(60, 0.07, 60, 0.0) == pytest.approx(0.05)


# --------------------------------------------------------------------- the authors' data, end to end


def _judges_over(path, out, rng):
    """Two judges over the authors' 60 interactions: A close to the psychologists' mean, B noisier."""
    import json

    from metaeval.sources import load_authors_annotations

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        src = load_authors_annotations(path)
    allf = pd.concat([r.frame for r in src.raters])
    mean = allf.groupby(["interaction_id", "axis"])["score"].mean()
    dirs = []
    for label, noise in (("A", 0.5), ("B", 1.5)):
        d = out / label
        d.mkdir(parents=True)
        with (d / "judgments.jsonl").open("w") as fh:
            for iid, it in src.interactions.items():
                for r in range(2):
                    scores = {ax: int(np.clip(round(mean.get((iid, ax), 3.5) + rng.normal(0, noise)), 1, 6))
                              for ax in ("CAC", "EPC", "AR", "TRA", "ASCQ")}
                    fh.write(json.dumps({"interaction_id": iid, "profile_id": it.profile_id, "model": it.system,
                                         "judge_model": f"x/{label}", "sample": r, "scores": scores,
                                         "parse_status": "ok"}) + "\n")
        (d / "config.json").write_text(json.dumps({"run_id": label}))
        dirs.append(f"{label}={d}")
    return dirs


def test_compare_on_the_authors_data_prints_intervals_judge_table_and_verdicts(shared_data, tmp_path, capsys):
    from mindeval.cli.meta import main

    humans = str(shared_data / "human_annotations.jsonl")
    judges = _judges_over(shared_data / "human_annotations.jsonl", tmp_path / "runs", np.random.default_rng(0))
    out = tmp_path / "cmp"
    assert main(["compare", "--humans", humans, "--judges", *judges, "--resamples", "200", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    # every printed matrix row: value [low, high] per human cell, [q1, median, q3] ci [low, high] per judge cell
    table_rows = [line for line in printed.splitlines() if line.startswith("| P1 |")]
    assert len(table_rows) == 6
    for row in table_rows:
        cells = [c.strip() for c in row.strip("|").split("|")[2:] if c.strip()]
        assert all("[" in c and c.count(",") >= 1 for c in cells), row
        assert any(" ci [" in c for c in cells)
    assert ("non-inferiority with 95% confidence A (average, 60 interactions, 20 profiles, 4 humans): "
            "is it non-inferior to the humans? AS GOOD AS HUMANS") in printed
    # one verdict per judge and dimension, each answer after its question
    verdict_lines = [line for line in printed.splitlines() if line.startswith("verdict ")]
    assert len(verdict_lines) == 2 * 6
    assert all("is it non-inferior to the humans (95% confidence)?" in line and
               "may it replace a human annotator (alternative annotator test, ε = 0.2)?" in line
               for line in verdict_lines)
    assert "| tau | A | B |" in printed and "| mipsa | A | B |" in printed
    assert "clusters by tau (1 = best; same number = statistically tied): A 1" in printed
    assert "accuracy (calibrated)" in printed
    # files: intervals in the CSV and JSON, judge pairs, calibration, heatmaps and plots in PNG and SVG
    agreement = pd.read_csv(out / "agreement.csv")
    assert agreement[["ci_low", "ci_high"]].notna().all().all()
    assert (agreement["ci_low"] <= agreement["median"] + 1e-12).all()
    assert (agreement["median"] <= agreement["ci_high"] + 1e-12).all()
    pairs = pd.read_csv(out / "judge_pairs.csv")
    assert set(pairs["reference"]) == {"Avg. P", "P1", "P2", "P3", "P4"} and len(pairs) == 6 * 5 * 2
    assert len(pd.read_csv(out / "calibration.csv")) == 2 * 6
    svg = (out / "heatmap_average_tau_mipsa.svg").read_text()
    assert "Kendall τ (below the diagonal)" in svg and "MIPSA (above the diagonal)" in svg
    assert "Krippendorff α" in (out / "heatmap_average_alpha.svg").read_text()
    assert (out / "heatmap_average_tau_mipsa.png").read_bytes()[:4] == b"\x89PNG"
    assert (out / "calibration_A.png").stat().st_size > 10_000 and "judge − Avg. P" in (out / "calibration_A.svg").read_text()


def test_power_from_a_pilot(shared_data, tmp_path, capsys):
    from mindeval.cli.meta import main

    humans = str(shared_data / "human_annotations.jsonl")
    judges = _judges_over(shared_data / "human_annotations.jsonl", tmp_path / "runs", np.random.default_rng(1))
    assert main(["power", "--humans", humans, "--judges", *judges, "--delta", "0.1", "--resamples", "300",
                 "--out", str(tmp_path / "p")]) == 0
    printed = capsys.readouterr().out
    rows = [line for line in printed.splitlines() if line.startswith("| ") and line[2].isdigit()]
    assert [r.split(" | ")[0] for r in rows] == ["| 1", "| 2", "| 3", "| 4"]
    needed = [int(r.split(" | ")[3].split()[0]) for r in rows]
    assert all(n > 0 for n in needed)
    assert needed[-1] < needed[0]  # a reference averaged over more raters is less noisy
    assert main(["power", "--humans", humans, "--judges", judges[0]]) == 2


def test_power_figure_is_the_same_for_any_seed_and_carries_its_spread_over_pilots(shared_data, tmp_path):
    """Issue 28: the bootstrap SE moved 'interactions needed' by ±5% with the seed alone; a pilot's own
    sampling error was not shown."""
    import json

    from mindeval.cli.meta import main

    humans = str(shared_data / "human_annotations.jsonl")
    judges = _judges_over(shared_data / "human_annotations.jsonl", tmp_path / "runs", np.random.default_rng(1))
    reports = []
    for seed in (0, 1):
        assert main(["power", "--humans", humans, "--judges", *judges, "--seed", str(seed),
                     "--out", str(tmp_path / f"p{seed}")]) == 0  # default resamples
        reports.append(json.loads((tmp_path / f"p{seed}" / "power.json").read_text())["rows"])
    assert [r["required_n"] for r in reports[0]] == [r["required_n"] for r in reports[1]]
    for rows in reports:
        for r in rows:
            low, high = r["required_n_range"]
            assert low < high and low <= r["required_n"] * 1.1 and high >= r["required_n"] * 0.9


def test_app_results_page_summary_carries_metaevals_intervals():
    """annotation_app.results uses metaeval's resampled statistics: the point values sit inside
    their intervals, and the bounds are what mindeval.stats.resampled gives on the same draw."""
    from types import SimpleNamespace

    from annotation_app.results import agreement_summary
    from mindeval.targets.guidelines import load_guidelines

    g = load_guidelines()
    rng = np.random.default_rng(5)
    ratings = []
    for i in range(30):
        item = SimpleNamespace(external_id=f"t{i}", member_attributes={"name": f"p{i // 3}"})
        base = int(rng.integers(2, 6))
        for ann in ("ann1", "ann2", "ann3"):
            values = {s.id: int(np.clip(base + rng.integers(-1, 2), 1, 6)) for s in g.human_subaxes}
            ratings.append({"item": item, "annotator": ann, "values": values})
    summary, note = agreement_summary(ratings, g)
    assert summary is not None and "95% bootstrap intervals" in note
    for name in ("mean_pairwise_kendall_tau", "mean_pairwise_mipsa", "krippendorff_alpha_interval"):
        assert summary[f"{name}_95_low"] <= summary[name] <= summary[f"{name}_95_high"], name
    assert summary["transcripts"] == 30 and summary["annotators"] == 3


def test_python_api_returns_frames(tiny_authors, tmp_path):
    from metaeval_builders import write_judgments

    import metaeval
    from metaeval.sources import load_authors_annotations

    src = load_authors_annotations(tiny_authors)
    rows = [{"interaction_id": iid, "profile_id": it.profile_id, "model": it.system, "judge_model": f"x/{label}",
             "sample": 0, "scores": {ax: 1 + (n * k) % 6 for ax in ("CAC", "EPC", "AR", "TRA", "ASCQ")}}
            for label, k in (("A", 1), ("B", 5)) for n, (iid, it) in enumerate(src.interactions.items())]
    a = write_judgments(tmp_path / "A", [r for r in rows if r["judge_model"] == "x/A"])
    b = write_judgments(tmp_path / "B", [r for r in rows if r["judge_model"] == "x/B"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        frames = metaeval.compare(humans=[str(tiny_authors)], judges=[f"A={a}", f"B={b}"], resamples=100)
    assert {"ci_low", "ci_high", "n_interactions", "n_raters"} <= set(frames.agreement.columns)
    assert set(frames.judge_pairs["metric"]) == {"tau", "mipsa"}
    assert set(frames.verdicts["overall"]) <= set(OUTCOMES) and len(frames.verdicts) == 2 * 6 * 2  # judges, axes, τ/MIPSA
    assert len(frames.alt_tests) == 2 * 6 * 3 and set(frames.alt_tests["human"]) == {"P1", "P2", "P3"}
    assert set(frames.clusters["judge"]) == {"A", "B"} and len(frames.calibration) == 12 and len(frames.ties) == 12
    import metaeval.api
    import metaeval.comparison  # every submodule loaded: the name is still the function, no module trick

    assert callable(metaeval.compare) and not isinstance(metaeval.compare, type(metaeval))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = metaeval.compare(humans=[str(tiny_authors)], judges=[f"A={a}", f"B={b}"], resamples=100)
    pd.testing.assert_frame_equal(again.judge_pairs, frames.judge_pairs)


@pytest.mark.parametrize("seed", range(5))
def test_resampled_leaderboard_accuracy_is_table5s_on_the_drawn_profiles(seed):
    from mindeval.stats.agreement import pairwise_accuracy

    rng = np.random.default_rng(seed)
    n_prof, n_sys = 6, 4
    system = np.tile(np.arange(n_sys), n_prof)
    a = rng.integers(1, 7, n_prof * n_sys).astype(float)
    b = np.where(rng.random(len(a)) < 0.5, a, rng.integers(1, 7, len(a))).astype(float)

    def boards(rows):
        return ([a[rows][system[rows] == s].mean() for s in range(n_sys)],
                [b[rows][system[rows] == s].mean() for s in range(n_sys)])

    every = np.arange(len(a))
    ones = np.ones((1, len(a)))
    assert resampled.leaderboard_accuracy(a, b, system, ones)[0] == pytest.approx(pairwise_accuracy(*boards(every)))
    chosen = rng.integers(0, n_prof, n_prof)
    rows = np.concatenate([np.arange(p * n_sys, (p + 1) * n_sys) for p in chosen])
    counts = np.bincount(rows, minlength=len(a))[None, :].astype(float)
    assert resampled.leaderboard_accuracy(a, b, system, counts)[0] == pytest.approx(pairwise_accuracy(*boards(rows)))


def test_every_figure_carries_its_n_and_warns_below_the_minimum(tiny_authors):
    from metaeval.comparison import CompareOptions, run_compare
    from mindeval.stats.agreement import MIN_ITEMS

    res = run_compare(CompareOptions(humans=[str(tiny_authors)], resamples=50))
    assert any(f"agreement figures on 12 shared interactions, below the minimum of {MIN_ITEMS}" in w
               for w in res.warnings)
    assert any("all-humans Krippendorff α (average) on 12 interactions × 3 raters" in w for w in res.warnings)
    m = res.matrices["average"]
    assert m.group_n == {"interactions": 12, "raters": 3}
    assert {c.n_raters for c in m.cells if AVG_LABEL in (c.row, c.col)} == {3}
    assert all(c.n_items == [12] for c in m.cells)
