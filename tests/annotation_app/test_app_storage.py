"""Storage on SQLite and PostgreSQL: migrations keep data, constraints hold, the whole flow works."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from appkit import ADMIN_CODE, DEMO_CODE, make_workspace, viewer
from sqlalchemy import create_engine, text
from sqlalchemy.exc import IntegrityError

from annotation_app.services import SYSTEM, Workspace
from annotation_app.store import (
    VERSION_TABLE,
    AnnotationBase,
    AssignmentRow,
    RatingRevisionRow,
    RatingValueRow,
    RoleplaySessionRow,
)
from annotation_app.store.auth import hash_code
from annotation_app.store.migrations import (
    current_revision,
    head_revision,
    include_object,
    upgrade,
)
from annotation_app.store.read import read_ratings
from mindeval.store.migrations import HEAD as RUN_HEAD
from mindeval.store.migrations import current_version

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
NOW = "2026-01-02 03:04:05"


def _seed_first_revision(url: str) -> None:
    """A database made by the first schema revision, with a submitted rating in it."""
    eng = create_engine(url)
    upgrade(eng, "0001")
    attrs = json.dumps({"name": "Ada", "age": 30})
    msgs = json.dumps([{"role": "user", "content": "Hello."}, {"role": "assistant", "content": "Hi Ada."}])
    vals = {"coherence_style": 2, "respect_inclusion": 0}
    stmts = [
        ("INSERT INTO ann_annotators (id, name, code_hash, is_admin, active, origin, created_at) "
         "VALUES (1, 'old-rater', :h, false, true, 'created', :t)", {"h": hash_code("OLD-RATER-CODE")}),
        ("INSERT INTO ann_studies (id, name, kind, description, k, seed, guidelines_version, created_at) "
         "VALUES (1, 'old study', 'rating', 'from v1', 1, 7, '1.0.0', :t)", {}),
        ("INSERT INTO ann_items (id, external_id, source, source_ref, member_attributes, messages, clinician_model, "
         "patient_kind, meta, created_at) VALUES (1, 'run:x:1', 'run', 'p', :a, :m, 'vendor/model', 'model', '{}', :t)",
         {"a": attrs, "m": msgs}),
        ("INSERT INTO ann_study_items (id, study_id, item_id, position) VALUES (1, 1, 1, 0)", {}),
        ("INSERT INTO ann_assignments (id, study_id, item_id, annotator_id, position, created_at) "
         "VALUES (1, 1, 1, 1, 0, :t)", {}),
        ("INSERT INTO ann_ratings (id, assignment_id, state, revision, version, justification, safety_note, extra, "
         "created_at, updated_at, submitted_at) VALUES (1, 1, 'submitted', 1, 3, 'kept', NULL, '{}', :t, :t, :t)", {}),
        ("INSERT INTO ann_rating_values (rating_id, subaxis, value) VALUES (1, 'coherence_style', 2)", {}),
        ("INSERT INTO ann_rating_values (rating_id, subaxis, value) VALUES (1, 'respect_inclusion', 0)", {}),
        ("INSERT INTO ann_rating_revisions (rating_id, revision, action, values_json, justification, created_at) "
         "VALUES (1, 1, 'submit', :v, 'kept', :t)", {"v": json.dumps(vals)}),
    ]
    with eng.begin() as c:
        for sql, params in stmts:
            c.execute(text(sql), {"t": NOW, **params})
        if url.startswith("postgresql"):
            for table in ("ann_annotators", "ann_studies", "ann_items", "ann_study_items", "ann_assignments", "ann_ratings"):
                c.execute(text(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), 10)"))
    assert current_revision(eng) == "0001"
    eng.dispose()


def test_a_database_from_the_first_revision_upgrades_without_loss(any_db_url):
    _seed_first_revision(any_db_url)
    ws = Workspace(any_db_url)  # upgrades to head on open
    assert current_revision(ws.db.engine) == head_revision() != "0001"
    signed = ws.sign_in("old-rater", "OLD-RATER-CODE")
    assert signed is not None
    item = ws.item(signed.viewer, 1)
    assert item.values == {"coherence_style": 2, "respect_inclusion": 0}
    assert item.state == "submitted" and item.justification == "kept"
    assert [h.values for h in item.history] == [{"coherence_style": 2, "respect_inclusion": 0}]
    info = ws.study(SYSTEM, "old study")
    assert (info.seed, info.n_items, info.n_assignments, info.clinician_model) == (7, 1, 1, None)
    assert "vendor/model" in ws.export_text(SYSTEM, 1, "csv")
    # and the new revision's features work on the upgraded database
    ws.create_study(SYSTEM, "new roleplay", "roleplay", clinician_model="fake/echo")
    ws.close()


def test_the_models_match_the_migrations(any_db_url):
    ws = Workspace(any_db_url)
    with ws.db.engine.connect() as conn:
        ctx = MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE,
                                                     "include_object": include_object})
        diffs = compare_metadata(ctx, AnnotationBase.metadata)
    ws.close()
    assert diffs == []


def test_a_database_made_by_main_0ead889_is_upgraded_and_read(tmp_path):
    """tests/fixtures/main_0ead889/app.db: seeded demo workspace with one submitted rating, made by
    make_app_db.py at commit 0ead889 (SQLite; its run tables had no schema version then)."""
    db = tmp_path / "app.db"
    shutil.copyfile(FIXTURES / "main_0ead889" / "app.db", db)
    url = f"sqlite:///{db}"
    ws = Workspace(url)  # opening runs both databases' migrations
    assert current_revision(ws.db.engine) == head_revision()
    assert current_version(ws.db.engine) == RUN_HEAD
    with ws.db.engine.connect() as conn:
        ctx = MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE,
                                                     "include_object": include_object})
        assert compare_metadata(ctx, AnnotationBase.metadata) == []
    v = viewer(ws, "demo", DEMO_CODE)  # the access code made by the old code still signs in
    assert [e.state for e in ws.queue(v, 1)][:2] == ["submitted", "todo"]
    ws.close()
    ratings = read_ratings(url, "Demo: rate transcripts")
    assert len(ratings.ratings) == 1 and ratings.ratings[0].justification == "kept through the upgrade"
    assert set(ratings.ratings[0].values.values()) == {4}


def test_constraints_forbid_duplicates_and_bad_values(any_db_url):
    ws = make_workspace(any_db_url)
    v = viewer(ws, "demo", DEMO_CODE)
    aid = ws.queue(v, 1)[0].assignment_id
    for sub in ws.subaxes():
        ws.save_value(v, aid, sub.id, 4)
    ws.save_text(v, aid, justification="fine")
    ws.submit(v, aid)
    with ws.db.read() as s:
        a = s.get(AssignmentRow, aid)
        rev = s.query(RatingRevisionRow).one()
        sess = s.query(RoleplaySessionRow).first()
    bad = [
        AssignmentRow(study_id=a.study_id, item_id=a.item_id, annotator_id=a.annotator_id, position=99),
        RatingValueRow(rating_id=rev.rating_id, subaxis="coherence_style", value=5),
        RatingRevisionRow(rating_id=rev.rating_id, revision=1, action="submit", values_json={}, justification=""),
        RoleplaySessionRow(study_id=sess.study_id, annotator_id=sess.annotator_id,
                           study_profile_id=sess.study_profile_id, position=50, status="not_started"),
        RoleplaySessionRow(study_id=sess.study_id, annotator_id=sess.annotator_id,
                           study_profile_id=sess.study_profile_id + 100, position=51, status="paused"),
    ]
    for row in bad:
        with pytest.raises(IntegrityError):
            with ws.db.write() as s:
                s.add(row)
    ws.close()


def test_assignment_is_balanced_seeded_and_reproducible(any_db_url, tmp_path):
    def build(url: str) -> dict[str, list[str]]:
        ws = Workspace(url)
        for name in ("ana", "ben", "cy"):
            ws.add_annotator(SYSTEM, name)
        ws.create_study(SYSTEM, "S", "rating", k=2, seed=11)
        ws.import_path(SYSTEM, "S", tmp_path / "items.jsonl")
        rep = ws.assign(SYSTEM, "S")
        assert rep.created == 14 and sorted(rep.per_annotator.values()) == [4, 5, 5]
        assert ws.assign(SYSTEM, "S").created == 0  # idempotent
        out = {}
        with ws.db.read() as s:
            for name in ("ana", "ben", "cy"):
                rows = s.execute(text(
                    "SELECT i.external_id FROM ann_assignments a JOIN ann_items i ON i.id = a.item_id "
                    "JOIN ann_annotators p ON p.id = a.annotator_id WHERE p.name = :n ORDER BY a.position"),
                    {"n": name}).scalars().all()
                out[name] = list(rows)
        ws.close()
        return out

    rows = [{"id": f"t{n}", "model": "m/x", "member_attributes": {"name": f"P{n}"},
             "messages": [{"role": "user", "content": "Hello."}]} for n in range(7)]
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    first = build(any_db_url)
    again = build(f"sqlite:///{tmp_path / 'again.db'}")
    assert first == again
    per_item: dict[str, int] = {}
    for items in first.values():
        for i in items:
            per_item[i] = per_item.get(i, 0) + 1
    assert per_item == {f"file:t{n}": 2 for n in range(7)}
    orders = [sorted(range(len(v)), key=lambda k, v=v: v[k]) for v in first.values()]
    assert len({tuple(o) for o in orders}) > 1 or any(v != sorted(v) for v in first.values())


def test_the_whole_flow_works_on_this_database(any_db_url):
    ws = make_workspace(any_db_url)
    v = viewer(ws, "demo", DEMO_CODE)
    aid = ws.resume_target(v, 1)
    for sub in ws.subaxes():
        ws.save_value(v, aid, sub.id, 5 if sub.allow_na else 3)
    ws.save_text(v, aid, justification="steady")
    assert ws.submit(v, aid) == 1
    ws.revise(v, aid)
    ws.save_value(v, aid, "respect_inclusion", 0)
    assert ws.submit(v, aid) == 2
    res = ws.results(SYSTEM, 1)
    assert res.n_ratings == 1 and res.axis_means["EPC"] == 3.0 and res.axis_means["CAC"] == 3.0
    assert [p.submitted for p in res.progress] == [1]
    sid = ws.sessions(v, 2)[0].session_id
    ws.start_session(v, sid)
    ws.send_message(v, sid, "Hello, it is hard lately.")
    ws.finish_session(v, sid)
    assert len(ws.export_text(SYSTEM, 2, "user-turns").splitlines()) == 1
    assert ws.sign_in("admin", ADMIN_CODE).viewer.is_admin
    ws.close()
