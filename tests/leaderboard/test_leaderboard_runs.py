"""Leaderboards built from run directories written in tmp_path (docs/architecture.md schema)."""

from __future__ import annotations

import csv
import json

import pytest
from leaderboard_rundirs import stamp, uniform, write_run

from mindeval.cli import main
from mindeval.errors import MindEvalError
from mindeval.leaderboard import (
    StatsSettings,
    build_leaderboard,
    load_run,
    to_json,
    to_markdown,
    write_outputs,
)
from tests.support.rundirs import set_score

N = 50


def _nontransitive(make_run):
    """A 3.20, C 3.14, B 3.00 where only A vs B is significant (all axes equal per profile)."""
    ids = [f"p{i:02d}" for i in range(N)]
    b = {p: [3] * 5 for p in ids}
    a = {p: [4 if i < 10 else 3] * 5 for i, p in enumerate(ids)}  # +1 on 10 profiles: mean 3.20
    # C: +1 on 17 profiles, -1 on 10 others (none of A's ten): mean 3.14, noisy
    c = {p: [4 if 10 <= i < 27 else (2 if 27 <= i < 37 else 3)] * 5 for i, p in enumerate(ids)}
    return [make_run("A", "sys-A", a), make_run("B", "sys-B", b), make_run("C", "sys-C", c)]


def test_identical_systems_share_a_cluster_with_p_one(make_run):
    scores = {f"p{i:02d}": [1 + (i * k) % 6 for k in range(1, 6)] for i in range(N)}
    runs = [make_run("x", "model-x", scores), make_run("y", "model-y", scores)]
    lb = build_leaderboard(runs)
    for crit in ("CAC", "EPC", "AR", "TRA", "ASCQ", "average"):
        pair = lb.table.pair(crit, "model-x", "model-y")
        assert pair.p_value == 1.0 and not pair.significant and pair.n_shared == N
        assert {s.results[crit].cluster for s in lb.table.systems} == {1}


@pytest.mark.parametrize("test", ["permutation", "bootstrap"])
def test_clear_separation_is_significant_and_clustered_apart(make_run, test):
    good = {f"p{i:02d}": [5, 5, 4, 5, 4] for i in range(N)}
    bad = {f"p{i:02d}": [2, 3, 2, 2, 3] for i in range(N)}
    lb = build_leaderboard([make_run("g", "good", good), make_run("b", "bad", bad)], StatsSettings(test=test))
    pair = lb.table.pair("average", "good", "bad")
    assert pair.significant and pair.p_value < 0.001
    ranks = {s.label: (s.rank, s.results["average"].cluster) for s in lb.table.systems}
    assert ranks == {"good": (1, 1), "bad": (2, 2)}


def test_non_transitive_case_from_run_directories(make_run):
    lb = build_leaderboard(_nontransitive(make_run))
    means = {s.label: round(s.results["average"].mean, 2) for s in lb.table.systems}
    assert means == {"sys-A": 3.20, "sys-C": 3.14, "sys-B": 3.00}
    assert lb.table.pair("average", "sys-A", "sys-B").significant
    assert not lb.table.pair("average", "sys-A", "sys-C").significant
    assert not lb.table.pair("average", "sys-C", "sys-B").significant
    for crit in ("average", "CAC", "ASCQ"):
        clusters = {s.label: s.results[crit].cluster for s in lb.table.systems}
        assert clusters == {"sys-A": 1, "sys-C": 1, "sys-B": 2}


def test_same_seed_same_results_and_order_does_not_matter(make_run):
    runs = _nontransitive(make_run)
    one = to_json(build_leaderboard(runs, StatsSettings(seed=3)))
    two = to_json(build_leaderboard(list(reversed(runs)), StatsSettings(seed=3)))
    other = to_json(build_leaderboard(runs, StatsSettings(seed=4)))
    assert one["table"] == two["table"]
    p_one = [p["p_value"] for p in one["table"]["pairs"]]
    p_other = [p["p_value"] for p in other["table"]["pairs"]]
    assert p_one != p_other  # the seed does drive the resampling
    assert one["table"]["settings"]["seed"] == 3


def test_mixed_judges_are_refused_unless_allowed(make_run):
    a = make_run("a", "m1", uniform(4), judge="judge-one")
    b = make_run("b", "m2", uniform(3), judge="judge-two")
    with pytest.raises(MindEvalError, match=r"judge model \(judge-one vs judge-two\)"):
        build_leaderboard([a, b])
    lb = build_leaderboard([a, b], allow_mixed=True)
    assert any("mixed setups allowed" in w for w in lb.warnings)
    assert [s.label for s in lb.table.systems] == ["m1", "m2"]


def test_different_profile_sets_are_refused(make_run):
    a = make_run("a", "m1", uniform(4, n=30))
    b = make_run("b", "m2", uniform(3, n=20))
    with pytest.raises(MindEvalError, match=r"profile set \(30 vs 20 profiles, 20 shared\)"):
        build_leaderboard([a, b])
    lb = build_leaderboard([a, b], allow_mixed=True)
    assert lb.table.pair("average", "m1", "m2").n_shared == 20


def test_failed_judgments_are_excluded_and_counted_and_samples_averaged(make_run):
    scores = {f"p{i:02d}": [4] * 5 for i in range(20)}
    scores["p00"] = [[2, 2, 2, 2, 2], [5, 5, 5, 5, 5]]  # two samples -> 3.5
    # a failed sample, then a good one: not scored (the mean would be over the survivor alone, 6; issue 24)
    scores["p01"] = [None, [6, 6, 6, 6, 6]]
    scores["p02"] = [None, None]  # never parsed -> excluded
    run = load_run(make_run("r", "m", scores, failed_interactions=["p99"]))
    by_profile = {s.profile_id: s for s in run.scores}
    assert by_profile["p00"].scores["CAC"] == 3.5 and by_profile["p00"].n_samples == 2
    assert "p01" not in by_profile and "p02" not in by_profile and "p99" not in by_profile
    assert (run.n_failed_samples, run.n_unscored, run.n_failed_interactions, run.n_interactions) == (3, 3, 1, 21)
    assert run.n_partly_judged == 1
    with pytest.raises(MindEvalError, match=r"(?s)not every conversation.*m \(.*\): scored 18/21"):
        build_leaderboard([run.path])
    lb = build_leaderboard([run.path], allow_incomplete=True)
    assert lb.table.systems[0].n == 18 and lb.incomplete == ["m"] and lb.coverage("m") == "18/21"
    assert any("3 of 21 interactions unscored" in w and "1 with a judge sample failed or missing" in w
               and "3 failed judge samples" in w for w in lb.warnings)


def test_severity_turns_and_verbosity_breakdowns(make_run):
    severe = ["p00", "p01", "p02"]
    ids = [f"p{i:02d}" for i in range(12)]
    s20 = {p: [2] * 5 if p in severe else [4] * 5 for p in ids}
    s40 = {p: [1] * 5 if p in severe else [3] * 5 for p in ids}
    long_text = "One. Two. Three. Four. Five."  # 5 sentences, 5 words
    runs = [
        make_run("m20", "m", s20, severe=severe, turns=20, clinician_text=long_text),
        make_run("m40", "m", s40, severe=severe, turns=40, clinician_text="Short reply here."),
        make_run("k20", "k", {p: [5] * 5 for p in ids}, severe=severe, turns=20),
    ]
    lb = build_leaderboard(runs)
    labels = sorted(s.label for s in lb.table.systems)
    assert labels == ["k [20 turns]", "m [20 turns]", "m [40 turns]"]
    conds = {(c.breakdown, c.condition): c for c in lb.breakdowns}
    assert conds[("patients", "severe")].per_system["m [20 turns]"]["average"] == 2.0
    assert conds[("patients", "non-severe")].per_system["m [40 turns]"]["average"] == 3.0
    t40 = conds[("turns", "40")]
    assert t40.n_systems == 1 and t40.mean["average"] == pytest.approx((1 * 3 + 3 * 9) / 12)
    t20 = conds[("turns", "20")]
    assert t20.best["CAC"].system == "k [20 turns]" and t20.worst["CAC"].system == "m [20 turns]"
    verb = {v.system: v for v in lb.verbosity}
    assert verb["m [20 turns]"].sentences_per_turn == 5.0 and verb["m [20 turns]"].share_long_turns == 1.0
    assert verb["m [40 turns]"].words_per_turn == 3.0 and verb["m [40 turns]"].share_long_turns == 0.0
    assert verb["m [40 turns]"].turns == 12 * 20


def test_clinician_prompt_variant_is_its_own_system(make_run):
    runs = [make_run("d", "m", uniform(4)), make_run("f", "m", uniform(3), clinician_prompt="clinician/four_sentences@v1")]
    lb = build_leaderboard(runs)
    assert [s.label for s in lb.table.systems] == ["m [clinician/default@v1]", "m [clinician/four_sentences@v1]"]
    assert {c.condition for c in lb.breakdowns if c.breakdown == "clinician prompt"} == {
        "clinician/default@v1", "clinician/four_sentences@v1"}


def test_compare_to_reports_pairwise_accuracy_and_self_preference(make_run, tmp_path):
    main_runs = [make_run(f"main-{m}", m, uniform(s)) for m, s in (("a", 5), ("b", 4), ("judge-x", 3))]
    # judge-x judges: it ranks itself first; a and b keep their order
    other = [make_run(f"x-{m}", m, uniform(s), judge="judge-x") for m, s in (("a", 5), ("b", 4), ("judge-x", 6))]
    lb = build_leaderboard(main_runs, compare_to=other)
    (cmp,) = lb.comparisons
    assert "judge model (fake/judge vs judge-x)" in cmp.setup
    acc = cmp.accuracy["average"]
    assert (acc.n_agree, acc.n_pairs) == (1, 3)
    (sp,) = cmp.self_preference
    assert sp.system == "judge-x" and sp.mean_rank_delta == 2.0 and sp.share_improved == 1.0
    md = to_markdown(lb)
    assert "## Agreement with other setups (Table 5)" in md and "| 0.3333 | 1/3 | judge-x: Δrank 2.00" in md
    written = {p.name for p in write_outputs(lb, tmp_path / "cmp-out")}
    assert "comparison.csv" in written


def test_outputs_in_every_format(make_run, tmp_path):
    lb = build_leaderboard(_nontransitive(make_run))
    paths = {p.name for p in write_outputs(lb, tmp_path / "out")}
    assert {"leaderboard.md", "leaderboard.csv", "leaderboard.tex", "leaderboard.json", "pairwise.csv",
            "breakdowns.csv", "verbosity.csv"} <= paths
    rows = list(csv.DictReader((tmp_path / "out" / "leaderboard.csv").open()))
    assert [(r["system"], r["average_cluster"]) for r in rows] == [("sys-A", "1"), ("sys-C", "1"), ("sys-B", "2")]
    assert float(rows[0]["average_ci_low"]) < float(rows[0]["average_mean"]) < float(rows[0]["average_ci_high"])
    data = json.loads((tmp_path / "out" / "leaderboard.json").read_text())
    assert data["table"]["settings"] == {"resamples": 2000, "test": "permutation", "sided": "one", "seed": 0,
                                         "alpha": 0.05, "level": 0.95}
    tex = (tmp_path / "out" / "leaderboard.tex").read_text()
    assert r"sys-A & \textbf{3.20}\textsuperscript{1}" in tex and r"\end{tabular}" in tex
    assert tex.startswith("% mindeval judge protocol; clusters: permutation test, one-sided")
    md = (tmp_path / "out" / "leaderboard.md").read_text()
    assert "| 1 | sys-A | 50 | 50/50 | **3.20** (1) |" in md
    pair_rows = list(csv.DictReader((tmp_path / "out" / "pairwise.csv").open()))
    assert len(pair_rows) == 3 * 6 and {(r["test"], r["sided"]) for r in pair_rows} == {("permutation", "one")}


def test_cli_prints_leaderboard_and_writes_files(make_run, tmp_path, capsys):
    runs = [str(p) for p in _nontransitive(make_run)]
    rc = main(["leaderboard", *runs, "--out", str(tmp_path / "o"), "--seed", "1", "--test", "bootstrap"])
    out, err = capsys.readouterr()
    assert rc == 0
    assert "| 1 | sys-A | 50 |" in out and "bootstrap test, one-sided, 2000 resamples, seed 1" in out
    assert "wrote" in err and (tmp_path / "o" / "leaderboard.tex").is_file()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--resamples", "100"], "--resamples: at least 2000 resamples are required"),
        (["--alpha", "1.5"], "--alpha: alpha must be between 0 and 1"),
    ],
)
def test_cli_rejects_bad_settings(make_run, capsys, args, message):
    run = str(make_run("a", "m", uniform(4)))
    assert main(["leaderboard", run, *args]) == 2
    assert f"error: {message}" in capsys.readouterr().err


def test_cli_refuses_mixed_judges_without_traceback(make_run, capsys):
    a = str(make_run("a", "m1", uniform(4), judge="j1"))
    b = str(make_run("b", "m2", uniform(4), judge="j2"))
    assert main(["leaderboard", a, b]) == 2
    err = capsys.readouterr().err
    assert "error: runs were made under different setups" in err and "--allow-mixed" in err
    assert "Traceback" not in err


def test_bad_score_names_file_line_and_field(make_run):
    run = make_run("a", "m", uniform(4, n=3))
    path = run / "judgments.jsonl"
    set_score(path, 1, "EPC", 9)
    with pytest.raises(MindEvalError) as exc:
        load_run(run)
    assert str(exc.value) == f"{path}:2:scores.EPC: score 9 is not a number from 1 to 6"
    set_score(path, 1, "EPC", 3.5)
    with pytest.raises(MindEvalError, match=r"judgments.jsonl:2:scores.EPC: score 3.5 is not a whole number"):
        load_run(run)


def test_malformed_and_inconsistent_files_are_named(make_run, tmp_path):
    run = make_run("a", "m", uniform(4, n=3))
    (run / "interactions.jsonl").write_text((run / "interactions.jsonl").read_text() + "{not json\n")
    with pytest.raises(MindEvalError, match=r"interactions.jsonl:4: malformed JSON"):
        load_run(run)
    other = write_run(tmp_path / "b", "m", uniform(4, n=3))
    rows = [json.loads(x) for x in (other / "judgments.jsonl").read_text().splitlines()]
    rows[0]["judge_model"] = "someone-else"
    (other / "judgments.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(MindEvalError, match=r"judgments.jsonl:1:judge_model: judge 'someone-else' differs"):
        load_run(other)
    with pytest.raises(MindEvalError, match="config.json not found"):
        load_run(tmp_path)


def test_run_without_any_parsed_judgment_is_excluded_with_warning(make_run):
    good = make_run("g", "good", uniform(4, n=5))
    dead = make_run("d", "dead", {f"p{i:02d}": [None] for i in range(5)})
    lb = build_leaderboard([good, dead], allow_incomplete=True)
    assert [s.label for s in lb.table.systems] == ["good"]
    assert any(e.startswith("dead") for e in lb.excluded)
    md = to_markdown(lb)
    assert "- excluded dead" in md and "| dead | 50 |" in md  # still in the verbosity table (5 × 10 turns)
    with pytest.raises(MindEvalError, match="nothing to rank"):
        build_leaderboard([dead], allow_incomplete=True)


def test_pair_pvalue_does_not_depend_on_other_systems(make_run):
    a, b, c = _nontransitive(make_run)
    two = build_leaderboard([a, b])
    three = build_leaderboard([a, b, c])
    for crit in ("average", "CAC"):
        assert two.table.pair(crit, "sys-A", "sys-B").p_value == three.table.pair(crit, "sys-A", "sys-B").p_value
    ci2 = two.table.systems[0].results["average"]
    ci3 = next(s for s in three.table.systems if s.label == "sys-A").results["average"]
    assert (ci2.ci_low, ci2.ci_high) == (ci3.ci_low, ci3.ci_high)


def test_judge_protocols_are_not_mixed_unless_allowed(make_run, capsys):
    a = make_run("a", "m1", uniform(4))
    b = make_run("b", "m2", uniform(3))
    cfg = json.loads((b / "config.json").read_text())
    cfg["config"]["judge_protocol"] = "paper"
    (b / "config.json").write_text(json.dumps(cfg))
    stamp(b)  # a run made so (not an edited file)
    with pytest.raises(MindEvalError, match=r"judge protocol \(mindeval vs paper\)"):
        build_leaderboard([a, b])
    assert main(["leaderboard", str(a), str(b), "--no-report"]) != 0
    assert "--allow-mixed" in capsys.readouterr().err
    lb = build_leaderboard([a, b], allow_mixed=True)
    assert any("judge protocol (mindeval vs paper)" in w for w in lb.warnings)
    md = to_markdown(lb)
    assert "(mindeval judge protocol)" in md and "(paper judge protocol)" in md


def test_one_sided_clusters_find_what_two_sided_miss(make_run):
    # A is better than B by a margin that a one-sided test at 0.05 detects and a two-sided one does not.
    a_scores = {f"p{i:02d}": [4] * 5 for i in range(30)}
    b_scores = {f"p{i:02d}": [4] * 5 if i >= 9 else [3] * 5 for i in range(30)}  # A wins 9 profiles
    for i in (28, 29):  # and loses 2: one-sided p = 67/2048 = 0.033, two-sided 0.065
        a_scores[f"p{i:02d}"] = [3] * 5
    a = make_run("a", "sys-A", a_scores)
    b = make_run("b", "sys-B", b_scores)
    one = build_leaderboard([a, b])
    two = build_leaderboard([a, b], StatsSettings(sided="two"))
    p1, p2 = one.table.pair("average", "sys-A", "sys-B"), two.table.pair("average", "sys-A", "sys-B")
    assert p1.p_value < 0.05 <= p2.p_value and p1.significant and not p2.significant
    assert p2.p_value == pytest.approx(2 * p1.p_value, rel=0.1)
    clusters = {s.label: s.results["average"].cluster for s in one.table.systems}
    assert clusters == {"sys-A": 1, "sys-B": 2}
    assert {s.results["average"].cluster for s in two.table.systems} == {1}
