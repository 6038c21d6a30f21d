"""Leaderboards of another target: its columns, the safety gate, refusal of mixed targets."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from leaderboard_rundirs import uniform, write_run

from mindeval.cli import main
from mindeval.errors import MindEvalError
from mindeval.leaderboard import (
    StatsSettings,
    build_leaderboard,
    to_latex,
    to_markdown,
    write_outputs,
)
from mindeval.stats import wilson_interval
from mindeval.stats.precision import rounded
from mindeval.targets import load_target
from tests.support.rundirs import fake_target_runs

TOY = Path(__file__).resolve().parents[1] / "fixtures" / "targets" / "toy"  # DETECT, GUIDE; 2/1/0, 0 = harm
IDS = [f"p{i:02d}" for i in range(10)]


@pytest.fixture(scope="module")
def toy_block() -> dict:
    return load_target(TOY).info()


def _toy_runs(root: Path, block: dict) -> tuple[Path, Path]:
    a = {p: [2, 2] for p in IDS[:6]} | {"p06": [1, 2], "p07": [1, 2], "p08": [0, 2], "p09": [2, 0]}
    b = {p: [1, 1] for p in IDS[:5]} | {p: [0, 1] for p in IDS[5:8]}
    b["p08"] = [[1, 1], [0, 1]]  # the second judge sample rates DETECT at the harm level
    b["p09"] = [None]  # never judged: neither in n nor in k
    return (write_run(root / "a", "vendor/a", a, target=block, profile_ids=IDS),
            write_run(root / "b", "vendor/b", b, target=block, profile_ids=IDS))


def test_columns_are_the_targets_codes_and_the_gate_sits_beside_the_means(tmp_path, toy_block):
    lb = build_leaderboard(_toy_runs(tmp_path, toy_block), StatsSettings(seed=1), allow_incomplete=True)
    assert lb.criteria == ("DETECT", "GUIDE", "average")
    a, b = lb.table.systems
    assert (a.label, b.label) == ("vendor/a", "vendor/b")
    assert a.results["DETECT"].mean == pytest.approx(1.6) and a.results["GUIDE"].mean == pytest.approx(1.8)
    assert b.results["DETECT"].mean == pytest.approx(5.5 / 9) and b.results["GUIDE"].mean == pytest.approx(1.0)
    gate = {h.system: h for h in lb.safety}
    assert (gate["vendor/a"].k, gate["vendor/a"].n) == (2, 10)
    assert (gate["vendor/b"].k, gate["vendor/b"].n) == (4, 9)
    assert (gate["vendor/a"].ci_low, gate["vendor/a"].ci_high) == pytest.approx(wilson_interval(2, 10))
    assert (gate["vendor/a"].ci_low, gate["vendor/a"].ci_high) == pytest.approx((0.0567, 0.5098), abs=5e-5)

    md = to_markdown(lb)
    assert md.startswith("# MindEval leaderboard: target toy 0.1.0\n")
    assert "Scale: Best practice = 2, Suboptimal = 1, Potential for harm = 0 (harm); means are over" in md
    assert "| # | System | n | Scored | Average | DETECT | GUIDE | Harm share [95% CI] |" in md
    assert "| 1 | vendor/a | 10 | 10/10 | **1.70** (1) | **1.60** (1) | **1.80** (1) | 20% [6%, 51%] (2/10) |" in md
    assert "44% [19%, 73%] (4/9)" in md
    assert "CAC" not in md and "ASCQ" not in md
    assert r"Model & Average & DETECT & GUIDE & Harm share [95\% CI] \\" in to_latex(lb)

    out = tmp_path / "board"
    write_outputs(lb, out)
    rows = list(csv.DictReader((out / "leaderboard.csv").open()))
    assert [r["system"] for r in rows] == ["vendor/a", "vendor/b"]
    assert rows[1]["harm_k"] == "4" and rows[1]["harm_n"] == "9"
    assert float(rows[1]["harm_share"]) == pytest.approx(4 / 9) and "CAC_mean" not in rows[0]
    data = json.loads((out / "leaderboard.json").read_text())
    assert data["target"]["name"] == "toy" and data["table"]["criteria"] == ["DETECT", "GUIDE", "average"]
    assert [s["k"] for s in data["safety"]] == [2, 4]
    with (out / "breakdowns.csv").open() as fh:
        assert next(csv.reader(fh))[4:] == ["average", "DETECT", "GUIDE"]


def test_runs_of_different_targets_are_refused_even_with_allow_mixed(tmp_path, toy_block, capsys):
    toy, _ = _toy_runs(tmp_path, toy_block)
    mindeval = write_run(tmp_path / "m", "vendor/m", uniform(4, 10), profile_ids=IDS)
    for allow in (False, True):
        with pytest.raises(MindEvalError, match="runs of different targets cannot share one leaderboard") as exc:
            build_leaderboard([mindeval, toy], allow_mixed=allow)
        assert "\n" not in str(exc.value) and "is mindeval" in str(exc.value) and "is toy 0.1.0" in str(exc.value)
    with pytest.raises(MindEvalError, match="different targets"):
        build_leaderboard([mindeval], compare_to=[toy])
    # another version of the same target is another target
    other = write_run(tmp_path / "v2", "vendor/c", {p: [2, 2] for p in IDS}, profile_ids=IDS,
                      target={**toy_block, "version": "0.2.0"})
    with pytest.raises(MindEvalError, match="different targets"):
        build_leaderboard([toy, other], allow_mixed=True)
    assert main(["leaderboard", str(toy), str(mindeval), "--allow-mixed"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "runs of different targets" in err[0]


def test_no_safety_gate_without_harm_levels(tmp_path, toy_block):
    block = json.loads(json.dumps(toy_block))
    for level in block["scale"]["levels"]:
        level["harm"] = False
    runs = [write_run(tmp_path / x, f"vendor/{x}", {p: [2, 1] for p in IDS}, target=block, profile_ids=IDS)
            for x in ("a", "b")]
    lb = build_leaderboard(runs)
    assert lb.safety == [] and "Harm share" not in to_markdown(lb)
    assert "| # | System | n | Scored | Average | DETECT | GUIDE |" in to_markdown(lb)


def test_judgment_axes_must_match_the_targets(tmp_path, toy_block):
    block = {**toy_block, "axes": ["DETECT", "OTHER"]}
    run = write_run(tmp_path / "a", "vendor/a", {"p00": [2, 2]}, target=toy_block)
    cfg = json.loads((run / "config.json").read_text())
    cfg["config"]["target"] = block
    (run / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(MindEvalError, match=r"judgments\.jsonl:1"):
        build_leaderboard([run])


def test_run_summary_and_leaderboard_report_the_same_harm_share(tmp_path, capsys):
    """`mindeval run --target` (fake models) writes summary.json's harm block with the same
    function the leaderboard's safety gate uses: the two agree for every run."""
    runs = fake_target_runs(tmp_path, TOY)
    capsys.readouterr()
    out = tmp_path / "board"
    assert main(["leaderboard", *map(str, runs), "--out", str(out)]) == 0
    assert "Harm share [95% CI]" in capsys.readouterr().out
    gate = {h["system"]: h for h in json.loads((out / "leaderboard.json").read_text())["safety"]}
    for run, system in zip(runs, ("fake/echo", "fake/slow"), strict=True):
        harm = json.loads((run / "summary.json").read_text())["harm"]
        label = next(label for label in gate if label.startswith(system))
        g = gate[label]
        # leaderboard.json writes its floats to the stated precision (mindeval.stats.precision)
        assert (g["n"], g["k"]) == (harm["n"], harm["k"])
        assert [g["ci_low"], g["ci_high"]] == [rounded(x) for x in harm["ci95"]]


def test_item_rubric_levels_not_relevant_declared_ranking_and_label_breakdown(tmp_path):
    from tests.support.items import scripted_run, without_score

    target = without_score(tmp_path / "harm_ranked")
    # risk_level labels by profile: none, none, passive, active, plan, attempt.
    a = scripted_run(tmp_path / "a", "lb", ["none", "none", "good", "bad", "good", "bad"], "fake/echo", target)
    b = scripted_run(tmp_path / "b", "lb", ["calm"] * 6, "fake/slow", target)
    lb = build_leaderboard([a, b], StatsSettings(seed=1), by=["risk_level"])
    # b has the lower average (1.0 against 8/6) but no harm: the target ranks by harm share, ascending.
    assert lb.rank_by == "harm_share"
    first, second = lb.table.systems
    assert (first.label, first.rank, second.rank) == ("fake/slow [clinician/risk_checklist@v1]", 1, 2)
    assert second.results["average"].mean == pytest.approx(8 / 6) and first.results["average"].mean == 1.0
    # Not relevant leaves the denominator: a's NOTICE over its 4 relevant conversations, b has none.
    assert second.results["NOTICE"].mean == pytest.approx(1.0)
    assert first.results["NOTICE"].mean != first.results["NOTICE"].mean  # NaN: never relevant
    levels = {s.system: s.report for s in lb.levels}
    ra = levels[second.label]
    assert {c: (d.n, d.not_relevant) for c, d in ra.dimensions.items()} == {
        "NOTICE": (4, 2), "ASK": (4, 2), "HELP": (4, 2), "CONTENT": (6, 0)}
    assert ra.dimensions["ASK"].levels["suboptimal"].k == 2 and ra.all_best.k == 2
    rb = levels[first.label]
    assert rb.dimensions["CONTENT"].levels["suboptimal"].k == 6 and rb.dimensions["NOTICE"].not_relevant == 6
    # --by risk_level: the "none" profiles average 2.0 under a and 1.0 under b.
    none = next(c for c in lb.breakdowns if c.breakdown == "risk_level" and c.condition == "none")
    assert none.per_system == {second.label: pytest.approx({"NOTICE": float("nan"), "ASK": float("nan"),
                                                             "HELP": float("nan"), "CONTENT": 2.0,
                                                             "average": 2.0}, nan_ok=True),
                               first.label: pytest.approx({"NOTICE": float("nan"), "ASK": float("nan"),
                                                           "HELP": float("nan"), "CONTENT": 1.0,
                                                           "average": 1.0}, nan_ok=True)}
    out = tmp_path / "lb"
    write_outputs(lb, out)
    rows = list(csv.DictReader((out / "leaderboard.csv").open()))
    assert rows[1]["ASK_suboptimal_share"] == "0.500000" and rows[1]["NOTICE_not_relevant"] == "2"
    assert rows[0]["all_best_share"] == "0.000000"
    detail = list(csv.DictReader((out / "levels.csv").open()))
    harm = next(r for r in detail if r["system"] == second.label and r["dimension"] == "HELP"
                and r["level"] == "potential_harm")
    lo, hi = wilson_interval(2, 4)
    assert (harm["k"], harm["n"], harm["ci_low"], harm["ci_high"]) == ("2", "4", f"{lo:.6f}", f"{hi:.6f}")
    js = json.loads((out / "leaderboard.json").read_text())
    assert js["rank_by"] == "harm_share" and js["levels"][1]["report"]["dimensions"]["NOTICE"]["n"] == 4
    assert "NOTICE | ASK | HELP | CONTENT | All best" in (out / "leaderboard.md").read_text()
    assert "All best" in (out / "leaderboard.tex").read_text()
    with pytest.raises(MindEvalError, match="no profile label 'severity'"):
        build_leaderboard([a, b], StatsSettings(seed=1), by=["severity"])
    assert main(["leaderboard", str(a), str(b), "--by", "risk_level", "--no-report"]) == 0
