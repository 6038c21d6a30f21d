"""Custom clinicians: a Python class/callable and an HTTP chat endpoint."""

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from mindeval.cli import main
from mindeval.errors import ModelCallError
from mindeval.llm import ModelSpec, complete

sys.path.insert(0, str(Path(__file__).parent))
BASE = ["run", "--quiet", "--patient", "fake/echo", "--judge", "fake/judge", "--limit", "1", "--turns", "4"]


def test_python_class_clinician(tmp_path):
    out = tmp_path / "D"
    assert main([*BASE, "--clinician", "custom_clinician_example:Echo", "--out", str(out)]) == 0
    row = json.loads((out / "interactions.jsonl").read_text().splitlines()[0])
    clin = [m["content"] for m in row["messages"] if m["role"] == "assistant"]
    assert clin[0] == "I hear you: Hello." and len(clin) == 2
    import custom_clinician_example  # noqa: F401

    from mindeval.llm.custom import _objects

    seen = _objects["custom_clinician_example:Echo"].seen
    system = seen[0][0]["content"]
    profile = json.loads((Path(__file__).parents[2] / "data" / "demo_profiles.jsonl").read_text().splitlines()[0])
    assert profile["member_attributes"]["name"] in system
    assert profile["member_narrative"][:50] not in system  # intake only


def test_plain_function_clinician():
    c = complete(ModelSpec(model="custom_clinician_example:plain"), [{"role": "user", "content": "x"}])
    assert c.text == "A plain reply."


def test_missing_custom_clinician_is_clear(tmp_path, capsys):
    assert main([*BASE, "--clinician", "no_such_module_xyz:Bot", "--out", str(tmp_path / "D")]) == 2
    assert "cannot load custom clinician" in capsys.readouterr().err


class Chat(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        text = "" if body["messages"][-1]["content"] == "EMPTY" else f"HTTP reply to {len(body['messages'])} messages"
        data = json.dumps({"content": text}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def endpoint():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Chat)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/chat"
    srv.shutdown()


def test_http_endpoint_clinician(tmp_path, endpoint):
    out = tmp_path / "D"
    assert main([*BASE, "--clinician", endpoint, "--out", str(out)]) == 0
    row = json.loads((out / "interactions.jsonl").read_text().splitlines()[0])
    assert row["messages"][1]["content"] == "HTTP reply to 2 messages"
    with pytest.raises(ModelCallError, match="empty reply"):
        complete(ModelSpec(model=endpoint), [{"role": "user", "content": "EMPTY"}])


def test_http_endpoint_down_is_a_model_error():
    with pytest.raises(ModelCallError, match="127.0.0.1:9"):
        complete(ModelSpec(model="http://127.0.0.1:9/chat"), [{"role": "user", "content": "x"}])
