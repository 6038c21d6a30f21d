"""The provider table: everything MindEval knows about a provider, in one entry.

A model string is ``PROVIDER/NAME``; :func:`provider_of` gives its entry (a provider the
table does not name goes through litellm, which decides). An entry says

* ``path``: how a request travels. ``inprocess`` calls ``handler`` (``module:function``,
  imported on the first call) in a worker thread; ``openai-compatible`` posts to the
  server named by ``api_base`` over MindEval's own HTTP client (:mod:`.openai_http`) and,
  without an ``api_base``, goes through litellm like ``litellm`` (imported only then);
* ``keys``: the environment variables that may hold its API key (the first is named when
  none is set); ``key_required`` says whether a call without one fails before it is sent
  (never for a server named by ``api_base``: a local server needs no dummy key);
* ``breakpoints``: whether its prompt cache needs ``cache_control`` breakpoints
  (:mod:`.caching`); ``"claude"``: only for Claude models;
* ``schema``: whether a judge may ask for a JSON-schema ``response_format``: ``always``,
  ``never``, or ``map``: litellm's answer (``supports_response_schema``); for the
  OpenAI-compatible providers the model's entry in litellm's bundled map, read as JSON
  without importing litellm (:mod:`.modelmap`);
* ``extra``: the optional install (:mod:`mindeval.extras`) it needs.

Adding an in-process provider is one module with ``complete(model, messages, params) ->
Reply`` and one entry here.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

RequestPath = Literal["inprocess", "openai-compatible", "litellm"]


@dataclass(frozen=True)
class Reply:
    """What an in-process provider returns for one request."""

    text: str
    usage: dict[str, int] = field(default_factory=dict)  # prompt_tokens, completion_tokens
    finish_reason: str | None = "stop"
    reasoning: str | None = None


@dataclass(frozen=True)
class Provider:
    """One provider: its request path, key variables, caching rule, schema support and extra."""

    name: str
    path: RequestPath = "litellm"
    keys: tuple[str, ...] = ()
    key_required: bool = True
    breakpoints: Literal["never", "always", "claude"] = "never"
    schema: Literal["map", "always", "never"] = "map"
    extra: str | None = None
    handler: str | None = None  # in-process: "module:function"
    checker: str | None = None  # "module:function" raising ModelCallError for a model name it cannot serve

    def route(self, api_base: str | None) -> Literal["inprocess", "http", "litellm"]:
        """Where one request of this provider goes (``http``: MindEval's own client)."""
        if self.path == "inprocess":
            return "inprocess"
        if self.path == "openai-compatible" and api_base:
            return "http"
        return "litellm"

    def uses_breakpoints(self, name: str) -> bool:
        return self.breakpoints == "always" or (self.breakpoints == "claude" and "claude" in name.lower())

    def api_key(self) -> str | None:
        """The first of :attr:`keys` set in the environment (never stored or logged)."""
        return next((os.environ[k] for k in self.keys if os.environ.get(k)), None)

    def missing_key(self, api_base: str | None = None) -> str | None:
        """``VAR`` (or ``VAR or VAR2``) when a required key is not set; None otherwise.

        A request to a server the user names (``api_base``, sent by MindEval's own client) needs
        no key: the key is sent when set, and a server that wants one answers 401 itself."""
        if not self.keys or not self.key_required or self.api_key() is not None:
            return None
        if api_base and self.route(api_base) == "http":
            return None
        return " or ".join(self.keys)

    def handler_fn(self) -> Callable[[str, list[dict[str, Any]], dict[str, Any]], Reply]:
        module, _, attr = (self.handler or "").partition(":")
        return getattr(importlib.import_module(module), attr)


def _keyed(name: str, *keys: str, **kw: Any) -> Provider:
    return Provider(name, keys=keys, **kw)


PROVIDERS: dict[str, Provider] = {p.name: p for p in (
    Provider("local", path="inprocess", schema="always", extra="embedded", handler="mindeval.llm.embedded:complete"),
    Provider("fake", path="inprocess", schema="never", handler="mindeval.llm.fake:complete",
             checker="mindeval.llm.fake:check"),
    _keyed("openai", "OPENAI_API_KEY", path="openai-compatible"),
    _keyed("hosted_vllm", "HOSTED_VLLM_API_KEY", path="openai-compatible", key_required=False),
    _keyed("anthropic", "ANTHROPIC_API_KEY", breakpoints="always"),
    Provider("bedrock", breakpoints="claude"),
    Provider("vertex_ai", breakpoints="claude"),
    Provider("vertex_ai_beta", breakpoints="claude"),
    _keyed("gemini", "GEMINI_API_KEY", "GOOGLE_API_KEY"),
    _keyed("mistral", "MISTRAL_API_KEY"),
    _keyed("groq", "GROQ_API_KEY"),
    _keyed("deepseek", "DEEPSEEK_API_KEY"),
    _keyed("xai", "XAI_API_KEY"),
    _keyed("together_ai", "TOGETHERAI_API_KEY"),
    _keyed("fireworks_ai", "FIREWORKS_AI_API_KEY", "FIREWORKS_API_KEY"),
    _keyed("openrouter", "OPENROUTER_API_KEY"),
    _keyed("cohere", "COHERE_API_KEY"),
    _keyed("perplexity", "PERPLEXITYAI_API_KEY"),
)}


def provider_of(model: str) -> Provider:
    """The table entry of ``model``'s provider (``PROVIDER/NAME``); any other provider gets
    a litellm entry without a key check (litellm reports a missing key itself)."""
    name = model.split("/", 1)[0] if "/" in model else ""
    return PROVIDERS.get(name) or Provider(name)


def known(model: str) -> bool:
    """Whether the table itself names ``model``'s provider (no litellm needed to accept it)."""
    return "/" in model and model.split("/", 1)[0] in PROVIDERS


def supports_schema(model: str) -> bool:
    """Whether a judge request to ``model`` may carry a JSON-schema ``response_format``."""
    entry = provider_of(model)
    if entry.schema != "map":
        return entry.schema == "always"
    if entry.path == "openai-compatible":
        from .modelmap import supports_response_schema

        return supports_response_schema(model)
    from .litellm_lib import litellm_module

    try:
        return bool(litellm_module().supports_response_schema(model=model))
    except Exception:  # noqa: BLE001 - litellm raises for models it does not know: no schema then
        return False
