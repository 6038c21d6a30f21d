"""One HTTP client per event loop, reused by every call on it and closed when the loop's run ends."""

from __future__ import annotations

import asyncio
import gc
import warnings
from concurrent.futures import ThreadPoolExecutor

from mindeval.llm import openai_http
from mindeval.llm.gateway import ModelSpec, acomplete
from mindeval.workers import run_async

MESSAGES = [{"role": "user", "content": "Hello."}]


def test_a_run_reuses_one_client_and_closes_it_at_its_end(server, monkeypatch):
    monkeypatch.setenv("HOSTED_VLLM_API_KEY", "sk-local")
    spec = ModelSpec(model="hosted_vllm/m", api_base=server.url)
    seen: list[object] = []

    async def main() -> None:
        await asyncio.gather(*(acomplete(spec, MESSAGES, seed=i) for i in range(12)))
        seen.append(openai_http._sessions[asyncio.get_running_loop()][0])
        await acomplete(spec, MESSAGES, seed=99)
        assert openai_http._sessions[asyncio.get_running_loop()][0] is seen[-1]  # the same client again

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):  # a second run on a new loop gets its own client, closed alike
            run_async(main, concurrency=4)
        gc.collect()
    assert server.count() == 26
    assert seen[0] is not seen[1] and all(s.closed for s in seen)  # type: ignore[attr-defined]
    assert not [w for w in caught if "Unclosed" in str(w.message)]


def test_a_loop_ended_by_asyncio_run_closes_its_client(server, monkeypatch):
    """A Python caller's own ``asyncio.run(acomplete(...))`` leaves no open client behind."""
    monkeypatch.setenv("HOSTED_VLLM_API_KEY", "sk-local")
    seen: list[object] = []

    async def one() -> None:
        await acomplete(ModelSpec(model="hosted_vllm/m", api_base=server.url), MESSAGES)
        seen.append(openai_http._sessions[asyncio.get_running_loop()][0])

    asyncio.run(one())
    assert seen and seen[0].closed  # type: ignore[attr-defined]


class CountingPool(ThreadPoolExecutor):
    def __init__(self) -> None:
        super().__init__(max_workers=2)
        self.submitted = 0

    def submit(self, *args, **kwargs):  # type: ignore[override]
        self.submitted += 1
        return super().submit(*args, **kwargs)


def test_http_requests_are_sent_from_the_loop_in_process_models_run_in_the_pool(server, monkeypatch):
    """An OpenAI-compatible server is called from the event loop itself (no thread hop per
    request); an in-process model (blocking work) runs in the loop's thread pool."""
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
