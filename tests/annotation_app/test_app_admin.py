"""Admin pages: tables refresh after each action, a code reset names whom and asks first,
assignment lets the admin choose annotators and never hands a role-player her own session,
and the Studies page renders without logging a traceback."""

from __future__ import annotations

import json

from appkit import ADMIN_CODE, DEMO_CODE, SYSTEM, sign_in, viewer


def _admin_page(page: str):
    at = sign_in("admin", ADMIN_CODE)
    at.switch_page(f"views/{page}.py").run()
    assert not at.exception, at.exception
    return at


def _names(at) -> list[str]:
    return list(at.dataframe[0].value["Name"])


def test_adding_a_person_shows_them_at_once_and_a_code_reset_asks_whom_and_to_confirm(demo_ws):
    at = _admin_page("admin_people")
    at.text_input(key="add_name").input("Dr Rivera")
    at.button[0].click().run()  # the form's Add button
    assert not at.exception
    assert "Dr Rivera" in _names(at)  # the table already shows her
    new_code = at.code[0].value
    assert demo_ws.sign_in("Dr Rivera", new_code) is not None

    assert at.selectbox(key="reset_who").value is None  # nobody is preselected
    assert at.button(key="reset_go").disabled
    at.selectbox(key="reset_who").set_value("demo").run()
    assert at.button(key="reset_go").disabled  # not before confirming
    at.checkbox(key="reset_sure").check().run()
    at.button(key="reset_go").click().run()
    assert not at.exception
    assert any("New code for demo" in s.value for s in at.success)
    assert demo_ws.sign_in("demo", DEMO_CODE) is None  # the old code stopped working
    assert demo_ws.sign_in("demo", at.code[0].value) is not None
    assert demo_ws.sign_in("Dr Rivera", new_code) is not None  # nobody else was touched
    assert at.selectbox(key="reset_who").value is None and not at.checkbox(key="reset_sure").value


def test_assign_with_chosen_annotators_refreshes_and_skips_the_role_player(demo_ws, capfd):
    demo_ws.add_annotator(SYSTEM, "bea", code="BEA-CODE-00001")
    demo_ws.add_annotator(SYSTEM, "cal", code="CAL-CODE-00001")
    # demo plays a patient; the finished session becomes an item of the rating study
    v = viewer(demo_ws, "demo", DEMO_CODE)
    sid = demo_ws.sessions(v, 2)[0].session_id
    demo_ws.start_session(v, sid)
    demo_ws.send_message(v, sid, "I cannot sleep.")
    demo_ws.finish_session(v, sid)
    assert demo_ws.add_roleplay_items(SYSTEM, 1, 2) == 1

    at = _admin_page("admin_studies")
    before = int(at.dataframe[0].value["Assignments"][0])
    at.multiselect(key="assign_who_Demo: rate transcripts").set_value(["demo", "bea"]).run()
    at.button(key="admin_assign").click().run()
    assert not at.exception
    assert int(at.dataframe[0].value["Assignments"][0]) == before + 1  # the table is fresh
    assert any("bea: 1" in s.value for s in at.success)
    assert len(demo_ws.queue(viewer(demo_ws, "bea", "BEA-CODE-00001"), 1)) == 1
    assert demo_ws.queue(viewer(demo_ws, "cal", "CAL-CODE-00001"), 1) == []  # not chosen
    assert len(demo_ws.queue(v, 1)) == 6  # never her own session

    rep = demo_ws.assign(SYSTEM, 1, annotators=["demo", "bea", "cal"], k=3)
    assert rep.short == 1 and rep.per_annotator == {"bea": 6, "cal": 7}  # her session is one short, reported
    assert len(demo_ws.queue(v, 1)) == 6
    assert "Traceback" not in capfd.readouterr().err  # the Studies page logged no traceback


def test_the_studies_table_shows_an_import_at_once(demo_ws, tmp_path):
    row = {"id": "x1", "run_id": "r", "profile_id": "p", "model": "m/x", "status": "complete",
           "member_attributes": {"name": "Ana", "age": 30},
           "messages": [{"role": "user", "content": "Hi."}, {"role": "assistant", "content": "Hello."}]}
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps(row) + "\n")
    at = _admin_page("admin_studies")
    assert int(at.dataframe[0].value["Items or profiles"][0]) == 6
    at.text_input(key="admin_path").input(str(path))
    at.button(key="admin_import").click().run()
    assert not at.exception
    assert any("1 items linked" in s.value for s in at.success)
    assert int(at.dataframe[0].value["Items or profiles"][0]) == 7
