"""One HTTP client per provider and event loop, closed when the loop's run ends."""

from __future__ import annotations

import asyncio
import gc
import warnings
from concurrent.futures import ThreadPoolExecutor

from mindeval.llm.gateway import ModelSpec, acomplete, litellm_module
from mindeval.workers import run_async

MESSAGES = [{"role": "user", "content": "Hello."}]


def _loop_clients() -> dict[str, object]:
    """litellm's pooled clients of the running loop (some are litellm's own, e.g. for logging)."""
    cache = litellm_module().in_memory_llm_clients_cache.cache_dict
    suffix = f"-{id(asyncio.get_running_loop())}"
    return {k: v for k, v in cache.items() if isinstance(k, str) and k.endswith(suffix)}


def test_a_run_reuses_one_client_and_closes_it_at_its_end(server, monkeypatch):
    monkeypatch.setenv("HOSTED_VLLM_API_KEY", "sk-local")
    spec = ModelSpec(model="hosted_vllm/m", api_base=server.url)
    seen: list[dict[str, object]] = []

    async def main() -> None:
        await asyncio.gather(*(acomplete(spec, MESSAGES, seed=i) for i in range(12)))
        seen.append(_loop_clients())

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):  # a second run on a new loop gets its own client, closed alike
            run_async(main, concurrency=4)
        gc.collect()
    assert server.count() == 24
    assert [sum("hosted_vllm" in k for k in c) for c in seen] == [1, 1]  # twelve calls, one client
    for handler in (h for c in seen for h in c.values()):
        assert handler._client.is_closed  # the httpx client and its aiohttp session
        session = getattr(handler._client._transport, "client", None)
        assert session is None or callable(session) or session.closed
    assert not _loop_clients_left(seen)
    assert not [w for w in caught if "Unclosed" in str(w.message)]


def _loop_clients_left(seen: list[dict[str, object]]) -> list[str]:
    cache = litellm_module().in_memory_llm_clients_cache.cache_dict
    return [k for c in seen for k in c if k in cache]


class CountingPool(ThreadPoolExecutor):
    def __init__(self) -> None:
        super().__init__(max_workers=2)
        self.submitted = 0

    def submit(self, *args, **kwargs):  # type: ignore[override]
        self.submitted += 1
        return super().submit(*args, **kwargs)


def test_http_requests_are_built_on_the_loop_thread_other_providers_in_the_pool(server, monkeypatch):
    """litellm builds a request in the loop's thread pool; on MindEval's loops an HTTP
    provider's build runs inline (no thread hop), a custom provider's stays in the pool."""
    monkeypatch.setenv("HOSTED_VLLM_API_KEY", "sk-local")
    counts: dict[str, int] = {}

    async def main() -> None:
        pool = CountingPool()
        asyncio.get_running_loop().set_default_executor(pool)
        for model, base in (("hosted_vllm/m", server.url), ("openai/m", server.url), ("fake/echo", None)):
            before = pool.submitted
            out = await acomplete(ModelSpec(model=model, api_base=base), MESSAGES, seed=1)
            assert out.text
            counts[model] = pool.submitted - before

    run_async(main, concurrency=2)
    assert counts["hosted_vllm/m"] == 0 and counts["openai/m"] == 0
    assert counts["fake/echo"] >= 1
    assert server.count() == 2
