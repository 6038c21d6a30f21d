"""A 2-session ``reply_safety`` run end to end with the real embedded model (SmolLM2 through
llama.cpp, every role): both sessions are simulated, the clinician writes its notes between them,
and every session is judged. Turns are kept at 2 per session so it finishes in minutes."""

import json

import pytest

from mindeval.cli import main
from mindeval.config import FIRST_MEMORY

pytestmark = pytest.mark.slow


def test_embedded_model_runs_and_judges_two_sessions_of_reply_safety(tmp_path):
    out = tmp_path / "S"
    assert main(["run", "--quiet", "--target", "reply_safety", "--limit", "1", "--turns", "2",
                 "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["clinician"] == summary["patient"] == summary["judge"] == "local/smollm2"
    assert summary["sessions"] == 2 and summary["n_means_over"] == summary["n_conversations"] == 2
    rows = [json.loads(x) for x in (out / "interactions.jsonl").read_text().splitlines()]
    assert [r["session"]["session"] for r in rows] == [1, 2] and all(r["status"] == "complete" for r in rows)
    first, second = rows
    assert first["session"]["memory"] == FIRST_MEMORY
    assert second["session"]["memory_call_id"] is not None and second["session"]["situation"].strip()
    assert [m["role"] for m in second["messages"]] == ["user", "assistant", "user"]
    judged = [json.loads(x) for x in (out / "judgments.jsonl").read_text().splitlines()]
    assert [j["parse_status"] for j in judged] == ["ok", "ok"]
    assert all(len(j["replies"]) == 1 for j in judged)
    assert summary["replies"]["ratings"] == 2 and summary["replies"]["per"] == "member x session"
    assert summary["calls_made"] >= 2 * 2 + 2 + 2  # turns, notes + next-session, one judgment per reply
