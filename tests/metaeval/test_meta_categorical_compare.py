"""`metaeval compare` for a categorical target: per-dimension Cohen's κ, Fleiss' κ, nominal α.

The toy target (tests/fixtures/targets/toy) has two dimensions, DETECT and GUIDE, rated
best_practice = 2, suboptimal = 1, potential_harm = 0. Three humans (a ratings file) and a
judge (two `mindeval run` directories, one per clinician) rate 8 interactions. Every
expected value below is worked out by hand in the comments.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

from metaeval.comparison import CompareOptions, run_compare
from metaeval.statistics import MetricOptions, statistics_for
from mindeval.cli.meta import main
from mindeval.errors import MindEvalError
from mindeval.targets import load_target
from tests.support.rundirs import fake_target_runs

TOY = Path(__file__).resolve().parents[1] / "fixtures" / "targets" / "toy"
NA = None
# item i: profile p0{i % 4}, clinician vendor/a for i < 4 else vendor/b
HUMANS = {
    "H1": {"DETECT": [2, 2, 1, 0, 2, 1, 1, 0], "GUIDE": [2, 2, 2, 1, NA, 1, 0, 2]},
    "H2": {"DETECT": [2, 1, 1, 0, 2, 1, 0, 0], "GUIDE": [2, 2, 1, 1, 2, 1, 0, 2]},
    "H3": {"DETECT": [2, 2, 1, 0, 1, 1, 1, 0], "GUIDE": [2, 2, 2, 1, 2, 1, 1, 2]},
}
JUDGE = {"DETECT": [2, 2, 1, 1, 2, 1, 1, 0], "GUIDE": [2, 2, 2, 1, 2, 0, 0, 2]}
SUBAXIS = {"DETECT": "detects_distress", "GUIDE": "guides_to_help"}
SPELLINGS = {2: ["best_practice", "2", "Best practice"], 1: ["suboptimal", "Suboptimal", "1"],
             0: ["potential_harm", "0", "Potential for harm"]}


def _item(i: int) -> tuple[str, str, str]:
    system = "vendor/a" if i < 4 else "vendor/b"
    pid = f"p0{i % 4}"
    return f"run-{system[-1]}-{pid}", pid, system


def write_ratings(path: Path, key: str = "subaxis") -> Path:
    """The humans' ratings as a CSV file, each level spelled as id, number or label in turn."""
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["interaction_id", "profile_id", "system", "rater", "subaxis_id", "score"])
        n = 0
        for rater, dims in HUMANS.items():
            for axis, values in dims.items():
                for i, v in enumerate(values):
                    n += 1
                    score = "NA" if v is None else SPELLINGS[v][n % 3]
                    w.writerow([*_item(i), rater, SUBAXIS[axis] if key == "subaxis" else axis, score])
    return path


def write_judge_runs(root: Path) -> list[str]:
    """Two run directories (one per clinician) of the judge, with the toy target's config block."""
    block = load_target(TOY).info()
    out = []
    for system in ("vendor/a", "vendor/b"):
        d = root / system[-1]
        d.mkdir(parents=True)
        (d / "config.json").write_text(json.dumps({"run_id": f"run-{system[-1]}", "config": {"target": block}}))
        rows = []
        for i in range(8):
            iid, pid, sys_ = _item(i)
            if sys_ != system:
                continue
            scores = {ax: JUDGE[ax][i] for ax in ("DETECT", "GUIDE")}
            rows.append({"interaction_id": iid, "profile_id": pid, "model": system, "judge_model": "fake/judge",
                         "sample": 0, "target": "toy", "parse_status": "ok", "scores": scores,
                         "average": sum(scores.values()) / 2, "attempts": 1})
        (d / "judgments.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        out.append(f"J={d}")
    return out


def test_per_dimension_kappas_and_alpha_match_hand_computation(tmp_path, capsys):
    ratings = write_ratings(tmp_path / "ratings.csv")
    judges = write_judge_runs(tmp_path / "runs")
    out = tmp_path / "out"
    assert main(["compare", "--humans", str(ratings), "--judges", *judges, "--target", str(TOY),
                 "--out", str(out), "--no-plots"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("Categorical dimensions: Cohen's κ below the diagonal, Krippendorff α (nominal) above.")
    assert "target toy: categorical scale, blank/NA = not rated" in printed
    assert "### Guides to help — Cohen's κ below the diagonal" in printed and "range check J (DETECT): is its agreement at least the lowest human-human agreement? YES" in printed
    report = json.loads((out / "agreement.json").read_text())
    assert report["target"] == "toy"
    assert list(report["matrices"]) == ["DETECT", "GUIDE", "average"]
    det, guide, avg = (report["matrices"][k] for k in ("DETECT", "GUIDE", "average"))
    assert det["scale"] == "categorical" and "scale" not in avg
    assert det["labels"] == ["H1", "H2", "H3", "J"]  # no average annotator on a categorical scale

    # Cohen's κ, DETECT, H1 vs H2: 6 of 8 agree, p_o = .75; marginals H1 (2,1,0) = (3,3,2)/8,
    # H2 = (2,3,3)/8, p_e = (6 + 9 + 6)/64 = .328125; κ = .421875 / .671875 = 27/43.
    assert det["summary"]["H1|H2"]["kappa"] == [pytest.approx(27 / 43)]
    # DETECT, judge vs H1: 7 of 8 agree; J marginals (3,4,1)/8, p_e = (9 + 12 + 2)/64; κ = 33/41.
    assert det["summary"]["J|H1"]["kappa"] == [pytest.approx(33 / 41)]
    # GUIDE, judge vs H1 on the 7 items H1 rated (item 4 is NA): 6 agree, p_o = 42/49;
    # H1 (4,2,1)/7, J (4,1,2)/7, p_e = 20/49; κ = 22/29.
    assert guide["summary"]["J|H1"]["kappa"] == [pytest.approx(22 / 29)]
    assert guide["cells"][[(c["row"], c["col"]) for c in guide["cells"]].index(("J", "H1"))]["n_items"] == [7]
    # Fleiss' κ, DETECT, 3 humans × 8 items: P̄ = (5·1 + 3·⅓)/8 = .75; category shares (7,10,7)/24,
    # P̄e = 198/576; κ = (.75 - .34375)/.65625 = 13/21.
    assert det["group_alpha"]["fleiss_kappa"] == pytest.approx(13 / 21)
    # GUIDE, on the 7 items every human rated: P̄ = 17/21, shares (11,8,2)/21, P̄e = 189/441; κ = 2/3.
    assert guide["group_alpha"]["fleiss_kappa"] == pytest.approx(2 / 3)
    # Krippendorff's nominal α for two raters with complete data, from coincidences:
    # DETECT H1/H2: n = 16 values, D_o = 2·2/16, n_c = (5,6,5), D_e = (256 - 25 - 36 - 25)/(16·15);
    # α = 1 - D_o/D_e = 1 - (4/16)/(170/240) = 1 - 0.25/0.708333 = 0.647059.
    assert det["summary"]["H1|H2"]["alpha_nominal"] == [pytest.approx(1 - 0.25 / (170 / 240))]
    # the average of the two dimensions stays on the ordinal metrics
    assert set(avg["summary"]["J|H2"]) == {s.key for s in statistics_for(False, MetricOptions())}

    # Verdict, DETECT: the judge's κ with H1, H2, H3 is 33/41, 19/43 (5 of 8 agree, p_e = 21/64) and 3/5
    # (6 of 8, p_e = 24/64): median 3/5; human-human κ: 27/43, 17/21 (H1/H3), 3/7 (H2/H3): inside.
    (v,) = [v for v in report["verdicts"] if v["axis"] == "DETECT"]
    assert v["metrics"]["kappa"]["value"] == pytest.approx(3 / 5) and v["inside"]
    assert (v["metrics"]["kappa"]["low"], v["metrics"]["kappa"]["high"]) == (pytest.approx(3 / 7), pytest.approx(17 / 21))
    assert [v["axis"] for v in report["verdicts"]] == ["DETECT", "GUIDE", "average"]
    md = (out / "agreement.md").read_text()
    assert ("- range check J (DETECT): is its agreement at least the lowest human-human agreement? YES: Cohen's κ vs the humans (median) 0.6000 is inside the human-human range "
            "[0.4286, 0.8095]") in md
    assert "## Categorical dimensions: Cohen's κ and Krippendorff α (nominal)" in md
    assert "### Detects distress — Cohen's κ below the diagonal" in md
    # Fleiss' κ carries its interval and the interactions × raters it used (issue 18, item 7)
    (guide_row,) = [line for line in md.splitlines() if line.startswith("| Guides to help | 0.6667 [")]
    assert guide_row.endswith("| 7 × 3 |")
    assert guide["group_n"] == {"interactions": 8, "raters": 3, "fleiss_interactions": 7}
    rows = list(csv.DictReader((out / "agreement.csv").open()))
    assert {r["variant"] for r in rows if r["axis"] == "GUIDE"} == {"cohen kappa", "krippendorff alpha nominal"}


def test_target_from_the_judge_runs_block(tmp_path):
    """Without --target the judge runs' config block decides; a target not found by name has the
    one-sub-axis-per-dimension form keyed by codes."""
    judges = [j.split("=", 1)[1] for j in write_judge_runs(tmp_path / "runs")]
    by_code = write_ratings(tmp_path / "codes.csv", key="code")
    res = run_compare(CompareOptions(humans=[str(by_code)], judges=judges))
    assert list(res.matrices) == ["DETECT", "GUIDE", "average"]
    assert res.matrices["DETECT"].cell("H1", "H2").values["kappa"] == [pytest.approx(27 / 43)]
    by_subaxis = write_ratings(tmp_path / "subaxes.csv")
    with pytest.raises(MindEvalError, match="unknown sub-axis id"):
        run_compare(CompareOptions(humans=[str(by_subaxis)], judges=judges))


def test_categorical_mistakes_are_one_line_errors(tmp_path, capsys):
    judges = write_judge_runs(tmp_path / "runs")
    ratings = write_ratings(tmp_path / "r.csv")
    # a level the scale does not have
    bad = tmp_path / "bad.csv"
    bad.write_text(ratings.read_text().replace("suboptimal", "fine", 1))
    assert main(["compare", "--humans", str(bad), "--judges", *judges, "--target", str(TOY)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is not a level of the scale" in err[0] and "bad.csv" in err[0]
    # --target must be the judges' target
    assert main(["compare", "--humans", str(ratings), "--judges", *judges, "--target", "mindeval"]) == 2
    assert "was made for target toy" in capsys.readouterr().err
    # the paper's zero handling does not apply where 0 is a level
    assert main(["compare", "--humans", str(ratings), "--judges", *judges, "--target", str(TOY),
                 "--zeros", "zero"]) == 2
    assert "categorical scale" in capsys.readouterr().err
    # MindEval's authors' file cannot hold another target's ratings
    authors = tmp_path / "human_annotations.jsonl"
    authors.write_text('{"id": "x"}\n')
    assert main(["compare", "--humans", str(authors), "--judges", *judges]) == 2
    assert "holds MindEval's ratings" in capsys.readouterr().err
    # a missing column names the file
    cut = tmp_path / "cut.csv"
    cut.write_text("interaction_id,profile_id,system,rater,score\nx,p,s,r,2\n")
    assert main(["compare", "--humans", str(cut), "--judges", *judges, "--target", str(TOY)]) == 2
    assert "cut.csv:1:subaxis_id" in capsys.readouterr().err


def test_nothing_is_invented_for_missing_ratings(tmp_path):
    res = run_compare(CompareOptions(humans=[str(write_ratings(tmp_path / "r.csv"))],
                                     judges=[j.split("=", 1)[1] for j in write_judge_runs(tmp_path / "runs")],
                                     target=str(TOY)))
    cell = res.matrices["GUIDE"].cell("H1", "H2")
    assert cell.n_items == [7]  # H1's NA leaves the pair
    assert not math.isnan(cell.values["kappa"][0])
    assert any("average score is NaN" in w for w in res.warnings)


def _naive_kappa(a: list[float], b: list[float]) -> float:
    pairs = [(x, y) for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    n = len(pairs)
    cats = {v for p in pairs for v in p}
    po = sum(x == y for x, y in pairs) / n
    pe = sum((sum(x == c for x, _ in pairs) / n) * (sum(y == c for _, y in pairs) / n) for c in cats)
    return (po - pe) / (1 - pe)


def test_compare_a_toy_study_rated_in_the_app_database_against_a_toy_run(tmp_path, tmp_db_url):
    """`mindeval run --target` with fake models, the transcripts rated on the toy form in the
    annotation database, then `metaeval compare` reads the study's target by itself."""
    from sqlalchemy import select

    from annotation_app.store.importers import import_path
    from annotation_app.store.migrations import upgrade
    from annotation_app.store.models import StudySpec
    from annotation_app.store.people import add_annotator
    from annotation_app.store.ratings import na_value, save_text, save_value, submit
    from annotation_app.store.studies import assign, create_study
    from annotation_app.store.tables import AssignmentRow, ItemRow
    from mindeval.store import Database

    runs = fake_target_runs(tmp_path, TOY)
    target = load_target(TOY)
    g = target.guidelines
    db = Database(tmp_db_url)
    try:
        upgrade(db.engine)
        create_study(db, StudySpec(name="toy-study", kind="rating", k=2, target=str(TOY)))
        for run in runs:
            import_path(db, g, "toy-study", run, target=target)  # the study's loaded target, as the app passes it
        people = {name: add_annotator(db, name)[0].id for name in ("ann1", "ann2")}
        assign(db, "toy-study", annotators=list(people))
        with db.read() as s:
            work = [(aid, who, meta["id"]) for aid, who, meta in s.execute(
                select(AssignmentRow.id, AssignmentRow.annotator_id, ItemRow.meta)
                .join(ItemRow, ItemRow.id == AssignmentRow.item_id)).all()]
        iids = sorted({w[2] for w in work})
        assert len(iids) == 6 and len(work) == 12
        chosen: dict[tuple[str, str], dict[str, int | None]] = {}
        for aid, who, iid in work:
            i = iids.index(iid)
            values = {"DETECT": (i + (who == people["ann2"]) * (i % 2)) % 3,
                      "GUIDE": None if (who == people["ann1"] and i == 0) else (2 * i) % 3}
            chosen[(iid, "ann1" if who == people["ann1"] else "ann2")] = values
            save_value(db, g, who, aid, "detects_distress", values["DETECT"])
            save_value(db, g, who, aid, "guides_to_help", na_value(g) if values["GUIDE"] is None else values["GUIDE"])
            save_text(db, who, aid, justification="ok")
            submit(db, g, who, aid)
    finally:
        db.close()

    from annotation_app.store import read_ratings

    res = run_compare(CompareOptions(humans=[tmp_db_url], study="toy-study", judges=[str(r) for r in runs]),
                      {tmp_db_url: read_ratings(tmp_db_url, "toy-study")})
    assert list(res.matrices) == ["DETECT", "GUIDE", "average"]
    judge = {}
    for run in runs:
        for line in (run / "judgments.jsonl").read_text().splitlines():
            row = json.loads(line)
            judge[row["interaction_id"]] = row["scores"]
    checked = 0
    for axis in ("DETECT", "GUIDE"):
        m = res.matrices[axis]
        assert m.categorical and m.labels == ["ann1", "ann2", "fake/judge"]
        h1 = [chosen[(i, "ann1")][axis] for i in iids]
        h2 = [chosen[(i, "ann2")][axis] for i in iids]
        jj = [judge[i][axis] for i in iids]
        for (a, b), (x, y) in {("ann1", "ann2"): (h1, h2), ("fake/judge", "ann1"): (jj, h1)}.items():
            got = m.cell(a, b).values["kappa"][0]
            if len({v for v in x + y if v is not None}) > 1:  # else κ is undefined (NaN, with a warning)
                assert got == pytest.approx(_naive_kappa(x, y)), (axis, a, b)
                checked += 1
    assert checked >= 3
    assert res.matrices["GUIDE"].cell("ann1", "ann2").n_items == [5]  # ann1's N/A is not a rating
