"""One HTTP client per provider and event loop, closed when the loop's run ends."""

from __future__ import annotations

import asyncio
import gc
import warnings

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
