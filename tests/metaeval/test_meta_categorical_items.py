"""`metaeval compare --target` on an item-level target: the judge's "not relevant" leaves the
agreement on that dimension (like a human's N/A) and is counted."""

from __future__ import annotations

import csv
import json

import pytest

from mindeval.cli.meta import main
from mindeval.rundir import read_run
from tests.support.items import RISK_CHECKLIST, scripted_run

KINDS = ["none", "none", "good", "bad", "good", "bad"]
SUBAXIS = {"NOTICE": "noticing_risk", "ASK": "asking_about_risk", "HELP": "connecting_to_help",
           "CONTENT": "safe_content"}
LEVEL = {2: "best_practice", 1: "suboptimal", 0: "potential_harm"}


def test_compare_on_the_item_rubric_target(tmp_path, capsys):
    run = scripted_run(tmp_path / "run", "meta-items", KINDS)
    judged = read_run(run).judgments
    ratings = tmp_path / "ratings.csv"
    with ratings.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["interaction_id", "profile_id", "system", "rater", "subaxis_id", "score"])
        for rater in ("H1", "H2"):
            for j in judged:
                for code, sub in SUBAXIS.items():
                    v = j.scores[code]
                    # The humans agree with the judge where it rated, and rate every conversation
                    # (best practice where the judge found the dimension not relevant); H2 differs once.
                    level = LEVEL[2 if v is None else v]
                    if rater == "H2" and code == "CONTENT" and j.profile_id.startswith("walter"):
                        level = "suboptimal"
                    w.writerow([j.interaction_id, j.profile_id, j.model, rater, sub, level])
    out = tmp_path / "out"
    assert main(["compare", "--humans", str(ratings), "--judges", f"J={run}", "--target", str(RISK_CHECKLIST),
                 "--out", str(out), "--no-plots"]) == 0
    report = json.loads((out / "agreement.json").read_text())
    assert report["target"] == "risk_checklist"
    assert list(report["matrices"]) == ["NOTICE", "ASK", "HELP", "CONTENT", "average"]
    notice, content = report["matrices"]["NOTICE"], report["matrices"]["CONTENT"]

    def n_items(m, a, b):
        return m["cells"][[(c["row"], c["col"]) for c in m["cells"]].index((a, b))]["n_items"]

    # NOTICE: the judge rated 4 conversations (2 not relevant), humans all 6.
    assert n_items(notice, "J", "H1") == [4] and n_items(notice, "H1", "H2") == [6]
    assert notice["summary"]["J|H1"]["kappa"] == [pytest.approx(1.0)]
    # CONTENT, J vs H2 on 6: J = (2,2,2,1,2,1), H2 = (2,1,2,1,2,1): p_o = 5/6; J marginals (4/6, 2/6),
    # H2 (3/6, 3/6): p_e = (12 + 6)/36 = 1/2; κ = (5/6 - 1/2)/(1/2) = 2/3.
    assert n_items(content, "J", "H2") == [6]
    assert content["summary"]["J|H2"]["kappa"] == [pytest.approx(2 / 3)]
    # Counted: 2 conversations x 3 dimensions rated not relevant by the judge.
    (judge,) = report["inputs"]["judges"]
    assert (judge["n_not_relevant"], judge["n_failed"]) == (6, 0)
    assert "judge J: 6 dimension ratings 'not relevant', left out of that dimension's agreement" in report["notes"]
