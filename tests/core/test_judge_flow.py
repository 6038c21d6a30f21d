"""Judge retries with feedback, recorded failures, no repeated calls on re-run."""

import asyncio

import pytest

from mindeval.judge import build_judge_messages
from mindeval.judge import judge_transcript as _judge
from mindeval.llm import ModelSpec
from mindeval.llm.fake import script
from mindeval.prompts import load_template
from mindeval.records import load_profiles
from mindeval.store import CallLog, Database
from mindeval.store.runs import ensure_run

MSGS = [{"role": "user", "content": "Hello."}, {"role": "assistant", "content": "Hi, how are you?"}]
GOOD = '{"CAC": 3, "EPC": 5, "AR": 2, "TRA": 4, "ASCQ": 1}'


def judge_transcript(*args, **kwargs):
    return asyncio.run(_judge(*args, **kwargs))


@pytest.fixture
def setup(tmp_db_url, demo_profiles_path):
    db = Database(tmp_db_url)
    ensure_run(db, "r", {}, "test")
    yield CallLog(db, "r"), load_template("judge/default"), load_profiles(demo_profiles_path)[0]
    db.close()


def test_judge_prompt_has_rubric_intake_and_transcript(setup):
    _, tpl, profile = setup
    text = build_judge_messages(tpl, profile, MSGS)[0]["content"]
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
    m = script("j3", ['{"CAC": 3}', GOOD])
    judge_transcript(log, ModelSpec(model=m), tpl, profile, MSGS, "i3", retries=2)
    from sqlalchemy import select

    from mindeval.store.tables import CallRow

    with log.db.read() as s:
        last = s.scalars(select(CallRow).where(CallRow.tag == "judge:i3:0:1")).one()
    msgs = last.request_json["messages"]
    assert msgs[-2] == {"role": "assistant", "content": '{"CAC": 3}'}
    assert "missing score" in msgs[-1]["content"]


def test_provider_error_counts_as_attempt(setup):
    log, tpl, profile = setup
    j = judge_transcript(log, ModelSpec(model="fake/error"), tpl, profile, MSGS, "i4", retries=2)
    assert j.parse_status == "failed" and "model call failed" in j.error
