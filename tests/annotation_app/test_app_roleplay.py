"""AppTest: role-play mode — start, chat, resume, model errors with retry, timer, finish."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from appkit import DEMO_CODE, SYSTEM, all_text, component, component_send, sign_in, viewer
from sqlalchemy import delete, select, update

from annotation_app.services import Conflict
from annotation_app.store import ItemRow, RoleplaySessionRow, StudyRow, utcnow
from mindeval.llm import fake
from mindeval.store.tables import CallRow, TurnRow


def open_roleplay(at):
    at.button(key="open_2").click().run()
    assert not at.exception, at.exception
    return at


def test_chat_as_the_patient_is_committed_and_resumes_in_a_new_session(demo_ws):
    at = open_roleplay(sign_in("demo", DEMO_CODE))
    sid = at.session_state["session_id"]
    assert "You are playing" in all_text(at)
    at.button(key=f"start_{sid}").click().run()
    at.chat_input(key=f"chat_{sid}").set_value("I have not been sleeping much.").run()
    assert not at.exception, at.exception
    text = all_text(at)
    assert "I have not been sleeping much" in text and "Reply 1" in text

    with demo_ws.db.read() as s:
        turns = s.scalars(select(TurnRow).order_by(TurnRow.idx)).all()
    assert [(t.role, t.author) for t in turns] == [("patient", "human"), ("clinician", "model")]
    assert turns[1].call_id is not None

    again = open_roleplay(sign_in("demo", DEMO_CODE))  # refresh / closed tab / restart
    assert again.session_state["session_id"] == sid
    assert "Reply 1" in all_text(again)
    again.chat_input(key=f"chat_{sid}").set_value("Work is a lot.").run()
    v = viewer(demo_ws, "demo", DEMO_CODE)
    assert [m.role for m in demo_ws.roleplay(v, sid).messages] == ["patient", "clinician"] * 2


def test_the_clinician_sees_the_default_prompt_with_intake_only(demo_ws):
    v = viewer(demo_ws, "demo", DEMO_CODE)
    sid = demo_ws.sessions(v, 2)[0].session_id
    demo_ws.start_session(v, sid)
    demo_ws.send_message(v, sid, "Hi.")
    with demo_ws.db.read() as s:
        call = s.scalars(select(CallRow)).one()
    system = call.request_json["messages"][0]
    assert system["role"] == "system"
    backstory = demo_ws.roleplay(v, sid).backstory
    assert backstory and backstory[:60] not in system["content"]
    assert call.request_json["messages"][1:] == [{"role": "user", "content": "Hi."}]


def test_a_model_error_is_shown_plainly_and_the_turn_can_be_retried(demo_ws):
    with demo_ws.db.write() as s:
        s.execute(update(StudyRow).where(StudyRow.id == 2).values(clinician_model="fake/error"))
    at = open_roleplay(sign_in("demo", DEMO_CODE))
    sid = at.session_state["session_id"]
    at.button(key=f"start_{sid}").click().run()
    at.chat_input(key=f"chat_{sid}").set_value("Hello there.").run()
    assert not at.exception
    assert any("did not answer" in e.value for e in at.error)
    assert at.button(key=f"retry_{sid}")  # the retry button is offered
    v = viewer(demo_ws, "demo", DEMO_CODE)
    assert [m.role for m in demo_ws.roleplay(v, sid).messages] == ["patient"]  # the message is kept

    with demo_ws.db.write() as s:
        s.execute(update(StudyRow).where(StudyRow.id == 2).values(clinician_model="fake/echo"))
    at.button(key=f"retry_{sid}").click().run()
    assert [m.role for m in demo_ws.roleplay(v, sid).messages] == ["patient", "clinician"]
    assert "Reply 1" in all_text(at)


def test_a_stored_reply_is_never_requested_twice(demo_ws):
    v = viewer(demo_ws, "demo", DEMO_CODE)
    sid = demo_ws.sessions(v, 2)[0].session_id
    demo_ws.start_session(v, sid)
    before = sum(fake.CALLS.values())
    demo_ws.send_message(v, sid, "One.")
    assert sum(fake.CALLS.values()) == before + 1
    reply = demo_ws.roleplay(v, sid).messages[-1].content
    # A crash after the call was logged but before the turn was committed:
    with demo_ws.db.write() as s:
        s.execute(delete(TurnRow).where(TurnRow.role == "clinician"))
    assert demo_ws.roleplay(v, sid).awaiting_reply
    demo_ws.retry_reply(v, sid)
    assert sum(fake.CALLS.values()) == before + 1
    assert demo_ws.roleplay(v, sid).messages[-1].content == reply


def test_the_timer_ends_the_session_for_new_messages(demo_ws):
    v = viewer(demo_ws, "demo", DEMO_CODE)
    sid = demo_ws.sessions(v, 2)[0].session_id
    demo_ws.start_session(v, sid)
    view = demo_ws.roleplay(v, sid)
    assert view.minutes == 25 and 24 * 60 < view.seconds_left <= 25 * 60
    with demo_ws.db.write() as s:
        s.execute(update(RoleplaySessionRow).where(RoleplaySessionRow.id == sid)
                  .values(deadline_at=utcnow() - timedelta(seconds=1)))
    at = open_roleplay(sign_in("demo", DEMO_CODE))
    assert any("Time is up" in w.value for w in at.warning)
    _, clock = component(at, "mindeval_clock")
    assert clock["left"] == 0 and clock["up"] is True  # the clock shows 0:00 and asks for no rerun
    assert at.chat_input(key=f"chat_{sid}").proto.disabled  # the page shows the chat box disabled
    with pytest.raises(Conflict, match="time for this session is up"):
        demo_ws.send_message(v, sid, "late")


def test_the_clock_at_zero_reruns_the_page_which_disables_the_chat_box(demo_ws):
    """No polling: the page learns that the time is up from the clock's trigger at zero."""
    at = open_roleplay(sign_in("demo", DEMO_CODE))
    sid = at.session_state["session_id"]
    at.button(key=f"start_{sid}").click().run()
    _, clock = component(at, "mindeval_clock")
    assert 24 * 60 < clock["left"] <= 25 * 60 and clock["up"] is False
    assert not at.chat_input(key=f"chat_{sid}").proto.disabled
    with demo_ws.db.write() as s:  # the deadline passes while the page is open
        s.execute(update(RoleplaySessionRow).where(RoleplaySessionRow.id == sid)
                  .values(deadline_at=utcnow() - timedelta(seconds=1)))
    component_send(at, "mindeval_clock", "zero", sid, trigger=True)
    assert not at.exception, at.exception
    _, clock = component(at, "mindeval_clock")
    assert clock["left"] == 0 and clock["up"] is True
    assert at.chat_input(key=f"chat_{sid}").proto.disabled
    assert any("Time is up" in w.value for w in at.warning)


def test_a_message_sent_after_the_deadline_is_refused_but_kept_on_the_page(demo_ws):
    at = open_roleplay(sign_in("demo", DEMO_CODE))
    sid = at.session_state["session_id"]
    at.button(key=f"start_{sid}").click().run()
    with demo_ws.db.write() as s:  # the clock runs out while the page is open
        s.execute(update(RoleplaySessionRow).where(RoleplaySessionRow.id == sid)
                  .values(deadline_at=utcnow() - timedelta(seconds=1)))
    at.chat_input(key=f"chat_{sid}").set_value("One last thing I wanted to say.").run()
    assert not at.exception, at.exception
    assert any("time was up" in w.value and "One last thing I wanted to say" in w.value for w in at.warning)
    at.run()  # still shown after the next rerun
    assert any("One last thing I wanted to say" in w.value for w in at.warning)
    v = viewer(demo_ws, "demo", DEMO_CODE)
    assert demo_ws.roleplay(v, sid).messages == []  # not sent to the clinician


def test_a_finished_session_becomes_a_rateable_interaction(demo_ws):
    at = open_roleplay(sign_in("demo", DEMO_CODE))
    sid = at.session_state["session_id"]
    at.button(key=f"start_{sid}").click().run()
    at.button(key=f"finish_{sid}").click().run()
    assert any("at least one message" in w.value for w in at.warning)
    at.chat_input(key=f"chat_{sid}").set_value("I feel stuck.").run()
    at.button(key=f"finish_{sid}").click().run()
    assert any("Session finished" in s.value for s in at.success)
    assert at.chat_input == [] or not any(c.key == f"chat_{sid}" for c in at.chat_input)

    with demo_ws.db.read() as s:
        item = s.scalars(select(ItemRow).where(ItemRow.source == "roleplay")).one()
    assert item.patient_kind == "human"
    assert [m["role"] for m in item.messages] == ["user", "assistant"]
    assert demo_ws.add_roleplay_items(SYSTEM, 1, 2) == 1
    assert demo_ws.add_roleplay_items(SYSTEM, 1, 2) == 0
    demo_ws.add_annotator(SYSTEM, "rater", code="RATER-CODE-0001")
    assert demo_ws.assign(SYSTEM, 1).per_annotator == {"rater": 1}  # not to the person who played it
    v = viewer(demo_ws, "rater", "RATER-CODE-0001")
    assert len(demo_ws.queue(v, 1)) == 1


def test_a_message_sent_while_a_reply_is_due_waits_in_the_queue_and_is_sent_after_it(demo_ws):
    v = viewer(demo_ws, "demo", DEMO_CODE)
    sid = demo_ws.sessions(v, 2)[0].session_id
    demo_ws.start_session(v, sid)
    assert demo_ws.send_message(v, sid, "One.") is False
    with demo_ws.db.write() as s:  # the reply is due again (as after a crash before its turn was stored)
        s.execute(delete(TurnRow).where(TurnRow.role == "clinician"))
    assert demo_ws.send_message(v, sid, "Two.") is True  # stored, not refused
    assert demo_ws.send_message(v, sid, "Three.") is True
    view = demo_ws.roleplay(v, sid)
    assert view.queued == ["Two.", "Three."] and view.awaiting_reply and not view.replying
    with pytest.raises(Conflict, match="still waiting"):
        demo_ws.finish_session(v, sid)

    at = open_roleplay(sign_in("demo", DEMO_CODE))  # the page shows them as waiting, with the retry
    assert "2 messages saved, waiting" in all_text(at)
    at.button(key=f"retry_{sid}").click().run()
    assert not at.exception, at.exception
    deadline = time.monotonic() + 60  # the page got the first reply; the queue is answered behind it
    while (view := demo_ws.roleplay(v, sid)).replying or view.queued:
        assert time.monotonic() < deadline, view
        time.sleep(0.05)
    assert [(m.role, m.content[:6]) for m in view.messages] == [
        ("patient", "One."), ("clinician", "Reply "), ("patient", "Two."), ("clinician", "Reply "),
        ("patient", "Three."), ("clinician", "Reply ")]
    assert view.queued == [] and not view.awaiting_reply and not view.replying
    assert "saved, waiting" not in all_text(at.run())
    demo_ws.finish_session(v, sid)


def test_the_embedded_clinician_is_not_cut_off_by_a_network_timeout(demo_ws):
    from annotation_app.roleplay import clinician_spec

    with demo_ws.db.read() as s:
        study = s.get(StudyRow, 2)
    study.clinician_model = "local/smollm2"
    spec = clinician_spec(study)
    # in-process: the gateway cuts no such call by a timeout (tests/llm/test_inprocess_timeout.py),
    # so a slow machine makes the reply slow, never a second generation queued behind the first
    assert spec.entry.route(spec.api_base) == "inprocess" and spec.extra == {"max_sentences": 4}
    study.clinician_model = "openai/gpt-4o-mini"
    spec = clinician_spec(study)
    assert spec.entry.route(spec.api_base) != "inprocess" and not spec.extra  # the usual timeout applies


def test_a_reply_streamed_so_far_is_in_the_view_until_it_is_stored(demo_ws, monkeypatch):
    """A page that reruns while the reply streams (the patient sent again) still shows it."""
    import threading

    from annotation_app import roleplay

    v = viewer(demo_ws, "demo", DEMO_CODE)
    sid = demo_ws.sessions(v, 2)[0].session_id
    demo_ws.start_session(v, sid)
    streamed, gate = threading.Event(), threading.Event()
    real = roleplay._answer

    def slow_answer(db, annotator_id, session_id, on_text):
        if on_text is None:  # the queued message, answered in the background
            return real(db, annotator_id, session_id, None)
        on_text("I hear ")
        on_text("you.")
        streamed.set()
        assert gate.wait(30)
        real(db, annotator_id, session_id, None)

    monkeypatch.setattr(roleplay, "_answer", slow_answer)
    worker = threading.Thread(target=demo_ws.send_message, args=(v, sid, "I feel low.", lambda _piece: None))
    worker.start()
    assert streamed.wait(30)
    assert demo_ws.send_message(v, sid, "And tired.") is True  # queued meanwhile
    rp = demo_ws.roleplay(v, sid)
    assert rp.replying and rp.partial == "I hear you."
    gate.set()
    worker.join(30)
    deadline = time.monotonic() + 60
    while (rp := demo_ws.roleplay(v, sid)).replying:  # the queued message is answered in the background
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert rp.partial == "" and [m.role for m in rp.messages] == ["patient", "clinician", "patient", "clinician"]
