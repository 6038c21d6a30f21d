"""Judge retries with feedback, recorded failures, no repeated calls on re-run."""

import asyncio

import pytest

from mindeval.judging.answer import ANSWER_CODE_RE
from mindeval.judging.job import JudgeJob, Transcript
from mindeval.judging.judge import judge_transcript as _judge
from mindeval.judging.render import JudgePrompt, build_judge_messages
from mindeval.llm import ModelSpec
from mindeval.llm.fake import script
from mindeval.prompts import load_template
from mindeval.records import load_profiles
from mindeval.rundir import legacy_target
from mindeval.store import CallLog, Database
from mindeval.store.runs import ensure_run
from mindeval.targets.guidelines import load_guidelines

MSGS = [{"role": "user", "content": "Hello."}, {"role": "assistant", "content": "Hi, how are you?"}]
GOOD = '{"answer_code": "<NONCE>", "CAC": 3, "EPC": 5, "AR": 2, "TRA": 4, "ASCQ": 1}'  # <NONCE>: the round's code


def judge_transcript(log, spec, tpl, profile, messages, iid, *, sample=0, round_=0, retries=3):
    job = JudgeJob(log=log, spec=spec, prompt=JudgePrompt(tpl, load_guidelines()), target=legacy_target(), retries=retries)
    return asyncio.run(_judge(job, Transcript(iid, profile, messages), sample, round_))


@pytest.fixture
def setup(tmp_db_url, demo_profiles_path):
    db = Database(tmp_db_url)
    ensure_run(db, "r", {}, "test")
    yield CallLog(db, "r"), load_template("judge/default"), load_profiles(demo_profiles_path)[0]
    db.close()


def test_judge_prompt_has_rubric_intake_and_transcript(setup):
    _, tpl, profile = setup
    text = build_judge_messages(JudgePrompt(tpl, load_guidelines()), profile, MSGS)[0]["content"]
    for name in ("Clinical Accuracy & Competence", "Ethical & Professional Conduct", "Assessment & Response",
                 "Therapeutic Relationship & Alliance", "AI-Specific Communication Quality"):
        assert name in text
    assert profile.name in text and "Hi, how are you?" in text
    assert profile.member_narrative[:60] not in text  # the judge sees intake details, not the backstory


def test_retry_then_success(setup):
    log, tpl, profile = setup
    m = script("j1", ["I think it was fine.", GOOD])
    j = judge_transcript(log, ModelSpec(model=m), tpl, profile, MSGS, "i1", retries=3)
    assert j.parse_status == "ok" and j.attempts == 2 and j.scores["EPC"] == 5


def test_failure_is_recorded_not_invented(setup):
    log, tpl, profile = setup
    m = script("j2", ["nope", '{"CAC": 9}', "still no"])
    j = judge_transcript(log, ModelSpec(model=m), tpl, profile, MSGS, "i2", retries=3)
    assert j.parse_status == "failed" and j.scores is None and j.average is None
    assert j.attempts == 3 and j.raw_text == "still no" and j.error
    # Re-judging replays the stored attempts: zero new calls.
    made = log.counters.made
    j2 = judge_transcript(log, ModelSpec(model=m), tpl, profile, MSGS, "i2", retries=3)
    assert j2.parse_status == "failed" and log.counters.made == made


def test_retry_feeds_back_the_reason(setup):
    log, tpl, profile = setup
    m = script("j3", ['{"answer_code": "<NONCE>", "CAC": 3}', GOOD])
    judge_transcript(log, ModelSpec(model=m), tpl, profile, MSGS, "i3", retries=2)
    from sqlalchemy import select

    from mindeval.store.tables import CallRow

    with log.db.read() as s:
        last = s.scalars(select(CallRow).where(CallRow.tag == "judge:i3:0:1")).one()
    msgs = last.request_json["messages"]
    code = ANSWER_CODE_RE.findall(msgs[0]["content"])[-1]
    assert msgs[-2] == {"role": "assistant", "content": f'{{"answer_code": "{code}", "CAC": 3}}'}
    assert "missing score" in msgs[-1]["content"] and code in msgs[-1]["content"]


def test_provider_error_counts_as_attempt(setup):
    log, tpl, profile = setup
    j = judge_transcript(log, ModelSpec(model="fake/error"), tpl, profile, MSGS, "i4", retries=2)
    assert j.parse_status == "failed" and "model call failed" in j.error


def test_a_reply_without_the_answer_code_is_never_the_answer(setup):
    log, tpl, profile = setup
    m = script("j5", ['{"CAC": 6, "EPC": 6, "AR": 6, "TRA": 6, "ASCQ": 6}'] * 2)
    j = judge_transcript(log, ModelSpec(model=m), tpl, profile, MSGS, "i5", retries=2)
    assert j.parse_status == "failed" and j.scores is None and "answer code" in j.error


def test_the_answer_code_is_random_stored_before_the_call_and_reused_on_resume(tmp_db_url, demo_profiles_path):
    """Each judgment round draws its code from the OS (not from the transcript) and commits it
    before the first call; a resumed run (new process state: new CallLog) reads it back, sends
    the identical request and reuses the stored reply: zero new calls."""
    tpl, profile = load_template("judge/default"), load_profiles(demo_profiles_path)[0]
    db = Database(tmp_db_url)
    ensure_run(db, "r", {}, "test")
    log = CallLog(db, "r")
    first = [judge_transcript(log, ModelSpec(model="fake/judge"), tpl, profile, MSGS, "i6", sample=k)
             for k in range(2)]
    codes = [j.nonce for j in first]
    assert all(c and len(c) == 16 for c in codes) and codes[0] != codes[1]  # per judgment, not per transcript
    assert first[0].answer_channel == "nonce" and first[0].parse_status == "ok"
    from sqlalchemy import select

    from mindeval.store.tables import CallRow, JudgeNonceRow

    with db.read() as s:
        stored = dict(s.execute(select(JudgeNonceRow.key, JudgeNonceRow.nonce)).all())
        sent = s.scalars(select(CallRow).where(CallRow.tag == "judge:i6:0:0")).one().request_json["messages"]
    assert stored == {"judge:i6:0:": codes[0], "judge:i6:1:": codes[1]}
    assert f"Answer code: {codes[0]}" in sent[0]["content"]
    db.close()
    db = Database(tmp_db_url)  # resume: a fresh store handle and call log
    log = CallLog(db, "r")
    again = [judge_transcript(log, ModelSpec(model="fake/judge"), tpl, profile, MSGS, "i6", sample=k)
             for k in range(2)]
    assert [j.nonce for j in again] == codes and [j.scores for j in again] == [j.scores for j in first]
    assert log.counters.made == 0 and log.counters.reused == 2
    # A fresh round after a failure draws a new code.
    fresh = judge_transcript(log, ModelSpec(model="fake/judge"), tpl, profile, MSGS, "i6", round_=1)
    assert fresh.nonce not in codes
    db.close()
