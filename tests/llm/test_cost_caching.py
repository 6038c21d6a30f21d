"""Cost per call from the bundled price map; Anthropic cache breakpoints and cached-token counts."""

from __future__ import annotations

import asyncio
import json
import threading
from urllib.error import HTTPError
from urllib.request import Request, urlopen

import pytest

from mindeval.judging.render import JudgePrompt, build_judge_messages, cache_prefix
from mindeval.llm.caching import uses_breakpoints, with_breakpoints
from mindeval.llm.cost import billed_input_tokens, cost_usd, price_per_token
from mindeval.llm.gateway import ModelSpec, acomplete, complete
from mindeval.prompts import load_template
from mindeval.records import BenchmarkConfig, Usage, load_profiles
from mindeval.resources import data_dir
from mindeval.rundir import legacy_target
from mindeval.targets.guidelines import load_guidelines
from tests.support.fault_server import FaultServer, count_tokens

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
    base = dict(prompts={r: {"ref": f"{r}/default@v1", "sha256": "ab"} for r in ("patient", "clinician", "judge")},
                guidelines_version="v", profiles_source="p", profiles_sha256="h",
                profile_ids=["a"], package_version="0", turns=2, seed=0, target=legacy_target())
    specs = {r: ModelSpec(model="openai/x") for r in ("patient", "clinician", "judge")}
    a = BenchmarkConfig(**specs, **base)
    b = BenchmarkConfig(**{**specs, "judge": ModelSpec(model="openai/x", timeout_s=5, rpm=10, tpm=1000)}, **base)
    assert a.hash() == b.hash()
    assert b.model_dump()["judge"]["rpm"] == 10
    assert "rpm" not in b.judge.params() and b.judge.call_settings() == {"timeout_s": 5, "rpm": 10, "tpm": 1000}
    c = BenchmarkConfig(**{**specs, "judge": ModelSpec(model="openai/x", temperature=0.5)}, **base)
    assert c.hash() != a.hash()


def marks_of(body: dict) -> list[str]:
    """Texts of the blocks of an Anthropic request body that carry ``cache_control``."""
    system = body.get("system") if isinstance(body.get("system"), list) else []
    parts = system + [p for m in body["messages"] if isinstance(m["content"], list) for p in m["content"]]
    return [p["text"] for p in parts if p.get("cache_control")]


def test_each_turn_reads_what_the_previous_turn_wrote():
    """Breakpoints on the system prompt, the last message and the previous request's last
    message: from the second call on, the whole previous prompt is read from the cache and
    only the two new messages are written."""
    with FaultServer(cache=True, cache_min_tokens=50) as srv:
        spec = ModelSpec(model=CLAUDE, api_base=srv.base)
        msgs = [{"role": "system", "content": "You are a clinician. " * 40}, {"role": "user", "content": "Hello."}]
        prev, billed = None, 0.0
        for turn in range(6):
            c = complete(spec, msgs, role="clinician")
            body = srv.requests[-1]["body"]
            assert len(marks_of(body)) <= 4
            assert marks_of(body)[0] == msgs[0]["content"] and marks_of(body)[-1] == msgs[-1]["content"]
            if prev is None:
                assert c.usage.cached_tokens == 0 and c.usage.cache_write_tokens == c.usage.prompt_tokens
            else:
                assert c.usage.cached_tokens == prev.usage.prompt_tokens
                assert c.usage.cache_write_tokens == c.usage.prompt_tokens - prev.usage.prompt_tokens
            prev = c
            msgs += [{"role": "assistant", "content": c.text}, {"role": "user", "content": f"Turn {turn}."}]
            billed += billed_input_tokens(CLAUDE, c.usage)
        # What the run summary reports as billed input is what the provider bills.
        assert billed == pytest.approx(srv.billing["billed_input_tokens_x1000"] / 1000, abs=1)


def test_a_short_prefix_is_not_cached():
    with FaultServer(cache=True, cache_min_tokens=1024) as srv:
        spec = ModelSpec(model=CLAUDE, api_base=srv.base)
        msgs = [{"role": "system", "content": "Short prompt."}, {"role": "user", "content": "Hello."}]
        for _ in range(2):
            c = complete(spec, msgs, role="clinician")
            assert c.usage.cached_tokens == 0 and c.usage.cache_write_tokens == 0


def post_anthropic(srv: FaultServer, body: dict) -> tuple[int, dict]:
    req = Request(f"{srv.base}/v1/messages", data=json.dumps(body).encode(), method="POST",
                  headers={"Content-Type": "application/json"})
    try:
        with urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except HTTPError as exc:
        return exc.code, json.loads(exc.read())


def block(text: str, mark: bool = True) -> dict:
    return {"type": "text", "text": text, **({"cache_control": {"type": "ephemeral"}} if mark else {})}


def test_the_server_refuses_a_fifth_breakpoint_like_anthropic():
    with FaultServer(cache=True, cache_min_tokens=10) as srv:
        body = {"model": "claude-x", "max_tokens": 10,
                "messages": [{"role": "user", "content": [block(f"part {i} " * 20) for i in range(5)]}]}
        status, reply = post_anthropic(srv, body)
        assert status == 400 and "maximum of 4 blocks with cache_control" in reply["error"]["message"]
        body["messages"][0]["content"][0] = block("part 0 " * 20, mark=False)
        assert post_anthropic(srv, body)[0] == 200


def test_a_cache_entry_is_readable_only_once_its_request_was_answered():
    """Concurrent requests with the same new prefix both write it; a later one reads it."""
    with FaultServer(cache=True, cache_min_tokens=10, latency_s=0.5) as srv:
        body = {"model": "claude-x", "max_tokens": 10, "system": [block("Shared instructions. " * 40)],
                "messages": [{"role": "user", "content": "Hi."}]}
        usages: list[dict] = []
        threads = [threading.Thread(target=lambda: usages.append(post_anthropic(srv, body)[1]["usage"]))
                   for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert [u["cache_read_input_tokens"] for u in usages] == [0, 0]
        assert all(u["cache_creation_input_tokens"] > 0 for u in usages)
        later = post_anthropic(srv, body)[1]["usage"]
        assert later["cache_read_input_tokens"] == usages[0]["cache_creation_input_tokens"]
        other_model = post_anthropic(srv, {**body, "model": "claude-y"})[1]["usage"]
        assert other_model["cache_read_input_tokens"] == 0  # entries are per model


def judge_prompts(n: int) -> tuple[str, list[str]]:
    tpl = JudgePrompt(load_template("judge/default", kind="judge"), load_guidelines())
    profiles = load_profiles(data_dir() / "demo_profiles.jsonl")[:n]
    prompts = [build_judge_messages(tpl, p, [{"role": "user", "content": "Hello."},
                                             {"role": "assistant", "content": f"Hi, {p.name}."}])[0]["content"]
               for p in profiles]
    prefixes = {cache_prefix(tpl, text) for text in prompts}
    assert len(prefixes) == 1 and None not in prefixes
    return prefixes.pop(), prompts


def test_the_judge_prefix_is_the_shared_instructions_and_rubric():
    prefix, prompts = judge_prompts(3)
    assert all(p.startswith(prefix) for p in prompts)
    assert "<evaluation_framework>" in prefix and "</member_details>" not in prefix
    assert prefix.rstrip().endswith("Now, consider a new instance:")
    marked = with_breakpoints([{"role": "user", "content": prompts[0]}], stable_prefix=prefix, history=False)
    parts = marked[0]["content"]
    assert [p["text"] for p in parts] == [prefix, prompts[0][len(prefix):]]
    assert [bool(p.get("cache_control")) for p in parts] == [True, False]
    other = [{"role": "user", "content": "Something else entirely."}]
    assert with_breakpoints(other, stable_prefix=prefix, history=False) == other


def test_judge_calls_read_the_shared_prefix_written_by_the_first():
    """Concurrent judge calls: the first goes alone and writes the shared prefix, the others
    read it; the per-interaction rest is neither written nor read. The OpenAI request carries
    the unchanged prompt as one plain string."""
    prefix, prompts = judge_prompts(4)
    with FaultServer(cache=True, cache_min_tokens=1024, latency_s=0.2) as srv:
        spec = ModelSpec(model=CLAUDE, api_base=srv.base)

        async def judge_all():
            return await asyncio.gather(*[acomplete(spec, [{"role": "user", "content": p}], role="judge",
                                                    cache_prefix=prefix) for p in prompts])

        out = asyncio.run(judge_all())
        shared = count_tokens(prefix) + 4
        assert sorted(c.usage.cached_tokens for c in out) == [0, shared, shared, shared]
        assert sorted(c.usage.cache_write_tokens for c in out) == [0, 0, 0, shared]
        sent = [b["text"] for b in srv.requests[-1]["body"]["messages"][0]["content"]]
        assert "".join(sent) in prompts
        openai = ModelSpec(model="openai/gpt-4o-mini", api_base=srv.url)
        complete(openai, [{"role": "user", "content": prompts[0]}], role="judge", cache_prefix=prefix)
        assert srv.requests[-1]["body"]["messages"] == [{"role": "user", "content": prompts[0]}]
