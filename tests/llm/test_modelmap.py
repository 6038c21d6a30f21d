"""The bundled model map read without litellm answers as litellm does for the providers MindEval calls itself."""

from __future__ import annotations

import pytest

from mindeval.llm import modelmap
from mindeval.llm.gateway import litellm_module
from mindeval.llm.providers import PROVIDERS


def _chat_models() -> list[str]:
    own = {name for name, p in PROVIDERS.items() if p.path == "openai-compatible"}
    out = set()
    for key, entry in modelmap.model_map().items():
        if isinstance(entry, dict) and entry.get("mode") == "chat" and entry.get("litellm_provider") in own:
            provider = entry["litellm_provider"]
            out.add(f"{provider}/{key.removeprefix(provider + '/')}")
    return sorted(out)


def test_every_chat_model_of_the_openai_compatible_providers_is_priced_and_schema_checked_as_by_litellm():
    litellm = litellm_module()
    models = _chat_models() + ["openai/test-model", "hosted_vllm/Qwen/Qwen3-8B"]
    assert len(models) > 50
    differ = []
    for model in models:
        ours = modelmap.model_info(model) or {}
        try:
            theirs = litellm.get_model_info(model=model)
        except Exception:  # noqa: BLE001 - litellm raises for a model it does not list
            theirs = {}
        keys = ("input_cost_per_token", "output_cost_per_token", "cache_read_input_token_cost")
        if (modelmap.supports_response_schema(model) != litellm.supports_response_schema(model=model)
                or (ours.get(keys[0]) is not None and [ours.get(k) for k in keys] != [theirs.get(k) for k in keys])):
            differ.append(model)
    assert differ == ["openai/container"] or differ == []  # not a chat model in practice (mode mislabelled)


@pytest.mark.parametrize("model, schema", [("openai/gpt-4o-mini", True), ("openai/test-model", False),
                                           ("hosted_vllm/judge-model", False)])
def test_schema_support_of_known_and_unknown_models(model, schema):
    assert modelmap.supports_response_schema(model) is schema
