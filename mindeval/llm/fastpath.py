"""Skip per-call work of litellm and the OpenAI SDK whose result nobody reads.

* The OpenAI SDK transforms the whole request body against its TypedDicts before each
  request (``async_maybe_transform``); for a 20-message history that is most of the CPU
  of a call. For plain ``{"role": str, "content": str}`` messages the transform is the
  identity, so they are passed through and only the rest of the body is transformed.
  Anything else (content blocks, tool calls) takes the SDK's own path unchanged. The
  SDK's chat module is imported only when a call may go through it (start-up).
* litellm builds a logging payload for every successful call (a task on its logging
  worker) and prices the reply a second time for it; for a model without a price that
  lookup fails through litellm's fallback search on every call. MindEval registers no
  litellm callback and prices calls itself (:mod:`.cost`), so while no callback is
  registered (``litellm.callbacks``, ``success_callback``, ...) both are skipped. Once
  a user registers one, litellm's own path runs unchanged.
* litellm's ``acompletion`` builds every request in the event loop's thread pool
  (``run_in_executor``) and awaits the coroutine it returns. For providers whose request
  building is plain CPU work (no I/O: :data:`INLINE_PROVIDERS`), the thread hop only adds
  latency: with hundreds of requests in flight, each waits for a pool thread and then for
  the GIL, twice per call. On MindEval's loops (:func:`inline_builds`) the gateway marks
  those calls (:data:`inline_build`) and the build runs on the loop's own thread.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

_installed = False
_sdk_patched = False
SDK_MODULE = "openai.resources.chat.completions.completions"
SDK_PROVIDERS = ("openai", "azure")  # litellm calls these through the OpenAI SDK
# litellm builds these providers' requests without I/O (no credential files, token refreshes
# or downloads), so the build may run on the event loop's thread.
INLINE_PROVIDERS = ("openai", "hosted_vllm", "anthropic")
inline_build: ContextVar[bool] = ContextVar("mindeval_inline_build", default=False)
CALLBACK_LISTS = ("callbacks", "success_callback", "_async_success_callback", "failure_callback",
                  "_async_failure_callback", "input_callback", "service_callback")


def _plain(messages: Any) -> bool:
    return isinstance(messages, list) and all(
        type(m) is dict and all(type(v) is str for v in m.values()) for m in messages)


def listening(litellm: Any) -> bool:
    """Whether any litellm callback (global or per call) could read a call's log."""
    return any(getattr(litellm, name, None) for name in CALLBACK_LISTS)


def install() -> None:
    """Install litellm's shortcuts once per process (the SDK's: see :func:`patch_sdk`)."""
    global _installed
    if _installed:
        return
    _install_quiet_logging()
    _installed = True


def patch_sdk(provider: str) -> None:
    """Wrap the SDK's transform before a call that may use the SDK (once per process).

    The SDK is imported only for providers litellm reaches through it (importing it
    costs ~0.4 s of start-up), or once litellm has imported it for another provider.
    """
    global _sdk_patched
    if _sdk_patched or (provider not in SDK_PROVIDERS and SDK_MODULE not in sys.modules):
        return
    from openai.resources.chat.completions import completions as mod

    original = mod.async_maybe_transform

    async def transform(data: Any, expected_type: Any) -> Any:
        if isinstance(data, dict) and _plain(data.get("messages")):
            rest = await original({k: v for k, v in data.items() if k != "messages"}, expected_type)
            return {**rest, "messages": data["messages"]}
        return await original(data, expected_type)

    mod.async_maybe_transform = transform
    _sdk_patched = True


def _install_quiet_logging() -> None:
    import litellm
    from litellm import utils
    from litellm.litellm_core_utils.litellm_logging import Logging

    dispatch = utils._dispatch_success_logging
    price = Logging._response_cost_calculator

    def _dispatch_success_logging(logging_obj: Any, *args: Any, **kwargs: Any) -> None:
        if listening(litellm) or _dynamic(logging_obj):
            dispatch(logging_obj, *args, **kwargs)

    def _response_cost_calculator(self: Any, *args: Any, **kwargs: Any) -> float | None:
        if listening(litellm) or _dynamic(self):
            return price(self, *args, **kwargs)
        return None

    utils._dispatch_success_logging = _dispatch_success_logging
    Logging._response_cost_calculator = _response_cost_calculator


def _dynamic(logging_obj: Any) -> bool:
    """Callbacks passed with the call itself (``acompletion(..., callbacks=[...])``)."""
    return any(getattr(logging_obj, name, None) for name in (
        "dynamic_success_callbacks", "dynamic_async_success_callbacks",
        "dynamic_failure_callbacks", "dynamic_async_failure_callbacks"))


def inline_builds(loop: asyncio.AbstractEventLoop) -> None:
    """Let ``loop`` run a marked call's default-executor work inline (see the module docstring)."""
    if getattr(loop, "_mindeval_inline", False):
        return
    pooled = loop.run_in_executor

    def run_in_executor(executor: Any, func: Callable[..., Any], *args: Any) -> asyncio.Future[Any]:
        if executor is not None or not inline_build.get():
            return pooled(executor, func, *args)
        fut = loop.create_future()
        try:
            fut.set_result(func(*args))
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting caller, as the pool would
            fut.set_exception(exc)
        return fut

    loop.run_in_executor = run_in_executor  # type: ignore[method-assign]
    loop._mindeval_inline = True  # type: ignore[attr-defined]
