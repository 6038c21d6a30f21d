"""Already-rated items go to new raters: `assign` counts only the chosen group's ratings, so the
authors' 60 rated transcripts can be given to a new team (calibration, validation)."""

from __future__ import annotations

from pathlib import Path

import pytest
from appkit import ADMIN_CODE, sign_in, viewer
from sqlalchemy import select

from annotation_app.services import SYSTEM, MindEvalError, Workspace
from annotation_app.store import AssignmentRow

NEW = {"Dr Ana": "ANA-CODE-000001", "Dr Ben": "BEN-CODE-000001"}


def _import_authors(ws: Workspace, shared_data: Path, study: str = "Calibration") -> int:
    ws.create_study(SYSTEM, study, "rating")
    rep = ws.import_path(SYSTEM, study, shared_data / "human_annotations.jsonl")
    assert rep.items_linked == 60 and rep.ratings_added > 0 and rep.annotators_added >= 2
    return rep.ratings_added


def _queues(ws: Workspace, study: int | str) -> dict[str, set[int]]:
    """The items each new person finds in her queue (as the app shows it: one entry per item)."""
    sid = ws.study(SYSTEM, study).id
    out = {}
    for name, code in NEW.items():
        ids = {e.assignment_id for e in ws.queue(viewer(ws, name, code), sid)}
        with ws.db.read() as s:
            out[name] = set(s.scalars(select(AssignmentRow.item_id).where(AssignmentRow.id.in_(ids))))
        assert len(out[name]) == len(ids)
    return out


def test_imported_rated_items_are_assigned_to_two_new_annotators(any_db_url, shared_data):
    ws = Workspace(any_db_url)
    imported = _import_authors(ws, shared_data)
    for name, code in NEW.items():
        ws.add_annotator(SYSTEM, name, code=code)

    rep = ws.assign(SYSTEM, "Calibration", k=2)  # default group: the people who can sign in
    assert (rep.created, rep.per_annotator, rep.short) == (120, {"Dr Ana": 60, "Dr Ben": 60}, 0)
    queues = _queues(ws, "Calibration")
    assert len(queues["Dr Ana"]) == len(queues["Dr Ben"]) == 60 and queues["Dr Ana"] == queues["Dr Ben"]
    assert ws.assign(SYSTEM, "Calibration", k=2).created == 0  # idempotent: the group's own count
    with pytest.raises(MindEvalError, match="6 ratings from the chosen annotators but only 2 were chosen"):
        ws.assign(SYSTEM, "Calibration", k=6)

    progress = {p.name: (p.assigned, p.submitted) for p in ws.results(SYSTEM, "Calibration").progress}
    assert progress["Dr Ana"] == progress["Dr Ben"] == (60, 0)
    assert sum(s for n, (_a, s) in progress.items() if n not in NEW) == imported  # imported ratings untouched
    ws.close()


def test_a_chosen_group_gets_k_new_ratings_per_item(tmp_path, shared_data):
    ws = Workspace(f"sqlite:///{tmp_path / 'g.db'}")
    _import_authors(ws, shared_data)
    for name, code in NEW.items():
        ws.add_annotator(SYSTEM, name, code=code)
    ws.add_annotator(SYSTEM, "Dr Cy", code="CY-CODE-0000001")
    rep = ws.assign(SYSTEM, "Calibration", annotators=["dr ana", "Dr Ben"], k=1)  # one new rating per item
    assert rep.created == 60 and rep.per_annotator == {"Dr Ana": 30, "Dr Ben": 30}
    assert ws.assign(SYSTEM, "Calibration", annotators=["Dr Cy"], k=1).per_annotator == {"Dr Cy": 60}
    # a second group of two: Dr Cy's ratings count for this group, so each item gets one more
    assert ws.assign(SYSTEM, "Calibration", annotators=["Dr Ana", "Dr Cy"], k=2).per_annotator == {"Dr Ana": 30}
    ws.close()


def test_the_command_line_assigns_imported_items_to_new_annotators(tmp_path, capsys, shared_data):
    from mindeval.cli import main

    db = ["--db", f"sqlite:///{tmp_path / 'cli.db'}"]
    assert main(["app", "admin", *db, "create-study", "Calibration"]) == 0
    assert main(["app", "admin", *db, "import", "Calibration", str(shared_data / "human_annotations.jsonl")]) == 0
    for name in NEW:
        assert main(["app", "admin", *db, "add-annotator", name]) == 0
    capsys.readouterr()
    assert main(["app", "admin", *db, "assign", "Calibration", "--k", "6"]) == 2
    assert "only 2 were chosen" in capsys.readouterr().err
    assert main(["app", "admin", *db, "assign", "Calibration", "--k", "2"]) == 0
    assert "120 new assignments (seed 0) — Dr Ana: 60, Dr Ben: 60" in capsys.readouterr().out
    assert main(["app", "admin", *db, "assign", "Calibration", "--k", "2", "--annotators", "Dr Ana,Dr Ben"]) == 0
    assert "0 new assignments" in capsys.readouterr().out


def test_the_studies_page_assigns_imported_items_to_a_new_team(demo_ws, shared_data):
    _import_authors(demo_ws, shared_data)
    for name, code in NEW.items():
        demo_ws.add_annotator(SYSTEM, name, code=code)
    at = sign_in("admin", ADMIN_CODE)
    at.switch_page("views/admin_studies.py").run()
    assert not at.exception, at.exception
    at.selectbox(key="admin_study").set_value("Calibration").run()
    at.multiselect(key="assign_who_Calibration").set_value(list(NEW)).run()
    at.number_input(key="assign_k_Calibration").set_value(2).run()
    at.button(key="admin_assign").click().run()
    assert not at.exception, at.exception
    assert any("120 new assignments" in s.value and "Dr Ana: 60" in s.value for s in at.success), \
        [s.value for s in at.success]
    assert {n: len(q) for n, q in _queues(demo_ws, "Calibration").items()} == {"Dr Ana": 60, "Dr Ben": 60}
