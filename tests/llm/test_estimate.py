"""`--dry-run`'s estimate against what the fault server counted and billed for the same run."""

from __future__ import annotations

import pytest

from mindeval.engine.estimate import estimate_run
from mindeval.engine.loop import run_benchmark
from mindeval.engine.prepare import prepare
from mindeval.llm.gateway import ModelSpec
from mindeval.run_options import RunOptions
from tests.support.fault_server import FaultServer

CLAUDE = "anthropic/claude-sonnet-4-5"
ROLES = ("patient", "clinician", "judge")


@pytest.mark.parametrize("model", [CLAUDE, "openai/gpt-4o-mini"])
def test_estimate_matches_the_servers_counts_given_the_reply_lengths(tmp_path, model):
    """Told the replies' length, the estimate rebuilds every request (prompts, history
    growth, judge transcript) and the provider's cache reads and writes: input, cached and
    billed tokens and dollars per role all match what the server counted."""
    with FaultServer(cache=True, cache_min_tokens=1024, reply_words=60) as srv:
        base = srv.base if model == CLAUDE else srv.url
        specs = {r: ModelSpec(model=model, api_base=base) for r in ROLES}
        opts = RunOptions(**specs, limit=3, turns=16, out=tmp_path / "run", concurrency=3, progress=False)
        s = run_benchmark(opts, echo=None)
        server_billed = srv.billing["billed_input_tokens_x1000"] / 1000
    measured = s["tokens"]
    # The summary's billed input (recorded reads and writes at the price map's ratios) is what the server billed.
    assert sum(measured[r]["billed_input_tokens"] for r in ROLES) == pytest.approx(server_billed, abs=3)
    assert s["n_judged"] == 3 and all(measured[r]["cached_tokens"] > 0 for r in ROLES)
    replies = {r: round(v["completion_tokens"] / v["calls"]) for r, v in measured.items()}
    est = estimate_run(prepare(opts), replies)
    for r in ROLES:
        assert est[r]["calls"] == measured[r]["calls"]
        for key in ("prompt_tokens", "cached_tokens", "billed_input_tokens", "cost_usd"):
            assert est[r][key] == pytest.approx(measured[r][key], rel=0.03), (r, key)
    default = estimate_run(prepare(opts))  # assumes longer replies than this server gives
    assert all(default[r]["prompt_tokens"] > est[r]["prompt_tokens"] for r in ROLES)
