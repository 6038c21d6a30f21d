"""The one worker pool: asyncio tasks on one event loop, bounded by ``--concurrency``, one progress bar.

Used by ``mindeval run``, backstory generation, ``metaeval judge`` and ``metaeval realism``.
Model calls are awaited (the gateway's async path), so 50 concurrent interactions
cost 50 suspended coroutines rather than 50 threads.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from .errors import MindEvalError

T = TypeVar("T")
R = TypeVar("R")


def check_concurrency(n: int) -> int:
    if n < 1:
        raise MindEvalError(f"must be at least 1, got {n}", field="--concurrency")
    return n


class Progress:
    """A tqdm bar on stderr: live on a terminal, a line every few seconds in logs, silent when disabled."""

    def __init__(self, total: int, desc: str, enabled: bool = True) -> None:
        from tqdm import tqdm

        tty = sys.stderr.isatty()
        self.bar = tqdm(total=total, desc=desc, disable=not enabled, file=sys.stderr, unit="step",
                        mininterval=0.2 if tty else 5.0, dynamic_ncols=True, leave=tty)

    def advance(self, n: int = 1) -> None:
        if n:
            self.bar.update(n)

    def close(self) -> None:
        self.bar.close()


async def bounded(items: Iterable[T], work: Callable[[T], Awaitable[R]], concurrency: int,
                  stop: asyncio.Event | None = None) -> list[R | None]:
    """``await work(item)`` for every item, at most ``concurrency`` at once, results in input order.

    Once ``stop`` is set no new item starts (its result is ``None``).
    """
    sem = asyncio.Semaphore(check_concurrency(concurrency))

    async def one(item: T) -> R | None:
        async with sem:
            if stop is not None and stop.is_set():
                return None
            return await work(item)

    return list(await asyncio.gather(*(one(i) for i in items)))


def run_async(main: Callable[[], Awaitable[R]], concurrency: int) -> R:
    """Run ``main()`` on a new event loop whose thread pool fits ``concurrency`` blocking calls;
    the model clients opened on the loop are closed when it ends."""
    from .llm.gateway import aclose_clients

    async def wrapped() -> R:
        loop = asyncio.get_running_loop()
        loop.set_default_executor(ThreadPoolExecutor(max_workers=max(8, concurrency + 2)))
        try:
            return await main()
        finally:
            await aclose_clients()

    return asyncio.run(wrapped())


def run_pool(items: list[T], work: Callable[[T], Awaitable[R]], *, concurrency: int, desc: str,
             progress: bool = True, total: int | None = None) -> list[R | None]:
    """:func:`bounded` on its own event loop with a progress bar advanced once per item."""
    bar = Progress(len(items) if total is None else total, desc, progress)

    async def each(item: T) -> Any:
        try:
            return await work(item)
        finally:
            if total is None:
                bar.advance()

    try:
        return run_async(lambda: bounded(items, each, concurrency), concurrency)
    finally:
        bar.close()
