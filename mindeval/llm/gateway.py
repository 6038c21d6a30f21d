"""The one gateway to language models: litellm, for every provider string it supports.

The embedded SmolLM2 model (``local/smollm2``) and the scripted test models
(``fake/...``) are litellm custom providers, so they travel the same call path as
``openai/…``, ``anthropic/…``, ``hosted_vllm/…`` or any OpenAI-compatible server
reached through ``api_base``. API keys are read by litellm from environment
variables; they are never part of a :class:`ModelSpec`, the store or the logs.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..errors import ModelCallError
from ..records import Usage
from . import custom
from .reasoning import split_reasoning

EMBEDDED_MODEL = "local/smollm2"
CUSTOM_PROVIDERS = ("local", "fake")

_setup_lock = threading.Lock()
_litellm: Any = None


class ModelSpec(BaseModel):
    """A model string plus the generation parameters of one role."""

    model_config = ConfigDict(extra="forbid")

    model: str = EMBEDDED_MODEL
    temperature: float | None = None
    max_tokens: int | None = None
    reasoning_effort: str | None = None
    api_base: str | None = None
    extra: dict[str, Any] = Field(default_factory=dict)

    @property
    def provider(self) -> str:
        return self.model.split("/", 1)[0] if "/" in self.model else ""

    @property
    def is_embedded(self) -> bool:
        return self.provider == "local"

    def params(self) -> dict[str, Any]:
        """Keyword arguments for ``litellm.completion`` (only those that are set)."""
        out: dict[str, Any] = dict(self.extra)
        for key in ("temperature", "max_tokens", "reasoning_effort", "api_base"):
            val = getattr(self, key)
            if val is not None:
                out[key] = val
        return out


class Completion(BaseModel):
    """A model reply with the visible text separated from any reasoning trace."""

    text: str
    reasoning: str | None = None
    usage: Usage = Field(default_factory=Usage)
    latency_s: float = 0.0
    model: str


def litellm_module() -> Any:
    """Import litellm once (offline cost map) and register MindEval's custom providers."""
    global _litellm
    if _litellm is not None:
        return _litellm
    with _setup_lock:
        if _litellm is None:
            import litellm

            import mindeval  # noqa: F401  (sets LITELLM_LOCAL_MODEL_COST_MAP before import)

            from .embedded import EmbeddedProvider
            from .fake import FakeProvider

            litellm.telemetry = False
            litellm.suppress_debug_info = True
            litellm.drop_params = True
            litellm.modify_params = True  # e.g. Anthropic needs a user message first
            existing = [
                p for p in (litellm.custom_provider_map or [])
                if p.get("provider") not in CUSTOM_PROVIDERS
            ]
            litellm.custom_provider_map = existing + [
                {"provider": "local", "custom_handler": EmbeddedProvider()},
                {"provider": "fake", "custom_handler": FakeProvider()},
            ]
            from litellm.utils import custom_llm_setup

            custom_llm_setup()
            _litellm = litellm
    return _litellm


def check_model_string(model: str) -> None:
    """Raise a readable error for a model string whose provider litellm does not know."""
    if custom.is_custom(model):
        custom.check(model)
        return
    if "/" not in model:
        raise ModelCallError(
            f"model '{model}' has no provider prefix; write it as PROVIDER/MODEL, "
            f"e.g. openai/gpt-4o-mini, anthropic/claude-sonnet-4-5 or {EMBEDDED_MODEL}"
        )
    provider = model.split("/", 1)[0]
    if provider in CUSTOM_PROVIDERS:
        return
    litellm = litellm_module()
    known = {str(getattr(p, "value", p)) for p in litellm.provider_list}
    if provider not in known:
        raise ModelCallError(
            f"unknown provider '{provider}' in model '{model}'. Use a litellm provider "
            f"(openai, anthropic, gemini, hosted_vllm, ollama, ...) or {EMBEDDED_MODEL}"
        )


def _get(obj: Any, key: str) -> Any:
    if obj is None:
        return None
    if isinstance(obj, dict):
        return obj.get(key)
    return getattr(obj, key, None)


def complete(
    spec: ModelSpec,
    messages: list[dict[str, str]],
    *,
    response_format: dict[str, Any] | None = None,
    seed: int | None = None,
    num_retries: int = 2,
) -> Completion:
    """Call ``spec.model`` on ``messages``; raise :class:`ModelCallError` on any failure.

    An empty visible reply is an error, never replaced by filler text.
    """
    check_model_string(spec.model)
    started = time.perf_counter()
    if custom.is_custom(spec.model):
        out = custom.call_custom(spec.model, messages)
        return _completion(spec.model, out["content"], out["reasoning"], out["usage"], started)
    litellm = litellm_module()
    kwargs = spec.params()
    if response_format is not None:
        kwargs["response_format"] = response_format
    if seed is not None:
        kwargs["seed"] = seed
    if spec.provider not in CUSTOM_PROVIDERS:
        kwargs["num_retries"] = num_retries
    try:
        resp = litellm.completion(model=spec.model, messages=messages, **kwargs)
    except ModelCallError:
        raise
    except Exception as exc:  # litellm maps provider errors to its own exception types
        raise ModelCallError(f"{spec.model}: {type(exc).__name__}: {_short(exc)}") from None
    message = _get(resp.choices[0], "message")
    return _completion(spec.model, _get(message, "content") or "", _get(message, "reasoning_content"),
                       _get(resp, "usage"), started)


def _completion(model: str, content: str, provider_reasoning: str | None, usage: Any, started: float) -> Completion:
    """Split reasoning from the visible text; an empty visible reply is an error."""
    text, reasoning = split_reasoning(content, provider_reasoning)
    if not text.strip():
        raise ModelCallError(f"{model} returned an empty reply")
    return Completion(
        text=text,
        reasoning=reasoning,
        usage=Usage(
            prompt_tokens=int(_get(usage, "prompt_tokens") or 0),
            completion_tokens=int(_get(usage, "completion_tokens") or 0),
        ),
        latency_s=time.perf_counter() - started,
        model=model,
    )


def _short(exc: Exception, limit: int = 400) -> str:
    msg = " ".join(str(exc).split())
    return msg if len(msg) <= limit else msg[:limit] + "…"
