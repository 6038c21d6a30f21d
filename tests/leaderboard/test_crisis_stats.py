"""The shipped crisis target through the statistics: leaderboard safety gate and per-dimension agreement."""

from __future__ import annotations

import csv
import json
import random

import pytest

from metaeval.comparison import CompareOptions, run_compare
from mindeval.cli import main
from mindeval.targets import load_target


@pytest.fixture(scope="module")
def crisis_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("crisis")
    runs = []
    for clinician in ("fake/echo", "fake/slow"):
        out = root / clinician.replace("/", "-")
        assert main(["run", "--target", "crisis", "--clinician", clinician, "--patient", "fake/echo",
                     "--judge", "fake/judge", "--turns", "2", "--limit", "6", "--out", str(out), "--quiet"]) == 0
        runs.append(out)
    return root, runs


def test_crisis_leaderboard_has_its_dimensions_and_the_safety_gate(crisis_runs, capsys):
    root, runs = crisis_runs
    capsys.readouterr()
    assert main(["leaderboard", *map(str, runs), "--out", str(root / "board")]) == 0
    md = capsys.readouterr().out
    codes = load_target("crisis").guidelines.axis_codes
    assert "| # | System | n | Scored | Average | " + " | ".join(codes) + " | Harm share [95% CI] |" in md
    data = json.loads((root / "board" / "leaderboard.json").read_text())
    summaries = [json.loads((r / "summary.json").read_text())["harm"] for r in runs]
    assert sorted((h["n"], h["k"]) for h in summaries) == sorted((s["n"], s["k"]) for s in data["safety"])


def test_crisis_ratings_get_per_dimension_kappas(crisis_runs):
    root, runs = crisis_runs
    g = load_target("crisis").guidelines
    form = {s.axis: s.id for s in g.human_subaxes}
    rng = random.Random(3)
    path = root / "ratings.csv"
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["interaction_id", "profile_id", "system", "rater", "subaxis_id", "score"])
        for run in runs:
            for line in (run / "judgments.jsonl").read_text().splitlines():
                row = json.loads(line)
                for rater in ("dr_a", "dr_b"):
                    for axis, value in row["scores"].items():
                        v = value if rng.random() < 0.7 else rng.choice(g.score_values())
                        w.writerow([row["interaction_id"], row["profile_id"], row["model"], rater, form[axis],
                                    "" if v is None else g.level_of(v).label])  # judge "not relevant": not rated
    res = run_compare(CompareOptions(humans=[str(path)], judges=[f"J={r}" for r in runs]))
    assert list(res.matrices) == [*g.axis_codes, "average"]
    for code in g.axis_codes:
        m = res.matrices[code]
        assert m.categorical and m.labels == ["dr_a", "dr_b", "J"] and set(m.group_alpha) == {"fleiss_kappa", "nominal"}
        assert set(m.cell("J", "dr_a").values) == {"kappa", "alpha_nominal"}
    assert {v.axis for v in res.verdicts} == {*g.axis_codes, "average"}


def test_crisis_plots_have_a_risk_level_panel(crisis_runs):
    root, runs = crisis_runs
    out = root / "plots"
    assert main(["leaderboard", *map(str, runs), "--out", str(out), "--plots", "--no-report"]) == 0
    assert (out / "by_risk_level.png").read_bytes()[:4] == b"\x89PNG" and (out / "by_risk_level.png").stat().st_size > 10_000
    svg = (out / "by_risk_level.svg").read_text()
    assert "Worst level by risk_level" in svg
    assert all(value in svg for value in load_target("crisis").manifest.labels.fields["risk_level"])
