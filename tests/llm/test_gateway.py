"""The litellm gateway: providers, empty replies, unknown providers, offline import."""

import subprocess
import sys

import pytest

from mindeval.errors import ModelCallError
from mindeval.llm import ModelSpec, complete
from mindeval.llm.fake import CALLS, script
from mindeval.llm.retry import RetryPolicy


def test_fake_echo_through_litellm():
    c = complete(ModelSpec(model="fake/echo"), [{"role": "user", "content": "hi"}])
    assert c.text.startswith("Reply 1") and c.usage.completion_tokens > 0


def test_empty_reply_is_an_error_after_bounded_retries():
    before = sum(CALLS.values())
    with pytest.raises(ModelCallError, match=r"^clinician fake/empty: empty reply \(3 attempts\)$"):
        complete(ModelSpec(model="fake/empty"), [{"role": "user", "content": "hi"}], role="clinician",
                 policy=RetryPolicy(empty_retries=2))
    assert sum(CALLS.values()) - before == 3


def test_think_only_reply_is_empty():
    m = script("thinkonly", ["<think>hmm</think>   "] * 2)
    with pytest.raises(ModelCallError, match="empty reply"):
        complete(ModelSpec(model=m), [{"role": "user", "content": "hi"}], policy=RetryPolicy(empty_retries=1))


def test_empty_reply_then_text_is_retried_not_defaulted():
    m = script("emptythen", ["", "  ", "A real answer."])
    c = complete(ModelSpec(model=m), [{"role": "user", "content": "hi"}], policy=RetryPolicy(empty_retries=2))
    assert c.text == "A real answer." and c.attempts == 3


@pytest.mark.parametrize("model, msg", [("nosuchprovider/x", "unknown provider 'nosuchprovider'"),
                                        ("gpt-4o", "no provider prefix")])
def test_unknown_provider(model, msg):
    with pytest.raises(ModelCallError, match=msg):
        complete(ModelSpec(model=model), [{"role": "user", "content": "hi"}])


def test_spec_params_only_set_values():
    s = ModelSpec(model="openai/x", temperature=0.2, api_base="http://127.0.0.1:1/v1")
    assert s.params() == {"temperature": 0.2, "api_base": "http://127.0.0.1:1/v1"}
    assert "api_key" not in ModelSpec.model_fields


def test_import_does_not_touch_network():
    """Importing mindeval and litellm with sockets disabled must work (cost map is local)."""
    code = (
        "import socket\n"
        "def boom(*a, **k): raise RuntimeError('network used')\n"
        "socket.socket.connect = boom\n"
        "socket.create_connection = boom\n"
        "socket.getaddrinfo = boom\n"
        "import mindeval\n"
        "from mindeval.llm.gateway import litellm_module\n"
        "litellm_module()\n"
        "from mindeval.llm import complete, ModelSpec\n"
        "print(complete(ModelSpec(model='fake/echo'), [{'role':'user','content':'x'}]).text)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "network used" not in r.stderr
