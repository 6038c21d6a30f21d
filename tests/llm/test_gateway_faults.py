"""The gateway against a real HTTP server on 127.0.0.1 that fails the way providers fail.

Each test asserts what the server received (request counts), so a retry loop that
retries too often, too little, or not at all fails here.
"""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from provkit import FAST, SECRET

from mindeval.errors import ModelCallError
from mindeval.llm.gateway import ModelSpec, acomplete, complete
from mindeval.llm.retry import RetryPolicy
from tests.support.fault_server import FaultServer

MSGS = [{"role": "system", "content": "You are a clinician."}, {"role": "user", "content": "hello"}]


def spec(srv: FaultServer, **kw) -> ModelSpec:
    return ModelSpec(**{"model": "openai/test-model", "api_base": srv.url, **kw})


def test_openai_path_sends_parameters_and_key_and_splits_reasoning(server):
    server.script([{"content": "<think>consider: hello</think>Thanks for telling me that.",
                    "reasoning": "provider trace"}])
    c = complete(spec(server, temperature=0.3, max_tokens=50), MSGS, role="clinician")
    assert c.text == "Thanks for telling me that."
    assert c.reasoning.startswith("provider trace") and "consider: hello" in c.reasoning
    assert c.usage.prompt_tokens > 0 and c.usage.completion_tokens > 0 and c.attempts == 1
    req = server.requests[-1]
    assert req["path"] == "/v1/chat/completions" and req["body"]["model"] == "test-model"
    assert req["body"]["temperature"] == 0.3 and req["body"]["max_tokens"] == 50
    assert req["auth"] == f"Bearer {SECRET}"
    assert req["body"]["messages"] == MSGS


@pytest.mark.parametrize("fault", ["429", "500", "503", "hang", "drop", "408"])
def test_transient_fault_is_retried_then_succeeds(server, fault):
    server.script([fault, fault, "ok"])
    c = complete(spec(server, timeout_s=0.5), MSGS, role="clinician", policy=FAST)
    assert c.text.startswith("Reply 1") and c.attempts == 3
    assert server.count() == 3 and server.count(outcome=fault) == 2


def test_retry_after_is_honoured(server):
    server.script([{"status": 429, "retry_after": 0.8}, "ok"])
    started = time.monotonic()
    c = complete(spec(server), MSGS, role="clinician", policy=FAST)
    assert time.monotonic() - started >= 0.8 and c.attempts == 2 and server.count() == 2


@pytest.mark.parametrize("status", [500, 503, 429])
def test_retries_are_bounded_by_attempts_and_report_the_provider_message(server, status):
    server.script([{"status": status, "retry_after": 0.01}] * 10)
    policy = RetryPolicy(max_retries=2, budget_s=30, base_delay_s=0.01, max_delay_s=0.05)
    with pytest.raises(ModelCallError) as info:
        complete(spec(server), MSGS, role="judge", policy=policy)
    err = info.value
    assert server.count() == 3  # the first attempt and two retries, no more
    assert err.status == status and err.transient and err.role == "judge"
    text = str(err)
    assert text.startswith(f"judge openai/test-model: {status} ") and "\n" not in text
    assert {500: "had an error", 503: "overloaded", 429: "Rate limit reached"}[status] in text
    assert "gave up after 3 attempts" in text


def test_retries_are_bounded_by_total_time(server):
    server.script([{"status": 429, "retry_after": 0.4}] * 50)
    policy = RetryPolicy(max_retries=50, budget_s=1.5, base_delay_s=0.01)
    with pytest.raises(ModelCallError, match="429 RateLimitError"):
        complete(spec(server), MSGS, role="patient", policy=policy)
    assert 2 <= server.count() <= 5  # the 1.5 s budget stopped it, not the 50 retries allowed
    gaps = [b["at"] - a["at"] for a, b in zip(server.requests, server.requests[1:])]
    assert all(g >= 0.4 for g in gaps)  # each retry waited what the server named


@pytest.mark.parametrize("status, text", [
    (400, "this request is malformed"), (401, "Incorrect API key provided"),
    (403, "not allowed to use this model"), (404, "does not exist"),
])
def test_permanent_errors_fail_fast_with_one_clear_line(server, status, text):
    server.script([str(status), "ok"])
    with pytest.raises(ModelCallError) as info:
        complete(spec(server), MSGS, role="clinician", policy=FAST)
    err = info.value
    assert server.count() == 1 and err.status == status and not err.transient
    line = str(err)
    assert line.startswith(f"clinician openai/test-model: {status} ") and text in line
    assert "\n" not in line and "Traceback" not in line and "tenacity" not in line
    assert SECRET not in line


def test_missing_key_fails_before_any_request(server, monkeypatch):
    """Without a server of the user's (``api_base``) the provider's key is required; a server
    the user names gets the request without one (tests/llm/test_api_base.py)."""
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(ModelCallError, match=r"^clinician openai/test-model: missing API key: set OPENAI_API_KEY$"):
        complete(ModelSpec(model="openai/test-model"), MSGS, role="clinician", policy=FAST)
    assert complete(spec(server), MSGS, role="clinician", policy=FAST).text
    assert server.count() == 1 and server.requests[0]["auth"] is None


def test_a_server_that_never_answers_does_not_stall_the_call(server):
    server.script(["hang"] * 10)
    policy = RetryPolicy(max_retries=1, budget_s=30, base_delay_s=0.01)
    started = time.monotonic()
    with pytest.raises(ModelCallError, match="Timeout") as info:
        complete(spec(server, timeout_s=0.5), MSGS, role="judge", policy=policy)
    assert server.count() == 2 and info.value.transient  # both cut: the call came back (no stall)
    assert server.requests[1]["at"] - started >= 0.5  # the first was cut by its 0.5 s timeout, not sooner


def test_empty_replies_are_retried_a_bounded_number_of_times(server):
    server.script(["empty"] * 10)
    with pytest.raises(ModelCallError, match=r"^patient openai/test-model: empty reply \(3 attempts\)$"):
        complete(spec(server), MSGS, role="patient", policy=RetryPolicy(empty_retries=2))
    assert server.count() == 3


def test_empty_then_text_is_the_text_never_a_placeholder(server):
    server.script(["empty", {"content": "I am here with you."}])
    c = complete(spec(server), MSGS, role="clinician", policy=FAST)
    assert c.text == "I am here with you." and c.attempts == 2 and server.count() == 2


def test_mixed_faults_all_calls_finish_within_bounds(server):
    server.configure(rates={"429": 0.2, "500": 0.1, "503": 0.05, "empty": 0.1, "hang": 0.05, "drop": 0.05})
    policy = RetryPolicy(max_retries=8, budget_s=60, empty_retries=8, base_delay_s=0.01, max_delay_s=0.05)

    async def many():
        s = spec(server, timeout_s=1.0)
        return await asyncio.gather(*[
            acomplete(s, [*MSGS, {"role": "user", "content": f"n{i}"}], role="clinician", policy=policy)
            for i in range(40)
        ])

    results = asyncio.run(many())
    assert all(r.text.startswith("Reply") for r in results)
    assert all(r.attempts <= 1 + policy.max_retries + policy.empty_retries for r in results)
    # No hidden retries (litellm's or the SDK's): the server never sees more requests than our
    # attempts. It may see fewer: a pooled connection the server had closed fails before sending.
    assert server.count() <= sum(r.attempts for r in results)
    outcomes = server.stats()["outcomes"]
    assert outcomes["ok"] >= 40 and sum(outcomes.values()) > 40


def test_sync_complete_from_many_threads(server):
    server.configure(latency_s=0.05)
    with ThreadPoolExecutor(8) as pool:
        texts = list(pool.map(lambda i: complete(spec(server), [*MSGS, {"role": "user", "content": str(i)}]).text,
                              range(16)))
    assert len(set(texts)) == 16 and server.count() == 16


def test_rpm_bucket_keeps_a_rate_limited_server_nearly_free_of_429s(server):
    server.configure(rate_limit=(12, 3.0))  # the server accepts 12 requests per sliding 3 s

    async def many():
        s = spec(server, rpm=240)  # the same limit, told to the client
        return await asyncio.gather(*[
            acomplete(s, [*MSGS, {"role": "user", "content": f"r{i}"}], role="clinician", policy=FAST)
            for i in range(30)
        ])

    started = time.monotonic()
    results = asyncio.run(many())
    assert len(results) == 30 and time.monotonic() - started >= 6.0  # paced, not burst
    assert server.count(outcome="ok") == 30
    assert server.count(outcome="429-limit") <= 3


def test_sustained_429s_cost_their_named_wait_not_concurrency(server):
    from mindeval.llm.limits import CEILING, limiter_for

    server.configure(rate_limit=(5, 1.0))

    async def many():
        s = spec(server, api_base=server.url + "/")  # its own limiter
        out = await asyncio.gather(*[
            acomplete(s, [*MSGS, {"role": "user", "content": f"a{i}"}], role="patient",
                      policy=RetryPolicy(max_retries=20, budget_s=60, base_delay_s=0.05, max_delay_s=0.5))
            for i in range(30)
        ])
        return out, limiter_for("patient", s.model, s.api_base, None, None).adaptive()

    started = time.monotonic()
    results, adaptive = asyncio.run(many())
    assert len(results) == 30 and server.count(outcome="ok") == 30
    assert time.monotonic() - started >= 4.0  # each rejected request waited what the server named
    # Retry-After names the wait: the request waits it, concurrency is not cut.
    assert adaptive.throttles >= 1 and adaptive.limit == CEILING
    assert server.count(outcome="429-limit") < 100  # 25 + 20 + 15 + 10 + 5 when the waits are kept


def test_first_request_goes_alone_only_when_held_back_for_a_reason():
    from mindeval.llm.limits import CEILING, Limiter

    async def first_limit(limiter, shared_prefix=False):
        return limiter.adaptive(shared_prefix).limit

    assert asyncio.run(first_limit(Limiter(None, None))) == CEILING  # no limit: all workers at once
    assert asyncio.run(first_limit(Limiter(60, None))) == 1  # a configured limit: one, then open
    assert asyncio.run(first_limit(Limiter(None, None), shared_prefix=True)) == 1  # a cache to write first
    seen = Limiter(None, None)
    seen.seen_429 = True
    assert asyncio.run(first_limit(seen)) == 1


def test_litellm_callbacks_receive_the_calls_that_go_through_litellm(server, monkeypatch):
    """litellm's own path runs unpatched: a registered callback sees each call, priced."""
    from litellm.integrations.custom_logger import CustomLogger

    from mindeval.llm.gateway import litellm_module

    litellm = litellm_module()
    seen: list[dict] = []

    class Recorder(CustomLogger):
        async def async_log_success_event(self, kwargs, response_obj, start_time, end_time):
            seen.append(kwargs)

    monkeypatch.setattr(litellm, "callbacks", [Recorder()])
    complete(ModelSpec(model="anthropic/claude-sonnet-4-5", api_base=server.base), MSGS, role="clinician")
    for _ in range(100):  # litellm's logging worker runs the callback after the reply
        if seen:
            break
        time.sleep(0.05)
    assert len(seen) == 1 and seen[0]["response_cost"] > 0
