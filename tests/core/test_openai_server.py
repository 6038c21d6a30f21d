"""litellm's OpenAI path against a real OpenAI-compatible HTTP server on 127.0.0.1."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from mindeval.cli import main
from mindeval.llm import ModelSpec, complete

SECRET = "sk-test-" + "Z" * 32


class Handler(BaseHTTPRequestHandler):
    requests: list = []

    def log_message(self, *a):  # keep test output quiet
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        Handler.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
        last = body["messages"][-1]["content"]
        judge = "CAC" in body["messages"][0]["content"] and "ASCQ" in body["messages"][0]["content"]
        content = ('{"CAC": 4, "EPC": 5, "AR": 3, "TRA": 4, "ASCQ": 2}' if judge
                   else f"<think>consider: {last[:20]}</think>Thanks for telling me that.")
        reply = {
            "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content, "reasoning_content": "provider trace"}}],
            "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
        }
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def server():
    Handler.requests = []
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1"
    srv.shutdown()


def test_complete_via_openai_path(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    spec = ModelSpec(model="openai/test-model", api_base=server, temperature=0.3, max_tokens=50)
    c = complete(spec, [{"role": "system", "content": "s"}, {"role": "user", "content": "hello"}])
    assert c.text == "Thanks for telling me that."
    assert c.reasoning.startswith("provider trace") and "consider: hello" in c.reasoning
    assert c.usage.prompt_tokens == 11 and c.usage.completion_tokens == 7
    req = Handler.requests[-1]
    assert req["path"] == "/v1/chat/completions" and req["body"]["model"] == "test-model"
    assert req["body"]["temperature"] == 0.3 and req["body"]["max_tokens"] == 50
    assert req["auth"] == f"Bearer {SECRET}"


def test_full_run_against_server_never_stores_the_key(server, monkeypatch, tmp_path):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    out = tmp_path / "D"
    rc = main(["run", "--quiet", "--limit", "1", "--turns", "2", "--out", str(out),
               *[x for r in ("patient", "clinician", "judge")
                 for x in (f"--{r}", "openai/test-model", f"--{r}-api-base", server)]])
    assert rc == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_judged"] == 1 and summary["CAC"] == 4
    turns = [json.loads(x) for x in (out / "interactions.jsonl").read_text().splitlines()][0]["turns"]
    assert turns[1]["reasoning"].startswith("provider trace") and "<think>" not in turns[1]["content"]
    for f in out.iterdir():
        assert SECRET.encode() not in f.read_bytes(), f"API key leaked into {f.name}"
