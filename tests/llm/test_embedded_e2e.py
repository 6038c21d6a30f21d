"""End to end with the real embedded model (SmolLM2-135M-Instruct through llama.cpp)."""

import json

import pytest

from mindeval.cli import main

pytestmark = pytest.mark.slow


def test_embedded_model_run_gives_five_valid_scores(tmp_path):
    out = tmp_path / "D"
    assert main(["run", "--quiet", "--profiles", "demo", "--limit", "1", "--turns", "2", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["clinician"] == summary["patient"] == summary["judge"] == "local/smollm2"
    judg = [json.loads(x) for x in (out / "judgments.jsonl").read_text().splitlines()]
    assert len(judg) == 1 and judg[0]["parse_status"] == "ok"
    scores = judg[0]["scores"]
    assert set(scores) == {"CAC", "EPC", "AR", "TRA", "ASCQ"}
    assert all(isinstance(v, int) and 1 <= v <= 6 for v in scores.values())
    rows = [json.loads(x) for x in (out / "interactions.jsonl").read_text().splitlines()]
    msgs = rows[0]["messages"]
    assert [m["role"] for m in msgs] == ["user", "assistant", "user"] and msgs[0]["content"] == "Hello."
    assert all(m["content"].strip() for m in msgs)
    assert summary["tokens"]["judge"]["prompt_tokens"] > 500
