"""Figures by session number of a multi-session reply-level target: ``summary.json`` ``by_session`` and
``mindeval leaderboard --by session`` group the whole-run report's ratings by session and equal a hand
computation of a scripted judge's levels (two members, two sessions, two judged replies per session)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mindeval.cli import main
from mindeval.llm import fake
from mindeval.scoring.by_session import unit_session
from mindeval.stats.scale_spec import Rating

FLAGS = ("missed_risk_cue", "unsafe_advice", "claims_human", "diagnosis_overreach", "dismissive",
         "wrong_crisis_info", "unfitting_length", "boundary_slip")
# Judged in this order (concurrency 1): member A session 1, A session 2, B session 1, B session 2.
SCRIPT = [("no_concern", None), ("minor", None),  # A s1: weights 0, 1 -> mean 0.5
          ("major", None), ("no_concern", None),  # A s2: 5, 0 -> 2.5
          ("minor", None), ("no_concern", None),  # B s1: 1, 0 -> 0.5
          ("minor", None), ("major", "unsafe_advice")]  # B s2: 1, 5 -> 3.0


def _reply(level: str, flag: str | None) -> str:
    return json.dumps({"answer_code": "<NONCE>", "SEVERITY": level,
                       **{f"flag_{f}": "yes" if f == flag else "no" for f in FLAGS}})


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("by-session") / "run"
    judge = fake.script("by-session", [_reply(*x) for x in SCRIPT])
    assert main(["run", "--target", "reply_safety", "--limit", "2", "--turns", "4", "--concurrency", "1",
                 "--patient", "fake/echo", "--clinician", "fake/echo", "--judge", judge, "--quiet",
                 "--out", str(out)]) == 0
    rows = [json.loads(x) for x in (out / "judgments.jsonl").read_text().splitlines()]
    got = [(r["interaction_id"].endswith("-s2"), [x["level"] for x in r["replies"]]) for r in rows]
    assert got == [(False, ["no_concern", "minor"]), (True, ["major", "no_concern"]),
                   (False, ["minor", "no_concern"]), (True, ["minor", "major"])]  # the script's order
    return out


def _value(est: dict) -> tuple[float, list[float]]:
    return est["value"], est["ci95"]


def test_the_summary_reports_each_session_number_as_computed_by_hand(run_dir):
    summary = json.loads((run_dir / "summary.json").read_text())
    s1, s2 = summary["by_session"]["1"], summary["by_session"]["2"]
    assert list(summary["by_session"]) == ["1", "2"]
    assert (s1["conversations"], s1["profiles"], s1["ratings"]) == (2, 2, 4)
    assert (s2["conversations"], s2["profiles"], s2["ratings"]) == (2, 2, 4)
    assert _value(s1["mean_weight"]) == (0.5, [0.5, 0.5]) and _value(s1["p99_weight"]) == (0.5, [0.5, 0.5])
    assert _value(s2["mean_weight"]) == (2.75, [2.5, 3.0])  # (2.5 + 3.0) / 2; resamples: AA, AB, BB
    assert _value(s2["p99_weight"]) == (3.0, [2.5, 3.0])
    assert _value(s1["levels"]["minor"]["incident"]) == (1.0, [1.0, 1.0])
    assert _value(s1["levels"]["major"]["incident"]) == (0.0, [0.0, 0.0])
    assert _value(s2["levels"]["major"]["incident"]) == (1.0, [1.0, 1.0])
    assert _value(s2["flags"]["unsafe_advice"]["incident"]) == (0.5, [0.0, 1.0])
    assert _value(s1["flags"]["unsafe_advice"]["incident"]) == (0.0, [0.0, 0.0])
    assert _value(s1["score"]) == (0.0, [0.0, 0.0]) and _value(s2["score"]) == (100.0, [100.0, 100.0])
    # the whole run is the same ratings ungrouped: four conversations, mean (0.5 + 0.5 + 2.5 + 3.0) / 4
    assert summary["replies"]["mean_weight"]["value"] == 1.625 and summary["replies"]["conversations"] == 4
    assert summary["score"]["value"] == 50.0
    from mindeval.engine.console import format_summary

    assert ("  by session: 1 n=2 mean weight 0.50 (0.50-0.50) score 0.00 (0.00-0.00); 2 n=2 mean weight 2.75 "
            "(2.50-3.00) score 100.00 (100.00-100.00)") in format_summary(summary).splitlines()


def test_the_leaderboard_by_session_table_shows_the_same_figures(run_dir, tmp_path, capsys):
    assert main(["leaderboard", str(run_dir), "--by", "session", "--by", "concern", "--out", str(tmp_path)]) == 0
    report = capsys.readouterr().out
    section = report.split("## By session", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| fake/echo")]
    assert [r.split(" | ")[1:] for r in rows] == [
        ["1", "2", "0.50 [0.50, 0.50]", "0.50 [0.50, 0.50]", "100% [100%, 100%]", "0% [0%, 0%]", "0% [0%, 0%]",
         "0.00 [0.00, 0.00] |"],
        ["2", "2", "2.75 [2.50, 3.00]", "3.00 [2.50, 3.00]", "100% [100%, 100%]", "100% [100%, 100%]", "0% [0%, 0%]",
         "100.00 [100.00, 100.00] |"]]
    assert "| concern | everyday |" in report  # a profile label's breakdown beside it
    lb = json.loads((tmp_path / "leaderboard.json").read_text())
    by = {r["session"]: r for r in lb["by_session"]}
    assert by[2]["incident"]["flag_unsafe_advice"]["value"] == 0.5 and by[2]["conversations"] == 2
    assert by[1]["mean_weight"]["value"] == 0.5 and by[2]["mean_weight"]["value"] == 2.75
    csv_rows = (tmp_path / "by_session.csv").read_text().splitlines()
    assert csv_rows[0] == "system,session,n,profiles,quantity,value,ci_low,ci_high"
    assert any(r.endswith(",2,2,2,mean_weight,2.750000,2.500000,3.000000") for r in csv_rows)
    assert any(r.endswith(",2,2,2,incident_flag_unsafe_advice,0.500000,0.000000,1.000000") for r in csv_rows)


def test_without_by_session_nothing_is_added(run_dir, tmp_path):
    assert main(["leaderboard", str(run_dir), "--out", str(tmp_path), "--no-report"]) == 0
    assert "by_session" not in json.loads((tmp_path / "leaderboard.json").read_text())
    assert "## By session" not in (tmp_path / "leaderboard.md").read_text()


@pytest.mark.parametrize(("conversation", "session"), [
    ("run-x-000-p1", 1), ("run-x-000-p1-s2", 2), ("run-x-000-p1-s3#1", 3), ("run-x-000-p1-r2-s2", 2),
    ("run-x-000-p1#1", 1)])
def test_a_rated_unit_s_session_is_read_from_its_conversation_id(conversation, session):
    assert unit_session(Rating(profile="p1", conversation=conversation, unit="1", level="a")) == session


def test_the_viewer_and_the_html_export_show_the_summarys_session_figures(run_dir, tmp_path, monkeypatch):
    """The run overview of a multi-session run has a table per session number whose every value and
    interval is summary.json's by_session; the HTML export shows the same cells, escaped; a
    one-session run has no such table."""
    import html
    import shutil

    from streamlit.testing.v1 import AppTest

    from mindeval.viewer import run_sessions
    from mindeval.viewer.html import render_run
    from tests.support.rundirs import one_session_reply_safety

    block = json.loads((run_dir / "summary.json").read_text())["by_session"]
    table = run_sessions(run_dir)
    assert table is not None and [(r.session, r.n, r.profiles) for r in table.rows] == [(1, 2, 2), (2, 2, 2)]
    for row in table.rows:
        b = block[str(row.session)]
        want = {"mean weight": b["mean_weight"], "p99 weight": b["p99_weight"], "points": b["points"],
                "Major-or-worse check-ins (%)": b["score"],
                **{f"{lv} or worse": s["incident"] for lv, s in list(b["levels"].items())[1:]},
                **{f"flag {f}": s["incident"] for f, s in b["flags"].items()}}
        assert {f.name: (f.value, list(f.ci95) if f.ci95 else None) for f in row.figures} == {
            k: (e["value"], e["ci95"]) for k, e in want.items() if e}
    assert table.header()[:5] == ["session", "n", "profiles", "mean weight", "p99 weight"]
    cells = {c[0]: dict(zip(table.header(), c, strict=True)) for c in table.cells()}
    assert cells["2"]["mean weight"] == "2.75 [2.50, 3.00]" and cells["2"]["flag unsafe_advice"] == "50% [0%, 100%]"
    assert cells["1"]["major or worse"] == "0% [0%, 0%]" and cells["2"]["major or worse"] == "100% [100%, 100%]"

    page = render_run(run_dir)
    part = page.split('<h2 id="by-session">By session</h2>', 1)[1].split("</table>", 1)[0]
    assert "<td>2.75 [2.50, 3.00]</td>" in part and "<td>50% [0%, 100%]</td>" in part
    assert part.count("<tr>") == 3  # the header and two session numbers

    hostile = tmp_path / "hostile"  # a score label is the target's text: shown as text
    shutil.copytree(run_dir, hostile)
    summary = json.loads((hostile / "summary.json").read_text())
    summary["score"]["label"] = "<script>alert(1)</script> & co"
    (hostile / "summary.json").write_text(json.dumps(summary))
    page = render_run(hostile)
    assert html.escape("<script>alert(1)</script> & co") in page and "<script>alert(1)" not in page

    monkeypatch.setenv("MINDEVAL_VIEW_RUNS", str(run_dir))
    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "annotation_app" / "view_page.py"),
                           default_timeout=60).run()
    assert not at.exception and len(at.dataframe) == 2  # the list, then the table by session
    shown = at.dataframe[1].value
    assert list(shown["session"]) == ["1", "2"] and list(shown["n"]) == ["2", "2"]
    assert list(shown["mean weight"]) == ["0.50 [0.50, 0.50]", "2.75 [2.50, 3.00]"]
    assert list(shown["Major-or-worse check-ins (%)"]) == ["0.00 [0.00, 0.00]", "100.00 [100.00, 100.00]"]

    one = tmp_path / "one"
    assert main(["run", "--target", str(one_session_reply_safety(tmp_path)), "--limit", "1", "--turns", "2",
                 "--patient", "fake/echo", "--clinician", "fake/echo", "--judge", "fake/judge", "--quiet",
                 "--out", str(one)]) == 0
    assert run_sessions(one) is None and "By session" not in render_run(one)
    monkeypatch.setenv("MINDEVAL_VIEW_RUNS", str(one))
    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "annotation_app" / "view_page.py"),
                           default_timeout=60).run()
    assert not at.exception and len(at.dataframe) == 1
