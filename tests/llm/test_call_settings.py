"""What travels with a call: its retry policy (the CLI's reaches its own calls only) and its provider entry."""

from __future__ import annotations

from mindeval.cli import main
from mindeval.config import DEFAULT_MAX_RETRIES, DEFAULT_RETRY_BUDGET_S
from mindeval.llm.gateway import ModelSpec, complete
from mindeval.llm.retry import DEFAULT_POLICY, RetryPolicy

MSGS = [{"role": "user", "content": "hello"}]


def _run(server, tmp_path, *extra: str) -> int:
    args = ["run", "--limit", "1", "--turns", "2", "--out", str(tmp_path / "run"), "--quiet", *extra]
    for role in ("patient", "clinician", "judge"):
        args += [f"--{role}", f"hosted_vllm/{role}-model", f"--{role}-api-base", server.url]
    return main(args)


def test_the_cli_policy_governs_its_run_and_does_not_outlive_it(server, tmp_path):
    server.script(["503", "ok"], model="clinician-model")
    assert _run(server, tmp_path, "--max-retries", "0") == 1  # no retry: the clinician's 503 fails the turn
    assert server.count(model="clinician-model") == 1
    # a later Python caller in the same process gets the defaults (a retry), not the CLI's 0
    server.script(["503", "ok"])
    assert complete(ModelSpec(model="hosted_vllm/m", api_base=server.url), MSGS).attempts == 2  # waits <= 1 s


def test_a_python_caller_gets_the_clis_defaults():
    assert DEFAULT_POLICY == RetryPolicy(max_retries=DEFAULT_MAX_RETRIES, budget_s=DEFAULT_RETRY_BUDGET_S)
    assert ModelSpec().retry is None and "retry" not in ModelSpec(retry=RetryPolicy(max_retries=1)).model_dump()


def test_an_in_process_provider_is_one_module_and_one_table_entry(monkeypatch):
    from mindeval.llm.providers import PROVIDERS, Provider, supports_schema

    monkeypatch.setitem(PROVIDERS, "toy", Provider("toy", path="inprocess", schema="never",
                                                   handler="toy_provider:complete"))
    c = complete(ModelSpec(model="toy/one"), MSGS, seed=7)
    assert c.text == "toy one heard 1 messages (seed 7)" and c.usage.prompt_tokens == 1 and c.cost_usd is None
    assert not supports_schema("toy/one")
