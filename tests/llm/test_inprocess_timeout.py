"""An in-process model (the embedded one, fake) is not cut by the per-call timeout: its thread
cannot be stopped, so a cut call kept the model busy while each retry queued behind it to redo the
same work (beside two CPU hogs the embedded model failed after 5 attempts in 605 s)."""

import time
from types import SimpleNamespace

import pytest

from mindeval.llm import ModelSpec, complete, fake
from mindeval.llm.fake import CALLS
from mindeval.llm.retry import RetryPolicy

SLOW_S = 5.6  # longer than the 0.1 s timeout plus the 5 s the gateway allowed an in-process call


def test_a_slow_in_process_reply_is_awaited_once_not_cut_and_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fake, "time", SimpleNamespace(sleep=lambda _s: time.sleep(SLOW_S)))
    before = sum(CALLS.values())
    started = time.monotonic()
    c = complete(ModelSpec(model="fake/slow", timeout_s=0.1), [{"role": "user", "content": "hi"}],
                 role="patient", policy=RetryPolicy(max_retries=1, base_delay_s=0))
    assert c.text.startswith("Reply 1") and c.attempts == 1
    assert sum(CALLS.values()) - before == 1
    assert time.monotonic() - started >= SLOW_S
