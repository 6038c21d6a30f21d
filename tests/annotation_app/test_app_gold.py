"""Gold items, qualification and the rater table (issue 27, item 3).

A rater who fails the qualification never receives a real item (service level and AppTest);
while qualifying she sees only her qualification items, and afterwards nothing she is shown
tells a gold item from a real one (issue 35; the browser side is test_app_gold_browser.py);
per-rater gold accuracy and leave-one-out agreement equal a hand computation on a tiny study;
a database made by main at 665ffb1 (schema 0007) upgrades and gets gold items.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import shutil
from pathlib import Path

import pytest
from appkit import ROOT, all_text, sign_in, viewer
from sqlalchemy import select

from annotation_app.services import DB_ENV, SYSTEM, AccessDenied, MindEvalError, Workspace
from annotation_app.store import read_ratings
from annotation_app.store.assign import mix_gold
from annotation_app.store.migrations import current_revision, head_revision
from annotation_app.store.tables import AssignmentRow, ItemRow

DEMO = ROOT / "data" / "demo_transcripts.jsonl"
FIXTURES = ROOT / "tests" / "fixtures"
GOLD = ["demo:demo-harold-1", "demo:demo-kalani-1"]  # Harold and Kalani are the gold items
REAL = ["Lian", "Marisol", "Russell", "Theo"]


def _gold_file(tmp_path: Path, tolerance: int = 1) -> Path:
    f = tmp_path / "gold.jsonl"
    f.write_text("".join(json.dumps({"item": i, "expected": {"evidence_based_intervention": 3, "collaborative_stance": 3},
                                     "tolerance": tolerance}) + "\n" for i in GOLD))
    return f


def _study(ws: Workspace, tmp_path: Path, names: list[str], *, k: int, gold_rate: float = 0.0,
           qualify: int = 0, more_gold: tuple[str, ...] = ()) -> None:
    ws.create_study(SYSTEM, "G", "rating", k=k)
    ws.import_path(SYSTEM, "G", DEMO)
    assert ws.import_gold(SYSTEM, "G", _gold_file(tmp_path)) == 2
    for item in more_gold:
        ws.mark_gold(SYSTEM, "G", item, {"evidence_based_intervention": 3, "collaborative_stance": 3}, tolerance=1)
    ws.set_gold_settings(SYSTEM, "G", gold_rate=gold_rate, qualify_n=qualify, qualify_pass=1.0)
    for n in names:
        ws.add_annotator(SYSTEM, n, code=f"{n}-code-123456")
    ws.assign(SYSTEM, "G", annotators=names)


def _rate_all(ws: Workspace, who: str, value_of) -> None:
    """Submit every open item of ``who``'s queue, every sub-axis at ``value_of(member name)``."""
    v = viewer(ws, who, f"{who}-code-123456")
    for q in ws.queue(v, 1):
        if q.state == "submitted":
            continue
        item = ws.item(v, q.assignment_id)
        for sub in item.subaxes:
            ws.save_value(v, q.assignment_id, sub.id, value_of(item.member_name))
        ws.save_text(v, q.assignment_id, justification="because")
        ws.submit(v, q.assignment_id)


def test_a_rater_who_fails_the_qualification_never_receives_a_real_item(tmp_db_url, tmp_path):
    ws = Workspace(tmp_db_url)
    _study(ws, tmp_path, ["alice", "bob"], k=1, qualify=2)
    for who in ("alice", "bob"):  # before answering: only the two qualification items, unmarked
        v = viewer(ws, who, f"{who}-code-123456")
        q = ws.queue(v, 1)
        assert len(q) == 2 and {ws.item(v, e.assignment_id).member_name for e in q} == {"Harold", "Kalani"}
        assert ws.my_studies(v)[0].total == 2
        assert "gold" not in ws.item(v, q[0].assignment_id).model_dump_json().lower()
        assert ws.qualification(v, 1).status == "pending"
    with ws.db.read() as s:
        bob_real = [a.id for a in s.scalars(select(AssignmentRow).where(AssignmentRow.kind == "real",
                                                                         AssignmentRow.annotator_id == 2))]
    assert bob_real  # held, never shown
    _rate_all(ws, "bob", lambda name: 6)  # |6 - 3| > 1 on both gold items: fails
    _rate_all(ws, "alice", lambda name: 4)  # within ±1: passes
    bob = viewer(ws, "bob", "bob-code-123456")
    qual = ws.qualification(bob, 1)
    assert (qual.status, qual.correct, qual.required, qual.needed) == ("failed", 0, 2, 2)
    assert "did not pass" in qual.message() and "will not receive" in qual.message()
    assert len(ws.queue(bob, 1)) == 2 and ws.my_studies(bob)[0].total == 2
    assert ws.resume_target(bob, 1) is None
    for aid in bob_real:
        with pytest.raises(AccessDenied):
            ws.item(bob, aid)
        with pytest.raises(AccessDenied):
            ws.save_value(bob, aid, "collaborative_stance", 3)
    alice = viewer(ws, "alice", "alice-code-123456")
    assert ws.qualification(alice, 1).status == "passed" and len(ws.queue(alice, 1)) > 2
    # the admin sees it, and assigning again gives bob's unseen items to alice
    table = ws.raters(SYSTEM, "G")
    assert {r.name: r.qualification for r in table.raters} == {"alice": "passed", "bob": "failed"}
    rep = ws.assign(SYSTEM, "G", annotators=["alice", "bob"])
    assert rep.failed == ["bob"] and rep.created == len(bob_real)
    assert len(ws.queue(bob, 1)) == 2
    with ws.db.read() as s:
        assert not list(s.scalars(select(AssignmentRow).where(AssignmentRow.kind == "real",
                                                              AssignmentRow.annotator_id == 2)))
    ws.close()


def test_the_failed_rater_sees_why_in_the_app_and_no_real_transcript(tmp_db_url, tmp_path, monkeypatch):
    monkeypatch.setenv(DB_ENV, tmp_db_url)
    ws = Workspace(tmp_db_url)
    _study(ws, tmp_path, ["bob"], k=1, qualify=2)
    _rate_all(ws, "bob", lambda name: 1)
    ws.add_annotator(SYSTEM, "boss", admin=True, code="boss-code-123456")
    ws.close()
    at = sign_in("bob", "bob-code-123456")
    assert any("did not pass" in e.value for e in at.error), [e.value for e in at.error]
    at.switch_page("views/rate.py").run()
    assert not at.exception, at.exception
    assert any("did not pass" in e.value for e in at.error)
    text = all_text(at)
    assert not any(name in text for name in REAL)  # no real transcript anywhere on the page
    admin = sign_in("boss", "boss-code-123456")  # the admin is told too
    admin.switch_page("views/admin_results.py").run()
    assert not admin.exception, admin.exception
    assert any("Failed the qualification" in w.value and "bob" in w.value for w in admin.warning)
    admin.switch_page("views/admin_studies.py").run()
    assert not admin.exception, admin.exception
    assert "Gold items and qualification" in all_text(admin) and GOLD[0] in all_text(admin)
    ids = [df.value for df in admin.dataframe if "Source" in df.value.columns]  # issue 38: the ids a gold file names
    ws = Workspace(tmp_db_url)
    want = ws.study_items(SYSTEM, "G")
    ws.close()
    assert len(ids) == 1 and list(ids[0]["Item"]) == [it.item for it in want] and len(want) > len(GOLD)
    assert sorted(ids[0].loc[ids[0]["Gold"] == "yes", "Item"]) == sorted(it.item for it in want if it.gold)


def _wilson(k: int, n: int) -> tuple[float, float]:
    z = 1.959963984540054
    centre = (k + z * z / 2) / (n + z * z)
    half = z / (n + z * z) * math.sqrt(k * (n - k) / n + z * z / 4)
    return max(0.0, centre - half), min(1.0, centre + half)


def test_gold_accuracy_and_leave_one_out_agreement_equal_a_hand_computation(tmp_db_url, tmp_path):
    ws = Workspace(tmp_db_url)
    _study(ws, tmp_path, ["ann", "ben", "cat"], k=3, gold_rate=0.4)  # 4 real items each, both gold items mixed in
    real = {"ann": [1, 2, 3, 4], "ben": [2, 1, 3, 4], "cat": [1, 2, 4, 3]}  # Lian, Marisol, Russell, Theo
    gold = {"ann": (3, 4), "ben": (5, 2), "cat": (1, 6)}  # Harold, Kalani; expected 3 ± 1
    for who in real:
        table = dict(zip(REAL, real[who], strict=True)) | dict(zip(["Harold", "Kalani"], gold[who], strict=True))
        _rate_all(ws, who, table.__getitem__)
    ben = viewer(ws, "ben", "ben-code-123456")
    flagged = ws.queue(ben, 1)[0].assignment_id
    ws.set_flag(ben, flagged, "flag", "audio missing")
    ann = viewer(ws, "ann", "ann-code-123456")
    for q, secs in zip(ws.queue(ann, 1), (30.0, 10.0, 20.0), strict=False):
        ws.add_active_time(ann, q.assignment_id, secs)
    rows = {r.name: r for r in ws.raters(SYSTEM, "G").raters}
    assert (rows["ann"].median_seconds, rows["ann"].timed) == (20.0, 3) and rows["ben"].median_seconds is None
    lo, hi = rows["ann"].median_seconds_ci95
    assert 10.0 <= lo <= 20.0 <= hi <= 30.0
    # gold: ann 2/2, ben 1/2 (5 is off by 2), cat 0/2
    for who, k in (("ann", 2), ("ben", 1), ("cat", 0)):
        g = rows[who].gold
        assert (g.k, g.n) == (k, 2)
        assert g.ci95 == pytest.approx(_wilson(k, 2))
    # leave-one-out τ-b by hand, on the four real items (gold never counts):
    # ann x=1,2,3,4 vs mean(ben,cat)=1.5,1.5,3.5,3.5 → C=4, D=0, ties in y 2 → 4/√(6·4)
    # ben x=2,1,3,4 vs 1,2,3.5,3.5 → C=4, D=1, ties in y 1 → 3/√(6·5); cat likewise 3/√(6·5)
    assert rows["ann"].loo.tau == pytest.approx(4 / math.sqrt(24))
    assert rows["ben"].loo.tau == pytest.approx(3 / math.sqrt(30))
    assert rows["cat"].loo.tau == pytest.approx(3 / math.sqrt(30))
    assert all(r.loo.n == 4 and r.loo.ci95 is not None for r in rows.values())
    assert rows["ben"].flags == 1 and rows["ben"].skips == 0 and rows["ann"].flags == 0
    assert all(r.submitted == 6 for r in rows.values())
    assert sum(b.gold.n for b in rows["ann"].blocks) == 2
    # gold ratings are in no ratings export and not in what metaeval reads
    rows_csv = list(csv.DictReader(io.StringIO(ws.export_text(SYSTEM, "G", "csv"))))
    assert len(rows_csv) == 12 and not {r["item"] for r in rows_csv} & set(GOLD)
    read = read_ratings(tmp_db_url, "G")
    assert len(read.ratings) == 12 and read.gold_items == 2
    assert {n: (g.right, g.answered) for n, g in read.gold.items()} == {"ann": (2, 2), "ben": (1, 2), "cat": (0, 2)}
    out = tmp_path / "raters.jsonl"
    assert ws.export_file(SYSTEM, "G", "raters", out) == 3
    first = json.loads(out.read_text().splitlines()[0])
    assert first["name"] == "ann" and first["gold"]["k"] == 2 and first["loo"]["n"] == 4
    ws.close()


def test_metaeval_compare_leaves_out_raters_below_the_gold_threshold_and_says_so(tmp_db_url, tmp_path, capsys):
    from mindeval.cli.meta import main as meta

    ws = Workspace(tmp_db_url)
    _study(ws, tmp_path, ["ann", "ben", "cat"], k=3, gold_rate=0.4)
    real = {"ann": [1, 2, 3, 4], "ben": [2, 1, 3, 4], "cat": [1, 2, 4, 3]}
    gold = {"ann": (3, 4), "ben": (5, 2), "cat": (1, 6)}  # right: ann 2/2, ben 1/2, cat 0/2
    for who in real:
        table = dict(zip(REAL, real[who], strict=True)) | dict(zip(["Harold", "Kalani"], gold[who], strict=True))
        _rate_all(ws, who, table.__getitem__)
    ws.close()
    out = tmp_path / "cmp"
    assert meta(["compare", "--humans", tmp_db_url, "--study", "G", "--min-gold-accuracy", "0.5",
                 "--resamples", "0", "--no-plots", "--out", str(out)]) == 0
    assert "left out rater cat: gold accuracy 0/2" in capsys.readouterr().err
    report = json.loads((out / "agreement.json").read_text())
    excluded = report["inputs"]["excluded_raters"]
    assert [(x["rater"], x["right"], x["answered"]) for x in excluded] == [("cat", 0, 2)]
    assert report["inputs"]["min_gold_accuracy"] == 0.5
    assert "cat" not in json.dumps(report["matrices"]) and "ben" in json.dumps(report["matrices"])
    assert meta(["compare", "--humans", tmp_db_url, "--study", "G", "--resamples", "0"]) == 0  # no flag: all three
    assert "left out" not in capsys.readouterr().err


def test_gold_files_are_checked_with_file_line_and_field(tmp_db_url, tmp_path):
    ws = Workspace(tmp_db_url)
    ws.create_study(SYSTEM, "G", "rating")
    ws.import_path(SYSTEM, "G", DEMO)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"item": GOLD[0], "expected": {"collaborative_stance": 9}}) + "\n")
    with pytest.raises(MindEvalError, match=r"bad.jsonl, line 1: 'collaborative_stance' expects"):
        ws.import_gold(SYSTEM, "G", bad)
    bad.write_text("\n" + json.dumps({"item": "nope", "expected": {"collaborative_stance": 3}}) + "\n")
    with pytest.raises(MindEvalError, match=r"line 2: no item 'nope'"):
        ws.import_gold(SYSTEM, "G", bad)
    assert ws.import_gold(SYSTEM, "G", _gold_file(tmp_path)) == 2
    with pytest.raises(MindEvalError, match="--replace"):  # never overwritten unasked
        ws.import_gold(SYSTEM, "G", _gold_file(tmp_path, tolerance=0))
    assert ws.import_gold(SYSTEM, "G", _gold_file(tmp_path, tolerance=0), replace=True) == 2
    with pytest.raises(MindEvalError, match="gold rate"):
        ws.set_gold_settings(SYSTEM, "G", gold_rate=1.0)
    ws.close()


def test_a_database_made_by_main_665ffb1_upgrades_and_takes_gold(tmp_path):
    """tests/fixtures/main_665ffb1/app.db: the demo workspace with one submitted rating, schema 0007."""
    db = tmp_path / "app.db"
    shutil.copyfile(FIXTURES / "main_665ffb1" / "app.db", db)
    url = f"sqlite:///{db}"
    ws = Workspace(url)
    assert current_revision(ws.db.engine) == head_revision()
    v = viewer(ws, "demo", "DEMO-CODE-5678")
    assert [e.state for e in ws.queue(v, 1)][:2] == ["submitted", "todo"]  # old assignments are real items
    assert ws.gold_settings(SYSTEM, 1).qualify_n == 0 and ws.qualification(v, 1).status == "none"
    ws.close()
    ratings = read_ratings(url, "Demo: rate transcripts")
    assert len(ratings.ratings) == 1 and ratings.ratings[0].justification == "kept through the upgrade"
    assert ratings.gold_items == 0


def test_a_qualification_short_of_gold_items_waits_and_is_topped_up_by_the_next_assign(tmp_db_url, tmp_path):
    ws = Workspace(tmp_db_url)
    ws.create_study(SYSTEM, "G", "rating")
    ws.import_path(SYSTEM, "G", DEMO)
    ws.mark_gold(SYSTEM, "G", GOLD[0], {"collaborative_stance": 3}, tolerance=1)
    ws.set_gold_settings(SYSTEM, "G", qualify_n=2)
    ws.add_annotator(SYSTEM, "alice", code="alice-code-123456")
    ws.assign(SYSTEM, "G", per_system=2)  # two real items; only one gold item for a qualification of two
    alice = viewer(ws, "alice", "alice-code-123456")
    _rate_all(ws, "alice", lambda name: 3)
    assert ws.qualification(alice, 1).status == "pending" and len(ws.queue(alice, 1)) == 1
    with ws.db.read() as s:
        taken = set(s.scalars(select(AssignmentRow.item_id)))
    with ws.db.read() as s:
        free = next(e for i, e in s.execute(select(ItemRow.id, ItemRow.external_id)) if i not in taken)
    ws.mark_gold(SYSTEM, "G", free, {"collaborative_stance": 3}, tolerance=1)
    rep = ws.assign(SYSTEM, "G", per_system=2)
    assert (rep.created, rep.gold) == (0, 1)
    _rate_all(ws, "alice", lambda name: 4)
    assert ws.qualification(alice, 1).status == "passed" and len(ws.queue(alice, 1)) == 4
    ws.close()


def _kinds(ws: Workspace, who: int) -> dict[int, str]:
    """Assignment id -> kind (qualify, gold, real) of one annotator, from the database (the admin's view)."""
    with ws.db.read() as s:
        return {a.id: a.kind for a in s.scalars(select(AssignmentRow).where(AssignmentRow.annotator_id == who)
                                                .order_by(AssignmentRow.position))}


def test_a_qualifying_rater_sees_only_her_qualification_items_and_later_nothing_marks_gold(tmp_db_url, tmp_path):
    ws = Workspace(tmp_db_url)  # 3 gold items: 2 qualify each rater, the third is mixed among her 3 real items
    _study(ws, tmp_path, ["alice", "bob"], k=2, gold_rate=0.3, qualify=2, more_gold=("demo:demo-lian-1",))
    for who, aid in (("alice", 1), ("bob", 2)):
        v = viewer(ws, who, f"{who}-code-123456")
        kinds = _kinds(ws, aid)
        assert sorted(kinds.values()) == ["gold", "qualify", "qualify", "real", "real", "real"]
        later_gold = next(i for i, k in kinds.items() if k == "gold")
        real = next(i for i, k in kinds.items() if k == "real")
        # pending: exactly her qualification items, in every list and count
        q = ws.queue(v, 1)
        assert [e.assignment_id for e in q] == [i for i, k in kinds.items() if k == "qualify"]
        assert ws.my_studies(v)[0].total == 2 and ws.item(v, q[0].assignment_id).total == 2
        assert ws.resume_target(v, 1) in {e.assignment_id for e in q}
        with pytest.raises(AccessDenied) as gold_refused:  # the later gold item opens no sooner than a real one
            ws.item(v, later_gold)
        with pytest.raises(AccessDenied) as real_refused:
            ws.item(v, real)
        assert str(gold_refused.value) == str(real_refused.value)
        with pytest.raises(AccessDenied):
            ws.save_value(v, later_gold, "collaborative_stance", 3)
        seen = {ws.item(v, e.assignment_id).member_name for e in q}
        _rate_all(ws, who, lambda name: 3)  # both right: passes
        assert ws.qualification(v, 1).status == "passed"
        # passed: every item in her seeded order, numbered and labelled alike, counts are totals
        q = ws.queue(v, 1)
        assert [e.assignment_id for e in q] == list(kinds) and [e.position for e in q] == [1, 2, 3, 4, 5, 6]
        assert [e.assignment_id for e in q] == sorted(e.assignment_id for e in q)  # ids follow her order
        assert all(re.fullmatch(rf"Transcript {e.position} · [A-Z][a-z]+", e.label) for e in q), [e.label for e in q]
        assert (ws.my_studies(v)[0].total, ws.my_studies(v)[0].done) == (6, 2)
        gold_view, real_view = ws.item(v, later_gold), ws.item(v, real)
        assert gold_view.total == real_view.total == 6 and gold_view.done == real_view.done == 2
        assert gold_view.member_name not in seen  # never shown before its turn
        for shown in (*q, gold_view):
            assert not re.search(r"gold|qualif", shown.model_dump_json(), re.I)
        assert set(gold_view.model_dump()) == set(real_view.model_dump())
    # the admin still sees gold: the gold items and each rater's gold accuracy (first answers only)
    assert len(ws.gold_items(SYSTEM, "G")) == 3
    assert {r.name: (r.gold.k, r.gold.n) for r in ws.raters(SYSTEM, "G").raters} == {"alice": (2, 2), "bob": (2, 2)}
    ws.close()


def test_gold_items_take_seeded_turns_among_the_real_items():
    real, gold = list(range(100, 120)), [1, 2, 3, 4, 5, 6]
    orders = {who: mix_gold(real, gold, 0.2, 2, seed=7, annotator_key=who) for who in ("ann", "ben", "cat", "dan")}
    assert orders["ann"] == mix_gold(real, gold, 0.2, 2, seed=7, annotator_key="ann")  # reproducible
    for order in orders.values():
        kinds = [k for _i, k in order]
        assert kinds[:2] == ["qualify", "qualify"] and kinds.count("gold") == 4 and kinds.count("real") == 20
        assert [i for i, k in order if k == "real"] == real  # the real order is kept, gold slotted in
    places = {who: tuple(n for n, (_i, k) in enumerate(order) if k == "gold") for who, order in orders.items()}
    assert len(set(places.values())) > 1  # each rater's gold items sit in her own seeded places
    assert any(max(p) < len(real) + 5 for p in places.values())  # not all heaped at the end
