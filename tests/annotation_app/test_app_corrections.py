"""Correcting a judge value in the app: an admin on the Results page records it in the run's store
under her name (reason required); an annotator may not; the access code reaches neither the store nor
the page."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from appkit import ADMIN_CODE, DEMO_CODE, SYSTEM, sign_in, viewer

from annotation_app.services import AccessDenied
from mindeval.corrections import CorrectionRequest, run_corrections

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "tests" / "fixtures" / "main_665ffb1" / "corr_run"
STUDY = "Judged run"


@pytest.fixture
def judged(demo_ws, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    demo_ws.create_study(SYSTEM, STUDY, "rating")
    demo_ws.import_path(SYSTEM, STUDY, run)
    return run


def test_only_an_admin_corrects_and_the_correction_carries_her_name(demo_ws, judged):
    [item, _] = demo_ws.judged_items(SYSTEM, STUDY)
    req = CorrectionRequest(interaction_id="", axis="CAC", to="6", reason="kind and accurate")
    with pytest.raises(AccessDenied):
        demo_ws.correct_judge(viewer(demo_ws, "demo", DEMO_CODE), STUDY, item.item, req)
    [c] = demo_ws.correct_judge(viewer(demo_ws, "admin", ADMIN_CODE), STUDY, item.item, req)
    assert (c.who, c.who_source, c.interaction_id, c.to_value) == ("admin", "signed-in", item.interaction_id, 6)
    assert [x.id for x in demo_ws.judge_corrections(SYSTEM, STUDY)] == [c.id]


def test_the_results_page_refuses_an_empty_reason_then_saves(demo_ws, judged):
    at = sign_in("admin", ADMIN_CODE)
    at.switch_page("views/admin_results.py").run()
    at.selectbox(key="results_study").set_value(STUDY).run()
    assert not at.exception, at.exception
    at.selectbox(key="fix_axis").set_value("AR")
    at.text_input(key="fix_to").input("1")
    at.button[0].click().run()  # the form's Save button, no reason
    assert any("needs a reason" in e.value for e in at.error) and run_corrections(judged) == []
    at.text_area(key="fix_reason").input("missed the patient's plan")
    at.button[0].click().run()
    assert not at.exception, at.exception
    assert any("Saved 1 correction" in s.value for s in at.success)
    [c] = run_corrections(judged)
    assert (c.who, c.axis, c.to_value, c.reason) == ("admin", "AR", 1, "missed the patient's plan")
    assert list(at.dataframe[-1].value["Who"]) == ["admin"]  # the corrections table
    assert list(at.dataframe[-1].value["Identity"]) == ["signed in to the annotation app"] and c.who_source == "signed-in"
    assert ADMIN_CODE.encode() not in (judged / "run.db").read_bytes()
