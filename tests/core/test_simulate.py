"""The interaction loop with scripted fake models: turn order, role views, persistence."""

import asyncio

import pytest

from mindeval.errors import ModelCallError
from mindeval.llm import ModelSpec
from mindeval.llm.fake import script
from mindeval.simulate import Speaker, role_view, run_interaction
from mindeval.store import CallLog, Database, request_hash
from mindeval.store.runs import ensure_run, load_turns


@pytest.fixture
def log(tmp_db_url):
    db = Database(tmp_db_url)
    ensure_run(db, "r1", {}, "test")
    yield CallLog(db, "r1")
    db.close()


def add_interaction(log, iid):
    from mindeval.store.tables import InteractionRow

    with log.db.write() as s:
        if s.get(InteractionRow, iid) is None:
            s.add(InteractionRow(id=iid, run_id=log.run_id, profile_id="p", profile_json={}, clinician_model="x"))


def play(log, turns, patient="fake/echo", clinician="fake/echo", iid="i1"):
    add_interaction(log, iid)
    return asyncio.run(run_interaction(
        log, iid, patient=Speaker(spec=ModelSpec(model=patient), prompt="PATIENT SYSTEM"),
        clinician=Speaker(spec=ModelSpec(model=clinician), prompt="CLINICIAN SYSTEM"), turns=turns,
    ))


def test_default_turn_structure(log):
    turns = play(log, 20)
    assert turns[0].content == "Hello." and turns[0].role == "patient" and turns[0].author == "scripted"
    after = turns[1:]
    assert len(after) == 20
    assert sum(t.role == "clinician" for t in after) == 10
    assert sum(t.role == "patient" for t in after) == 10
    assert [t.role for t in after[:4]] == ["clinician", "patient", "clinician", "patient"]
    assert [t.index for t in turns] == list(range(21))


def test_each_side_sees_its_own_view(log):
    c = script("clin", ["C1", "C2"])
    p = script("pat", ["P1"])
    play(log, 3, patient=p, clinician=c)
    from sqlalchemy import select

    from mindeval.store.tables import CallRow

    with log.db.read() as s:
        calls = s.scalars(select(CallRow).order_by(CallRow.id)).all()
    clin2 = [
        {"role": "system", "content": "CLINICIAN SYSTEM"},
        {"role": "user", "content": "Hello."},
        {"role": "assistant", "content": "C1"},
        {"role": "user", "content": "P1"},
    ]
    pat1 = [
        {"role": "system", "content": "PATIENT SYSTEM"},
        {"role": "assistant", "content": "Hello."},
        {"role": "user", "content": "C1"},
    ]
    # The stored hash is of exactly these messages; the stored request references the turns.
    for row, msgs, spec in ((calls[2], clin2, c), (calls[1], pat1, p)):
        seed = row.request_json["seed"]
        assert row.request_hash == request_hash(ModelSpec(model=spec), msgs, seed=seed, tag=row.tag)
        assert "messages" not in row.request_json
        assert row.request_json["ref"]["interaction"] == "i1" and row.request_json["ref"]["turns"] == len(msgs) - 1


def test_role_view_helper():
    from mindeval.records import Turn

    ts = [Turn(index=0, role="patient", content="a"), Turn(index=1, role="clinician", content="b")]
    assert [m["role"] for m in role_view("s", ts, "patient")] == ["system", "assistant", "user"]
    assert [m["role"] for m in role_view("s", ts, "clinician")] == ["system", "user", "assistant"]


def test_turns_committed_before_failure_and_resume(log):
    c = script("clin-fail", ["C1"])  # second clinician call will fail: script exhausted
    with pytest.raises(ModelCallError):
        play(log, 4, clinician=c, iid="i2")
    kept = load_turns(log.db, "i2")
    assert [t.content for t in kept][:2] == ["Hello.", "C1"] and len(kept) == 3
    made_before = log.counters.made
    c2 = script("clin-fail", ["C2"])
    turns = asyncio.run(run_interaction(
        log, "i2", patient=Speaker(spec=ModelSpec(model="fake/echo"), prompt="PATIENT SYSTEM"),
        clinician=Speaker(spec=ModelSpec(model=c2), prompt="CLINICIAN SYSTEM"), turns=4,
    ))
    assert [t.content for t in turns[:2]] == ["Hello.", "C1"] and turns[3].content == "C2"
    assert log.counters.made == made_before + 2


def test_identical_request_is_reused(log):
    play(log, 4, iid="i3")
    made = log.counters.made
    # Deleting the turns (but not the calls) and replaying costs no new call.
    from sqlalchemy import delete

    from mindeval.store.tables import TurnRow

    with log.db.write() as s:
        s.execute(delete(TurnRow).where(TurnRow.interaction_id == "i3"))
    play(log, 4, iid="i3")
    assert log.counters.made == made and log.counters.reused == 4


def test_an_empty_clinician_is_a_silent_turn_the_patient_sees_as_no_reply(log):
    turns = play(log, 2, clinician="fake/empty", iid="i4")
    assert [(t.role, t.content) for t in turns[:2]] == [("patient", "Hello."), ("clinician", "")]
    assert turns[1].model == "fake/empty" and turns[1].call_id is None
    assert "You said: [no reply]" in turns[2].content  # the patient (fake/echo) was shown the marker
    assert [t.content for t in load_turns(log.db, "i4")] == [t.content for t in turns]  # stored as it went


def test_an_empty_patient_fails_the_interaction(log):
    with pytest.raises(ModelCallError, match="empty"):
        play(log, 2, patient="fake/empty", iid="i4b")
