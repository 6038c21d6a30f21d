"""A retry after an empty reply is a new draw: another seed, sent and recorded in the call log."""

from __future__ import annotations

import asyncio

from mindeval.llm.gateway import ModelSpec
from mindeval.store import Database, sqlite_url
from mindeval.store.calls import CallLog
from mindeval.store.runs import ensure_run
from mindeval.store.tables import CallRow
from tests.support.fault_server import FaultServer

MSGS = [{"role": "system", "content": "You are a clinician."}, {"role": "user", "content": "hello"}]


def test_retry_after_empty_reply_sends_and_records_another_seed(server: FaultServer, tmp_path):
    server.script(["empty", "empty", {"content": "I am here with you."}])
    db = Database(sqlite_url(tmp_path / "run.db"))
    ensure_run(db, "r1", {}, "benchmark")
    log = CallLog(db, "r1")
    spec = ModelSpec(model="openai/test-model", api_base=server.url)
    call = asyncio.run(log.call("clinician", spec, MSGS, seed=7))
    assert call.completion.text == "I am here with you." and call.completion.attempts == 3
    sent = [r["body"].get("seed") for r in server.requests]
    assert sent[0] == 7 and len(set(sent)) == 3  # every attempt its own draw
    with db.read() as s:
        row = s.query(CallRow).one()
    assert row.request_json["seed"] == 7  # the request's identity (resume finds it by this)
    assert row.request_json["seed_used"] == sent[-1] == call.completion.seed
    # The same request again is answered from the store, not re-drawn.
    again = asyncio.run(log.call("clinician", spec, MSGS, seed=7))
    assert again.reused and again.completion.text == call.completion.text and len(server.requests) == 3
    db.close()
