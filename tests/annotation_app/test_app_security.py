"""Security: no path from annotator A to B's ratings; inert transcripts; codes never in plain text."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from appkit import ADMIN_CODE, DEMO_CODE, all_text, component, form_send, new_app, sign_in, viewer

from annotation_app.services import SYSTEM, AccessDenied, SignedOut, Workspace
from mindeval.cli import main as cli_main

SCRIPT = '<script>window.__pwned = 1</script><img src=x onerror="alert(1)"> **bold** [click](javascript:alert(1))'
A_CODE, B_CODE = "ALICE-CODE-1111", "BOBBY-CODE-2222"


def write_run(tmp: Path, content: str = "I feel tense.") -> Path:
    run = tmp / "run"
    run.mkdir()
    attrs = {"name": "Robin", "age": 40, "sex": "Female", "profession": "Nurse"}
    rows = [{"id": f"i{n}", "run_id": "r1", "profile_id": "robin", "model": "secretvendor/clinician-xyz",
             "patient_model": "local/smollm2", "member_attributes": attrs, "status": "complete",
             "messages": [{"role": "user", "content": content if n == 0 else "Hello."},
                          {"role": "assistant", "content": SCRIPT if n == 0 else "Hi."}]} for n in range(2)]
    (run / "interactions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    j = {"interaction_id": "i0", "profile_id": "robin", "model": "secretvendor/clinician-xyz",
         "judge_model": "judgevendor/j1", "sample": 0,
         "scores": {"CAC": 5, "EPC": 5, "AR": 5, "TRA": 5, "ASCQ": 5}, "average": 5.0, "parse_status": "ok"}
    (run / "judgments.jsonl").write_text(json.dumps(j) + "\n")
    return run


@pytest.fixture
def two(tmp_path, tmp_db_url, monkeypatch):
    """A rating study where alice and bob both rate the same two transcripts; bob has submitted."""
    monkeypatch.setenv("MINDEVAL_APP_DB", tmp_db_url)
    ws = Workspace(tmp_db_url)
    ws.add_annotator(SYSTEM, "admin", admin=True, code=ADMIN_CODE)
    ws.add_annotator(SYSTEM, "alice", code=A_CODE)
    ws.add_annotator(SYSTEM, "bob", code=B_CODE)
    ws.create_study(SYSTEM, "S", "rating", k=2)
    ws.import_path(SYSTEM, "S", write_run(tmp_path))
    ws.assign(SYSTEM, "S")
    b = viewer(ws, "bob", B_CODE)
    for entry in ws.queue(b, 1):
        for sub in ws.subaxes():
            ws.save_value(b, entry.assignment_id, sub.id, 6)
        ws.save_text(b, entry.assignment_id, justification="BOB-PRIVATE-NOTE", safety_note="BOB-SAFETY")
        ws.submit(b, entry.assignment_id)
    yield ws
    ws.close()


def test_services_refuse_other_peoples_assignments(two):
    a, b = viewer(two, "alice", A_CODE), viewer(two, "bob", B_CODE)
    theirs = two.queue(b, 1)[0].assignment_id
    for call in (lambda: two.item(a, theirs), lambda: two.save_value(a, theirs, "coherence_style", 1),
                 lambda: two.save_text(a, theirs, justification="x"), lambda: two.submit(a, theirs),
                 lambda: two.revise(a, theirs)):
        with pytest.raises(AccessDenied):
            call()
    with pytest.raises(AccessDenied):
        two.results(a, 1)
    with pytest.raises(AccessDenied):
        two.export_text(a, 1, "csv")


def test_session_state_and_query_params_do_not_reach_b(two):
    b = viewer(two, "bob", B_CODE)
    theirs = two.queue(b, 1)[0].assignment_id
    at = sign_in("alice", A_CODE)
    at.button(key="open_1").click().run()
    at.session_state["assignment_id"] = theirs  # tampered session state
    at.query_params["assignment"] = str(theirs)
    at.run()
    assert not at.exception
    assert at.session_state["assignment_id"] != theirs
    assert "BOB-PRIVATE-NOTE" not in all_text(at)

    forged = new_app()
    forged.session_state["token"] = "not-a-real-token"
    forged.query_params["s"] = "also-not-real"
    forged.run()
    assert [t.value for t in forged.title] == ["MindEval annotation"]  # back to sign-in


def test_annotators_are_blind_to_model_judge_and_other_raters(two):
    at = sign_in("alice", A_CODE)
    pages = [all_text(at)]
    at.button(key="open_1").click().run()
    for _ in range(2):
        pages.append(all_text(at))
        if at.button(key="next").disabled:
            break
        at.button(key="next").click().run()
    at.switch_page("views/roleplay.py").run()
    pages.append(all_text(at))
    text = "\n".join(pages)
    for secret in ("secretvendor", "clinician-xyz", "judgevendor", "BOB-PRIVATE-NOTE", "BOB-SAFETY", "bob", "r1:i0"):
        assert secret not in text, secret
    admin = two.export_text(SYSTEM, 1, "csv")
    assert "secretvendor/clinician-xyz" in admin and "BOB-PRIVATE-NOTE" in admin  # the admin sees everything


def test_html_and_script_in_a_transcript_render_as_inert_text(two):
    at = sign_in("alice", A_CODE)
    at.button(key="open_1").click().run()
    for _ in range(2):  # the rating page's pane puts every text on screen through textContent
        shown = [t["text"] for t in component(at, "mindeval_transcript")[1]["turns"] if "pwned" in t["text"]]
        if shown:
            break
        at.button(key="next").click().run()
    assert shown, "the transcript with markup was not displayed"
    assert any("<script>" in t for t in shown)  # sent as data, never as markup
    assert not [m.value for m in at.markdown if "pwned" in m.value]
    assert "allow_html: true" not in all_text(at)


def test_access_codes_are_never_stored_or_logged_in_plain_text(tmp_path, caplog, capsys):
    db_file = tmp_path / "codes.db"
    url = f"sqlite:///{db_file}"
    caplog.set_level(logging.DEBUG)
    code = "PLAIN-TEXT-CODE-9"
    ws = Workspace(url)
    ws.add_annotator(SYSTEM, "carol", code=code)
    assert ws.sign_in("carol", code) is not None
    assert ws.sign_in("carol", "wrong-code-000") is None
    assert cli_main(["app", "admin", "--db", url, "add-annotator", "dave"]) == 0
    printed = capsys.readouterr().out
    dave_code = printed.split("access code for dave: ")[1].split()[0]
    ws.close()
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("codes.db"))
    for c in (code, dave_code):
        for form in (c, c.replace("-", ""), c.upper().replace("-", "")):
            assert form.encode() not in raw
            assert form not in caplog.text
    assert raw.count(b"scrypt$") >= 2


def test_a_signed_out_tab_cannot_write_even_once(two):
    at = sign_in("alice", A_CODE)
    at.button(key="open_1").click().run()
    aid = at.session_state["assignment_id"]
    two.sign_out(at.session_state["token"])  # signed out in another tab
    form_send(at, {"coherence_style": "5"})  # the stale tab's form callback runs before the page's own check
    assert not at.exception
    a = viewer(two, "alice", A_CODE)
    assert two.item(a, aid).values == {}  # nothing written
    assert [t.value for t in at.title] == ["MindEval annotation"]  # back to the sign-in page

    stale = viewer(two, "alice", A_CODE)
    two.reset_code(SYSTEM, "alice", A_CODE)  # a new code ends every session of that person
    with pytest.raises(SignedOut):
        two.save_value(stale, aid, "coherence_style", 4)
    with pytest.raises(SignedOut):
        two.save_text(stale, aid, justification="late")
    assert two.item(viewer(two, "alice", A_CODE), aid).values == {}


def test_role_play_errors_do_not_name_the_model(demo_ws, caplog):
    from sqlalchemy import update

    from annotation_app.store import StudyRow

    with demo_ws.db.write() as s:
        s.execute(update(StudyRow).where(StudyRow.id == 2).values(clinician_model="fake/error"))
    caplog.set_level(logging.WARNING)
    at = sign_in("demo", DEMO_CODE)
    at.button(key="open_2").click().run()
    sid = at.session_state["session_id"]
    at.button(key=f"start_{sid}").click().run()
    at.chat_input(key=f"chat_{sid}").set_value("Hello there.").run()
    assert not at.exception
    assert [e.value for e in at.error] == ["The clinician did not answer; try again with "
                                           "“Get the clinician's reply”. Your message is saved."]
    shown = all_text(at)
    assert "fake/error" not in shown and "simulated provider failure" not in shown
    assert "fake/error: simulated provider failure" in caplog.text  # the admin's server log has it
