"""Human-calibrated leaderboard (``mindeval leaderboard --humans``): prediction-powered means of
each system on the human scale, checked against the maintained ``ppi-python`` package."""

from __future__ import annotations

import csv
import json

import numpy as np
import ppi_py
import pytest
from leaderboard_rundirs import write_run
from scipy import stats

from mindeval.cli import main
from mindeval.stats.ppi import ppi_mean

SUBAXES = ("evidence_based_intervention", "balanced_validation_progression", "role_boundary_integrity",
           "respect_inclusion", "clinical_reasoning_integration", "attunement_prioritization",
           "collaborative_stance", "alliance_maintenance", "coherence_style")


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("lam", [None, 1.0, 0.0])
def test_ppi_mean_equals_ppi_python(seed, lam):
    rng = np.random.default_rng(seed)
    big_n, n = 200, [12, 20, 50][seed % 3]
    human = rng.normal(3.5, 1.0, big_n)
    judge = (0.8 * human if seed % 2 else rng.normal(4, 1, big_n)) + rng.normal(0.3, 0.6, big_n)
    rated = rng.choice(big_n, n, replace=False)
    rest = np.setdiff1d(np.arange(big_n), rated)
    y, yhat, unlabeled = human[rated], judge[rated], judge[rest]
    got = ppi_mean(y, yhat, unlabeled, level=0.95, lam=lam, small_sample=False)
    want = float(np.squeeze(ppi_py.ppi_mean_pointestimate(y, yhat, unlabeled, lam=lam)))
    lo, hi = ppi_py.ppi_mean_ci(y, yhat, unlabeled, alpha=0.05, lam=lam)
    assert got.estimate == pytest.approx(want, abs=1e-12)
    assert (got.ci_low, got.ci_high) == pytest.approx((float(np.squeeze(lo)), float(np.squeeze(hi))), abs=1e-12)
    if lam is not None:
        assert got.lam == lam
    small = ppi_mean(y, yhat, unlabeled, level=0.95, lam=lam)  # the leaderboard's: same estimate, t interval
    assert (small.estimate, small.lam) == (got.estimate, got.lam)
    assert small.ci_high - small.estimate == pytest.approx(t_half_width(y, yhat, unlabeled, got.lam))


def t_half_width(y, yhat, unlabeled, lam):
    """Student-t(n - 1) half-width with unbiased variances, written out independently."""
    se = np.sqrt(np.var(lam * unlabeled, ddof=1) / len(unlabeled) + np.var(y - lam * yhat, ddof=1) / len(y))
    return stats.t.ppf(0.975, len(y) - 1) * se


def _board(tmp_path, rated: dict[str, list[str]], n_profiles: int = 30):
    """Two systems, 30 conversations each; the humans rate ``rated[system]`` (two raters, every
    sub-axis of a conversation alike: the judge's score + 1 and + 2, so the human mean is judge + 1.5)."""
    ids = [f"p{i:02d}" for i in range(n_profiles)]
    judge = {}
    runs = []
    for k, system in enumerate(("vendor/a", "vendor/b")):
        scores = {p: [1 + (i * (k + 2)) % 4] * 5 for i, p in enumerate(ids)}
        judge[system] = scores
        runs.append(write_run(tmp_path / system.split("/")[1], system, scores, profile_ids=ids))
    path = tmp_path / "ratings.csv"
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["interaction_id", "profile_id", "system", "rater", "subaxis_id", "score"])
        for system, pids in rated.items():
            for p in pids:
                base = judge[system].get(p, [3])[0]
                for rater, up in (("r1", 1), ("r2", 2)):
                    for sub in SUBAXES:
                        w.writerow([f"{system}:{p}", p, system, rater, sub, min(base + up, 6)])
    return runs, path, judge


def test_human_scale_column_on_a_scripted_set(tmp_path, capsys):
    rated = {"vendor/a": [f"p{i:02d}" for i in range(15)], "vendor/b": [f"p{i:02d}" for i in range(5, 17)]}
    runs, ratings, judge = _board(tmp_path, rated)
    out = tmp_path / "board"
    assert main(["leaderboard", *map(str, runs), "--humans", str(ratings), "--out", str(out)]) == 0
    stdout = capsys.readouterr().out
    assert "| Human scale, PPI [95% CI] | Humans only [95% CI] |" in stdout
    doc = json.loads((out / "leaderboard.json").read_text())
    got = {(h["system"], h["criterion"]): h for h in doc["human_scale"]}
    for system, pids in rated.items():
        label = system  # one run per clinician: labelled by its model
        yall = np.array([v[0] for p, v in judge[system].items() if p not in pids], dtype=float)  # unrated
        yhat = np.array([judge[system][p][0] for p in pids], dtype=float)
        y = np.minimum(yhat + 1, 6) / 2 + np.minimum(yhat + 2, 6) / 2
        h = got[(label, "average")]
        assert h["n_rated"] == len(pids) and h["n_scored"] == 30
        assert h["judge_mean"] == pytest.approx(np.mean([v[0] for v in judge[system].values()]))
        assert h["ppi"]["estimate"] == pytest.approx(float(np.squeeze(
            ppi_py.ppi_mean_pointestimate(y, yhat, yall))), abs=1e-6)  # JSON: 6 digits
        half = t_half_width(y, yhat, yall, h["ppi"]["lam"])
        assert (h["ppi"]["ci_low"], h["ppi"]["ci_high"]) == pytest.approx(
            (h["ppi"]["estimate"] - half, h["ppi"]["estimate"] + half), abs=2e-6)
        assert h["humans"]["estimate"] == pytest.approx(y.mean())
        assert h["ppi"]["ci_high"] - h["ppi"]["ci_low"] < h["humans"]["ci_high"] - h["humans"]["ci_low"]
        cell = f"{h['ppi']['estimate']:.2f} [{h['ppi']['ci_low']:.2f}, {h['ppi']['ci_high']:.2f}] (n={len(pids)})"
        assert cell in stdout
    assert "human_ppi_estimate" in (out / "leaderboard.csv").read_text().splitlines()[0]


def test_refuses_too_few_rated_conversations(tmp_path, capsys):
    rated = {"vendor/a": [f"p{i:02d}" for i in range(12)], "vendor/b": [f"p{i:02d}" for i in range(9)]}
    runs, ratings, _ = _board(tmp_path, rated)
    assert main(["leaderboard", *map(str, runs), "--humans", str(ratings), "--no-report"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "has 9 rated conversation(s)" in err[0] and "at least 10 rated conversations per system" in err[0], err


def test_refuses_runs_with_repeats_in_one_line_that_calls_the_judge_no_rater(tmp_path, capsys):
    """Human ratings pair with the judge by profile: a --repeats run is refused before its ratings are read."""
    rated = {"vendor/a": [f"p{i:02d}" for i in range(12)], "vendor/b": [f"p{i:02d}" for i in range(12)]}
    runs, ratings, judge = _board(tmp_path, rated)
    twice = write_run(tmp_path / "b2", "vendor/b", judge["vendor/b"], profile_ids=sorted(judge["vendor/b"]), repeats=2)
    assert main(["leaderboard", str(runs[0]), str(twice), "--no-report"]) == 0  # ranked without --humans
    capsys.readouterr()
    assert main(["leaderboard", str(runs[0]), str(twice), "--humans", str(ratings), "--no-report"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--repeats 2" in err[0] and "one conversation per profile" in err[0], err
    assert "rater" not in err[0] and "Traceback" not in err[0]


def test_refuses_rated_conversations_outside_the_system(tmp_path, capsys):
    rated = {"vendor/a": [f"p{i:02d}" for i in range(12)], "vendor/b": [*(f"p{i:02d}" for i in range(12)), "x99"]}
    runs, ratings, _ = _board(tmp_path, rated)
    assert main(["leaderboard", *map(str, runs), "--humans", str(ratings), "--no-report"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "profile x99" in err[0] and "not among its scored conversations" in err[0], err


def test_refuses_two_systems_of_one_clinician_model(tmp_path, capsys):
    rated = {"vendor/a": [f"p{i:02d}" for i in range(12)], "vendor/b": [f"p{i:02d}" for i in range(12)]}
    runs, ratings, judge = _board(tmp_path, rated)
    twin = write_run(tmp_path / "a2", "vendor/a", judge["vendor/a"], clinician_prompt="clinician/four_sentences@v1",
                     profile_ids=sorted(judge["vendor/a"]))
    assert main(["leaderboard", *map(str, runs), str(twin), "--humans", str(ratings), "--no-report"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "both clinician model vendor/a" in err[0], err


def test_ratings_of_an_unranked_model_are_named(tmp_path, capsys):
    rated = {"vendor/a": [f"p{i:02d}" for i in range(12)], "vendor/b": [f"p{i:02d}" for i in range(12)]}
    runs, ratings, _ = _board(tmp_path, rated)
    assert main(["leaderboard", str(runs[0]), "--humans", str(ratings), "--no-report"]) == 0
    assert "human ratings of vendor/b" in capsys.readouterr().err


def test_the_authors_ratings_calibrate_a_run_of_their_conversations(tmp_path, capsys, shared_data):
    """The authors' file as --humans: their 20 rated conversations of one clinician model, mean of four
    raters per conversation, against a scripted run of those conversations plus 20 unrated ones."""
    from metaeval.comparison import CompareOptions, load_humans
    from metaeval.sources import human_scores

    src = str(shared_data / "human_annotations.jsonl")
    model = "azure/gpt-5-chat-2"
    with pytest.warns(Warning):
        rows = [r for r in human_scores(load_humans([src], CompareOptions(humans=[src]))).rows if r.system == model]
    assert len(rows) == 20
    ids = [r.profile_id for r in rows] + [f"extra{i:02d}" for i in range(20)]
    scores = {p: [1 + i % 6] * 5 for i, p in enumerate(ids)}
    run = write_run(tmp_path / "run", model, scores, profile_ids=ids)
    out = tmp_path / "board"
    assert main(["leaderboard", str(run), "--humans", src, "--out", str(out), "--no-report"]) == 0
    assert "warning: " + src + ": 1 rating(s) have an axis with no rated sub-axis" in capsys.readouterr().err
    h = next(h for h in json.loads((out / "leaderboard.json").read_text())["human_scale"]
             if h["criterion"] == "average")
    assert (h["n_rated"], h["n_scored"]) == (20, 40)
    assert h["humans"]["estimate"] == pytest.approx(np.mean([r.scores["average"] for r in rows]), abs=1e-6)


def test_pairwise_differences_on_the_human_scale(tmp_path, capsys):
    """A − B on the human scale: each side's PPI++ estimate and t standard error computed here with
    ppi-python's point estimate and weight, combined as independent samples."""
    rated = {"vendor/a": [f"p{i:02d}" for i in range(15)], "vendor/b": [f"p{i:02d}" for i in range(5, 17)]}
    runs, ratings, judge = _board(tmp_path, rated)
    out = tmp_path / "board"
    assert main(["leaderboard", *map(str, runs), "--humans", str(ratings), "--out", str(out)]) == 0
    stdout = capsys.readouterr().out
    doc = json.loads((out / "leaderboard.json").read_text())
    means = {h["system"]: h for h in doc["human_scale"] if h["criterion"] == "average"}
    side = {}
    for system, pids in rated.items():
        yall = np.array([v[0] for p, v in judge[system].items() if p not in pids], dtype=float)
        yhat = np.array([judge[system][p][0] for p in pids], dtype=float)
        y = np.minimum(yhat + 1, 6) / 2 + np.minimum(yhat + 2, 6) / 2
        lam = means[system]["ppi"]["lam"]
        est = float(np.squeeze(ppi_py.ppi_mean_pointestimate(y, yhat, yall)))
        se2 = np.var(lam * yall, ddof=1) / len(yall) + np.var(y - lam * yhat, ddof=1) / len(y)
        side[system] = (est, se2, len(y))
    pair = next(d for d in doc["human_pairs"] if d["criterion"] == "average")
    (ea, va, na), (eb, vb, nb) = side[pair["a"]], side[pair["b"]]
    half = stats.t.ppf(0.975, min(na, nb) - 1) * np.sqrt(va + vb)
    assert pair["estimate"] == pytest.approx(ea - eb, abs=2e-6)
    assert (pair["ci_low"], pair["ci_high"]) == pytest.approx((ea - eb - half, ea - eb + half), abs=2e-6)
    assert {pair["a"], pair["b"]} == {"vendor/a", "vendor/b"}
    assert len(doc["human_pairs"]) == len({h["criterion"] for h in doc["human_scale"]})
    assert "### Pairwise differences on the human scale" in stdout
    assert f"{pair['estimate']:.2f} [{pair['ci_low']:.2f}, {pair['ci_high']:.2f}]" in stdout


@pytest.mark.parametrize(("corr", "width"), [(0.8, 0.5), (0.0, 0.6), (0.5, 0.4)])
def test_plan_n_gives_the_width_in_simulation(corr, width):
    """The planned n, simulated with bivariate normal human/judge scores of that correlation, gives
    PPI intervals of about the asked width (mean over studies), and n - 1 is not planned."""
    from mindeval.stats.ppi import plan_n

    big_n, sd_h, sd_j = 400, 1.0, 0.8
    n = plan_n(width, sd_human=sd_h, sd_judge=sd_j, corr=corr, n_total=big_n)
    assert n is not None and 2 < n < big_n
    rng = np.random.default_rng(7)
    cov = [[sd_h ** 2, corr * sd_h * sd_j], [corr * sd_h * sd_j, sd_j ** 2]]
    widths = []
    for _ in range(400):
        h, j = rng.multivariate_normal([3.5, 3.8], cov, big_n).T
        m = ppi_mean(h[:n], j[:n], j[n:])
        widths.append(m.ci_high - m.ci_low)
    assert np.mean(widths) == pytest.approx(width, rel=0.04)
    if corr == 0.0:  # humans alone: the t-interval's closed form
        se = sd_h / np.sqrt(n)
        assert 2 * stats.t.ppf(0.975, n - 1) * se <= width < 2 * stats.t.ppf(0.975, n - 2) * sd_h / np.sqrt(n - 1)


def test_plan_width_prints_n_per_system(tmp_path, capsys):
    rated = {"vendor/a": [f"p{i:02d}" for i in range(15)], "vendor/b": [f"p{i:02d}" for i in range(5, 17)]}
    runs, ratings, _ = _board(tmp_path, rated)
    assert main(["leaderboard", *map(str, runs), "--humans", str(ratings), "--no-report", "--plan-width", "0.8"]) == 0
    out = capsys.readouterr().out
    assert "### Planning: human ratings per system for a 95% interval of width 0.8" in out
    rows = [r for r in out.splitlines() if r.startswith("| vendor/")]
    assert len(rows) == 2 and all(len(r.split("|")) == 9 for r in rows), rows
    assert main(["leaderboard", *map(str, runs), "--plan-width", "0.8"]) != 0
    assert "--plan-width needs --humans" in capsys.readouterr().err
