"""MindEval's own HTTP path to OpenAI-compatible servers, against the loopback fault server.

The requests must be those litellm sent (bodies pinned from today's main), fail and retry
like litellm's path did, and never import litellm; a run made by main through litellm
resumes without one new call.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from provkit import FAST, SECRET

from mindeval.cli import main
from mindeval.errors import ModelCallError
from mindeval.llm.gateway import ModelSpec, complete
from mindeval.llm.providers import provider_of
from mindeval.llm.retry import RetryPolicy

ROOT = Path(__file__).resolve().parents[2]
MSGS = [{"role": "system", "content": "S"}, {"role": "user", "content": "hi"}]
RF = {"type": "json_schema", "json_schema": {"name": "s", "schema": {
    "type": "object", "properties": {"A": {"type": "integer"}}, "required": ["A"]}}}
BASE_BODY = {"messages": MSGS, "model": "m"}
SET = {"temperature": 0.3, "max_tokens": 50, "reasoning_effort": "low", "extra": {"top_p": 0.5}}
SENT = {"max_tokens": 50, "reasoning_effort": "low", "temperature": 0.3, "top_p": 0.5}


def vllm(server, **kw) -> ModelSpec:
    return ModelSpec(model="hosted_vllm/m", api_base=server.url, **kw)


@pytest.mark.parametrize("provider", ["hosted_vllm", "openai"])
@pytest.mark.parametrize("settings, options, body", [
    ({}, {}, {}),
    ({}, {"seed": 3, "response_format": RF}, {"seed": 3, "response_format": RF}),
    (SET, {}, SENT),
    (SET, {"seed": 3, "response_format": RF}, {**SENT, "seed": 3, "response_format": RF}),
])
def test_the_request_body_is_the_one_litellm_sent(server, provider, settings, options, body):
    """Bodies as litellm 1.102.4 posted them on main (captured against this server)."""
    server.script([{"content": '{"A": 1}'}])
    complete(ModelSpec(model=f"{provider}/m", api_base=server.url, **settings), MSGS, **options)
    req = server.requests[-1]
    assert req["path"] == "/v1/chat/completions"
    assert req["body"] == {**BASE_BODY, **body}
    assert req["auth"] == (f"Bearer {SECRET}" if provider == "openai" else None)


def test_a_429_waits_its_retry_after_then_succeeds(server):
    server.script([{"status": 429, "retry_after": 0.6}, "ok"])
    started = time.monotonic()
    c = complete(vllm(server), MSGS, role="clinician", policy=FAST)
    assert time.monotonic() - started >= 0.6 and c.attempts == 2 and server.count() == 2


@pytest.mark.parametrize("fault", ["500", "503", "drop"])
def test_server_errors_are_retried(server, fault):
    server.script([fault, "ok"])
    c = complete(vllm(server), MSGS, role="patient", policy=FAST)
    assert c.attempts == 2 and server.count(outcome=fault) == 1


def test_5xx_gives_up_after_the_policy_with_the_providers_message(server):
    server.script(["503"] * 5)
    with pytest.raises(ModelCallError) as info:
        complete(vllm(server), MSGS, role="judge", policy=RetryPolicy(max_retries=1, base_delay_s=0.01))
    assert server.count() == 2
    assert str(info.value).startswith("judge hosted_vllm/m: 503 ServiceUnavailableError: The engine is currently "
                                      "overloaded") and "gave up after 2 attempts" in str(info.value)


def test_a_hanging_server_times_out_and_is_retried(server):
    server.script(["hang", "ok"])
    started = time.monotonic()
    c = complete(vllm(server, timeout_s=0.5), MSGS, role="clinician", policy=FAST)
    assert c.attempts == 2 and c.text and server.count() == 2
    assert server.requests[1]["at"] - started >= 0.5  # the first was cut at its 0.5 s timeout, then retried


def test_401_fails_at_once_with_one_line_and_no_key(server, monkeypatch):
    monkeypatch.setenv("HOSTED_VLLM_API_KEY", SECRET)
    server.script(["401", "ok"])
    with pytest.raises(ModelCallError) as info:
        complete(vllm(server), MSGS, role="clinician", policy=FAST)
    line = str(info.value)
    assert server.count() == 1 and info.value.status == 401 and not info.value.transient
    assert line.startswith("clinician hosted_vllm/m: 401 AuthenticationError: Incorrect API key provided")
    assert SECRET not in line and "\n" not in line
    assert server.requests[-1]["auth"] == f"Bearer {SECRET}"


def test_empty_replies_are_asked_again_then_an_error(server):
    server.script(["empty", "empty", "empty"])
    with pytest.raises(ModelCallError, match=r"^patient hosted_vllm/m: empty reply \(3 attempts\)$"):
        complete(vllm(server), MSGS, role="patient", policy=RetryPolicy(empty_retries=2))
    assert server.count() == 3


def test_a_reply_cut_at_the_length_limit_keeps_its_finish_reason(server):
    server.script([{"content": "Partial answer", "finish_reason": "length"}])
    c = complete(vllm(server, max_tokens=5), MSGS, role="judge")
    assert c.text == "Partial answer" and c.finish_reason == "length"


def test_a_refused_connection_names_the_server(monkeypatch):
    spec = ModelSpec(model="hosted_vllm/m", api_base="http://127.0.0.1:9/v1")
    with pytest.raises(ModelCallError, match=r"cannot connect to http://127\.0\.0\.1:9/v1"):
        complete(spec, MSGS, role="clinician", policy=RetryPolicy(max_retries=1, base_delay_s=0.01))


def test_usage_and_cost_are_accounted_from_the_bundled_price_map(server):
    from mindeval.llm.gateway import litellm_module

    c = complete(ModelSpec(model="openai/gpt-4o-mini", api_base=server.url), MSGS, role="clinician")
    assert c.usage.prompt_tokens > 0 and c.usage.completion_tokens > 0
    info = litellm_module().get_model_info(model="openai/gpt-4o-mini")
    want = c.usage.prompt_tokens * info["input_cost_per_token"] + c.usage.completion_tokens * info["output_cost_per_token"]
    assert c.cost_usd == pytest.approx(want, rel=1e-12)


def test_only_openai_compatible_servers_take_the_lean_path():
    assert provider_of("hosted_vllm/m").route("http://h/v1") == "http"
    assert provider_of("openai/m").route("http://h/v1") == "http"
    assert provider_of("openai/gpt-4o").route(None) == "litellm"  # OpenAI itself: litellm's model rules
    assert provider_of("anthropic/claude-sonnet-4-5").route("http://h") == "litellm"
    assert provider_of("fake/echo").route(None) == "inprocess"


CHILD = """
import json, sys
from mindeval.cli import main
rc = main(sys.argv[1:])
print(json.dumps({"rc": rc, "litellm": "litellm" in sys.modules}))
"""


def _child(args: list[str], tmp_path: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run([sys.executable, "-c", CHILD, *args], capture_output=True, text=True, timeout=300,
                       env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_a_fake_model_run_never_imports_litellm(tmp_path):
    out = _child(["run", "--patient", "fake/echo", "--clinician", "fake/echo", "--judge", "fake/judge",
                  "--limit", "1", "--turns", "2", "--out", str(tmp_path / "run"), "--quiet"], tmp_path)
    assert out == {"rc": 0, "litellm": False}


def test_an_openai_compatible_run_never_imports_litellm(server, tmp_path):
    args = ["run", "--limit", "1", "--turns", "2", "--out", str(tmp_path / "run"), "--quiet"]
    for role in ("patient", "clinician", "judge"):
        args += [f"--{role}", f"hosted_vllm/{role}-model", f"--{role}-api-base", server.url]
    assert _child(args, tmp_path) == {"rc": 0, "litellm": False}
    assert server.count() == 3


CUSTOM_CHILD = """
import json, sys, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from mindeval.llm.gateway import ModelSpec, complete

class Reply(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        data = json.dumps({"content": "Hello."}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

httpd = ThreadingHTTPServer(("127.0.0.1", 0), Reply)
threading.Thread(target=httpd.serve_forever, daemon=True).start()
c = complete(ModelSpec(model=f"http://127.0.0.1:{httpd.server_address[1]}/reply"), [{"role": "user", "content": "hi"}])
print(json.dumps({"text": c.text, "cost": c.cost_usd, "litellm": "litellm" in sys.modules}))
"""


def test_a_custom_http_clinician_has_no_price_and_never_imports_litellm():
    """Its reply was held back by a litellm import (on the gateway's one event loop) to look up a
    price it cannot have: 60-90 s for the first role-play reply beside a CPU hog."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run([sys.executable, "-c", CUSTOM_CHILD], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    assert json.loads(r.stdout.strip().splitlines()[-1]) == {"text": "Hello.", "cost": None, "litellm": False}


FIXTURE = Path(__file__).parent / "data" / "run_before_lean_path"
FIXTURE_BASE = "http://127.0.0.1:9/v1"  # nothing listens there: a request sent would fail the run


def test_a_run_made_through_litellm_resumes_without_a_new_call(tmp_path, capsys):
    """Its turns and judgment forgotten, the run asks again: every request (same hash) is in the call log."""
    out = tmp_path / "run"
    out.mkdir()
    for name in ("run.db", "config.json"):
        shutil.copy(FIXTURE / name, out / name)
    with sqlite3.connect(out / "run.db") as db:
        db.execute("DELETE FROM judgments")
        db.execute("DELETE FROM turns WHERE call_id IS NOT NULL")
        db.execute("UPDATE interactions SET status = 'running'")
    args = ["run", "--profiles", "demo", "--limit", "1", "--turns", "2", "--out", str(out),
            "--patient", "hosted_vllm/patient-model", "--clinician", "openai/gpt-4o-mini",
            "--clinician-temperature", "0.3", "--judge", "openai/gpt-4o-mini"]
    for role in ("patient", "clinician", "judge"):
        args += [f"--{role}-api-base", FIXTURE_BASE]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "calls made: 0   reused from store: 3" in printed
    judged = [json.loads(line) for line in (out / "judgments.jsonl").read_text().splitlines()]
    assert len(judged) == 1 and judged[0]["parse_status"] == "ok"
