"""Multi-session runs in metaeval and the annotation app: the rated unit is a session of a member
(session k > 1 of profile P is paired as ``P#s<k>``), for judges and humans alike."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from metaeval_builders import weighted_cohen

from metaeval.api import compare
from metaeval.rollup import Dimensions
from metaeval.sources import load_judge_run, load_ratings_file, load_study, unit_key
from mindeval.cli import main
from mindeval.rundir import read_run
from mindeval.sessions import session_of
from mindeval.study_data import StudyRatings, SubmittedRating
from mindeval.targets import load_target
from mindeval.targets.guidelines import load_guidelines

RS = load_guidelines(Path(__file__).resolve().parents[2] / "targets" / "reply_safety" / "guidelines.yaml")
LEVELS = ["no_concern", "minor", "major", "critical"]
FAKE = ["--clinician", "fake/echo", "--patient", "fake/echo", "--turns", "2", "--limit", "2", "--concurrency", "1"]


def cohen(a: list, b: list) -> float:
    """Cohen's κ from its definition."""
    n = len(a)
    po = sum(x == y for x, y in zip(a, b, strict=True)) / n
    pe = sum((a.count(c) / n) * (b.count(c) / n) for c in set(a) | set(b))
    return (po - pe) / (1 - pe)


def figure(rep, metric: str, rater: str, reference: str):
    [f] = [f for f in rep.figures if (f.field, f.metric, f.rater, f.reference) == ("severity", metric, rater, reference)]
    return f


@pytest.fixture(scope="module")
def two_sessions(tmp_path_factory):
    """A 2-session reply_safety run judged by fake/judge (``a``), the same conversations judged by
    fake/judge:b (``b``), and three humans' reply ratings of its four member x session pairs."""
    tmp = tmp_path_factory.mktemp("sessions")
    a, b = tmp / "a", tmp / "b"
    assert main(["run", "--target", "reply_safety", *FAKE, "--judge", "fake/judge", "--out", str(a), "--quiet"]) == 0
    assert main(["judge", str(a), "--judge", "fake/judge:b", "--out", str(b), "--quiet"]) == 0
    judged = sorted(read_run(a).judgments, key=lambda j: j.interaction_id)
    assert len(judged) == 4 and {session_of(j.interaction_id, j.profile_id) for j in judged} == {1, 2}
    truth = {j.interaction_id: [r.model_dump() for r in j.replies or []] for j in judged}
    iids = list(truth)
    shift = {"H1": {}, "H2": {iids[1]: 1}, "H3": {iids[0]: 2, iids[3]: 3}}  # level steps to move, per human

    def moved(replies: list[dict], by: int) -> list[dict]:
        return [{**r, "level": LEVELS[(LEVELS.index(r["level"]) + by) % 4]} for r in replies]

    humans = {h: {i: moved(truth[i], s.get(i, 0)) for i in iids} for h, s in shift.items()}
    path = tmp / "humans.jsonl"
    rows = [{"interaction_id": i, "annotator": h, "replies": reps} for h, per in humans.items() for i, reps in per.items()]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return a, b, path, humans, judged


def test_a_session_is_its_own_unit_and_single_session_keys_are_unchanged():
    assert unit_key("marisol-1", "run-x-000-marisol-1") == "marisol-1"
    assert unit_key("marisol-1", "run-x-000-marisol-1-s2") == "marisol-1#s2"
    assert unit_key("marisol-1", "run-x-000-marisol-1-r1-s3") == "marisol-1#s3"
    # a profile id that itself ends like a session suffix is still session 1
    assert unit_key("ana-s2", "run-x-000-ana-s2") == "ana-s2"
    assert unit_key("P", "authors-uuid-s2") == "P"


def test_judge_runs_pair_member_x_session(two_sessions):
    a, b, _, _, judged = two_sessions
    for run in (a, b):
        [r] = load_judge_run(run)
        sev = r.frame[r.frame["axis"] == "SEVERITY"]
        assert len(sev) == 4 and sev["profile_id"].nunique() == 4
        assert sorted(sev["profile_id"]) == sorted(unit_key(j.profile_id, j.interaction_id) for j in judged)


def test_compare_two_judges_of_a_two_session_run(two_sessions):
    a, b, path, humans, judged = two_sessions
    res = compare([str(path)], [f"a={a}", f"b={b}"], resamples=50, seed=1).result
    iids = [j.interaction_id for j in judged]
    # conversation level: a human's severity of a session is its worst reply (lowest value)
    sev = {h: [min(RS.value_of(r["level"]) for r in per[i]) for i in iids] for h, per in humans.items()}
    judge_a = [j.scores["SEVERITY"] for j in judged]
    m = res.matrices["SEVERITY"]
    assert m.cell("H1", "H3").n_items == [4]
    assert m.cell("H1", "H3").values["kappa"] == [pytest.approx(cohen(sev["H1"], sev["H3"]))]
    assert m.cell("a", "H3").values["kappa"] == [pytest.approx(cohen(judge_a, sev["H3"]))]
    assert m.cell("a", "b").n_items == [4]
    # unit level: every reply of the four member x session pairs
    rep = res.units
    assert rep is not None and rep.unit == "reply" and rep.n_conversations == 4
    items = [(i, r["turn"]) for i in iids for r in humans["H1"][i]]
    lv = {h: [LEVELS.index(r["level"]) for i in iids for r in per[i]] for h, per in humans.items()}
    assert len(items) == len(lv["H2"]) >= 4
    f = figure(rep, "weighted_kappa", "H1", "H2")
    assert f.value == pytest.approx(weighted_cohen(lv["H1"], lv["H2"])) and f.n_conversations == 4
    f = figure(rep, "agreement", "a", "H3")
    judged_lv = [LEVELS.index(r.level) for j in judged for r in j.replies or []]
    assert f.value == pytest.approx(sum(x == y for x, y in zip(judged_lv, lv["H3"], strict=True)) / len(items))
    assert f.n_items == len(items) and f.n_conversations == 4 and f.ci_low <= f.value <= f.ci_high

def test_ratings_file_and_study_key_sessions_like_the_judges(two_sessions, tmp_path):
    _, _, _, humans, judged = two_sessions
    dims = Dimensions.of_target(load_target("reply_safety"))
    csv = tmp_path / "ratings.csv"
    lines = ["interaction_id,profile_id,system,rater,subaxis_id,score"]
    lines += [f"{j.interaction_id},{j.profile_id},{j.model},H1,reply_severity,{humans['H1'][j.interaction_id][0]['level']}"
              for j in judged]
    csv.write_text("\n".join(lines) + "\n", encoding="utf-8")
    want = sorted(unit_key(j.profile_id, j.interaction_id) for j in judged)
    [h] = load_ratings_file(csv, dims).raters
    assert sorted(h.frame.loc[h.frame["axis"] == "SEVERITY", "profile_id"]) == want
    study = StudyRatings(study="s", source="sqlite:///x.db", target="reply_safety", na_value=-1, ratings=[
        SubmittedRating(interaction_id=j.interaction_id, profile_id=j.profile_id, member_attributes={}, messages=[],
                        clinician_model=j.model, annotator="ann", values={"reply_severity": 1}, justification="",
                        safety_note=None, revision=1, submitted_at=None) for j in judged])
    [s] = load_study(study).raters
    assert sorted(s.frame.loc[s.frame["axis"] == "SEVERITY", "profile_id"]) == want


def test_app_import_keeps_each_session_an_item(two_sessions, tmp_db_url):
    from sqlalchemy import select

    from annotation_app.store.importers import import_path
    from annotation_app.store.migrations import upgrade
    from annotation_app.store.models import StudySpec
    from annotation_app.store.studies import create_study
    from annotation_app.store.tables import ItemRow
    from mindeval.store import Database

    a, _, _, _, judged = two_sessions
    db = Database(tmp_db_url)
    try:
        upgrade(db.engine)
        create_study(db, StudySpec(name="s", kind="rating", target="reply_safety"))
        report = import_path(db, RS, "s", a, target="reply_safety")
        assert report.items_added == 4
        with db.read() as s:
            metas = [i.meta for i in s.scalars(select(ItemRow))]
    finally:
        db.close()
    assert sorted(m["id"] for m in metas) == sorted(j.interaction_id for j in judged)
    assert sorted((m["profile_id"], m["session"]["session"]) for m in metas) == sorted(
        (j.profile_id, session_of(j.interaction_id, j.profile_id)) for j in judged)
    assert all(len(m["judgments"]) == 1 for m in metas)
