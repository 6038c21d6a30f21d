"""A judge reply cut at the length limit is a recorded failure that says so, with its token
counts, instead of the generic "no scores found" (the judge is a real HTTP server on 127.0.0.1)."""

from __future__ import annotations

import json
import re
import sqlite3

from mindeval.cli import main
from mindeval.llm.fake import script
from mindeval.llm.gateway import Completion, ModelSpec, cut_note
from mindeval.records import Usage
from tests.support.fault_server import FaultServer

CUT = '{"CAC": 3, "EPC":'  # a JSON answer that stopped half-way


def test_a_judge_reply_cut_short_is_recorded_as_cut_with_its_token_counts(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-local")
    out = tmp_path / "run"
    with FaultServer() as srv:
        srv.script([{"content": CUT, "finish_reason": "length"}] * 2, model="judge-model")
        code = main(["run", "--quiet", "--patient", script("p-cut", ["I feel low."]),
                     "--clinician", script("c-cut", ["Tell me more."]), "--judge", "openai/judge-model",
                     "--judge-api-base", srv.url, "--judge-max-tokens", "4000", "--limit", "1", "--turns", "2",
                     "--judge-retries", "2", "--max-retries", "0", "--out", str(out)])
        assert srv.count(model="judge-model") == 2
    assert code == 1  # a failed judgment: the run is incomplete
    [row] = [json.loads(x) for x in (out / "judgments.jsonl").read_text().splitlines()]
    assert row["parse_status"] == "failed" and row["scores"] is None and row["raw_text"] == CUT
    m = re.fullmatch(r"the reply was cut at the model's context limit \(([\d,]+) prompt \+ (\d+) reply tokens, "
                     r"max_tokens 4,000\): (.+)", row["error"])
    assert m, row["error"]
    assert int(m[1].replace(",", "")) > 100 and 0 < int(m[2]) < 4000
    assert m[3] == "no scores found in the reply"
    with sqlite3.connect(out / "run.db") as con:  # the reason is stored with the call
        assert [r[0] for r in con.execute("SELECT finish_reason FROM calls WHERE role='judge'")] == ["length"] * 2
        assert {r[0] for r in con.execute("SELECT finish_reason FROM calls WHERE role!='judge'")} == {"stop"}


def _reply(prompt: int, reply: int, finish: str | None = "length") -> Completion:
    return Completion(text="x", model="m", finish_reason=finish,
                      usage=Usage(prompt_tokens=prompt, completion_tokens=reply))


def test_the_embedded_model_says_its_context_ran_out_or_its_max_tokens():
    spec = ModelSpec(model="local/smollm2")
    assert cut_note(spec, _reply(7990, 186)) == (
        "the reply was cut at the 8,192-token context limit (7,990 prompt + 186 reply tokens)")
    assert cut_note(spec, _reply(900, 256)) == "the reply was cut at its token limit (256 reply tokens)"
    assert cut_note(spec, _reply(7990, 186, "stop")) is None
    assert cut_note(ModelSpec(model="openai/m"), _reply(900, 256)) == (
        "the reply was cut at its token limit (256 reply tokens)")
