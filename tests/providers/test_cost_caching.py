"""Cost per call from the bundled price map; Anthropic cache breakpoints and cached-token counts."""

from __future__ import annotations

import pytest
from support.fault_server import FaultServer

from mindeval.config import RunConfig
from mindeval.llm.caching import uses_breakpoints, with_breakpoints
from mindeval.llm.cost import cost_usd, price_per_token
from mindeval.llm.gateway import ModelSpec, complete
from mindeval.records import Usage

CLAUDE = "anthropic/claude-haiku-4-5"


def test_prices_come_from_the_bundled_map():
    p = price_per_token("openai/gpt-4o-mini")
    assert p is not None and p.input == pytest.approx(1.5e-07) and p.output == pytest.approx(6e-07)
    assert p.cache_read < p.input
    assert price_per_token("openai/no-such-model-xyz") is None
    assert price_per_token("fake/echo") is None and price_per_token("local/smollm2") is None


def test_cost_bills_cache_reads_and_writes_at_their_prices():
    p = price_per_token(CLAUDE)
    assert p is not None
    plain = cost_usd(CLAUDE, Usage(prompt_tokens=1000, completion_tokens=100))
    cached = cost_usd(CLAUDE, Usage(prompt_tokens=1000, completion_tokens=100, cached_tokens=900))
    assert plain == pytest.approx(1000 * p.input + 100 * p.output)
    assert cached == pytest.approx(100 * p.input + 900 * p.cache_read + 100 * p.output)
    assert cost_usd("openai/no-such-model-xyz", Usage(prompt_tokens=5)) is None


def test_breakpoints_only_where_the_provider_needs_them():
    assert uses_breakpoints(CLAUDE) and uses_breakpoints("bedrock/anthropic.claude-3-5-sonnet")
    assert not uses_breakpoints("openai/gpt-4o-mini") and not uses_breakpoints("gemini/gemini-2.5-flash")
    msgs = [{"role": "system", "content": "S"}, {"role": "user", "content": "a"},
            {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}]
    marked = with_breakpoints(msgs)
    flags = [isinstance(m["content"], list) for m in marked]
    assert flags == [True, True, False, True]
    assert [m["content"][0]["text"] if isinstance(m["content"], list) else m["content"] for m in marked] == list("Sabc")
    assert msgs[0]["content"] == "S"  # the caller's messages are not changed


def test_anthropic_conversation_reads_its_prefix_from_the_cache():
    with FaultServer(cache=True, cache_min_tokens=50) as srv:
        spec = ModelSpec(model=CLAUDE, api_base=srv.base)
        msgs = [{"role": "system", "content": "You are a clinician. " * 40}, {"role": "user", "content": "Hello."}]
        first = complete(spec, msgs, role="clinician")
        assert first.usage.cached_tokens == 0 and first.usage.cache_write_tokens > 0
        msgs += [{"role": "assistant", "content": first.text}, {"role": "user", "content": "I feel low."}]
        second = complete(spec, msgs, role="clinician")
        assert second.usage.cached_tokens >= first.usage.prompt_tokens - 10
        assert second.usage.prompt_tokens > second.usage.cached_tokens
        assert first.cost_usd and second.cost_usd and second.cost_usd < first.cost_usd * 1.5
        body = srv.requests[-1]["body"]
        assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
        assert body["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}


def test_openai_automatic_cache_is_recorded():
    with FaultServer(cache=True, cache_min_tokens=50) as srv:
        spec = ModelSpec(model="openai/gpt-4o-mini", api_base=srv.url)
        msgs = [{"role": "system", "content": "You are a clinician. " * 40}, {"role": "user", "content": "Hello."}]
        complete(spec, msgs)
        second = complete(spec, [*msgs, {"role": "assistant", "content": "Hi."}, {"role": "user", "content": "x"}])
        assert second.usage.cached_tokens > 0 and second.cost_usd is not None
        assert all(isinstance(m["content"], str) for m in srv.requests[-1]["body"]["messages"])


def test_call_settings_are_recorded_but_not_hashed():
    base = dict(prompts={}, guidelines_version="v", profiles_source="p", profiles_sha256="h",
                profile_ids=["a"], package_version="0", turns=2, seed=0)
    specs = {r: ModelSpec(model="openai/x") for r in ("patient", "clinician", "judge")}
    a = RunConfig(**specs, **base)
    b = RunConfig(**{**specs, "judge": ModelSpec(model="openai/x", timeout_s=5, rpm=10, tpm=1000)}, **base)
    assert a.hash() == b.hash()
    assert b.model_dump()["judge"]["rpm"] == 10
    assert "rpm" not in b.judge.params() and b.judge.call_settings() == {"timeout_s": 5, "rpm": 10, "tpm": 1000}
    c = RunConfig(**{**specs, "judge": ModelSpec(model="openai/x", temperature=0.5)}, **base)
    assert c.hash() != a.hash()
