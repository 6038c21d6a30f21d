"""A local model server that fails the way providers fail (tests and benchmarks only).

One home for every test that needs a real HTTP model endpoint on 127.0.0.1. It speaks

* the OpenAI chat-completions API (``POST …/chat/completions``; use ``openai/NAME`` with
  ``api_base=server.url``), with optional automatic prefix caching accounted the way OpenAI
  bills it (``usage.prompt_tokens_details.cached_tokens``, read at 0.5×);
* the Anthropic Messages API (``POST …/messages``; use ``anthropic/NAME`` with
  ``api_base=server.base``), with explicit ``cache_control`` breakpoints accounted the way
  Anthropic bills them (read 0.1×, write 1.25×, ``cache_read_input_tokens`` /
  ``cache_creation_input_tokens``).

What a request gets is decided, in order, by a scripted queue of actions for its model
(or for ``"*"``), then by random fault rates, then by the rate limit, else a normal reply.
Actions: ``"ok"``, ``"429"`` (with ``Retry-After``), ``"500"``, ``"503"``, ``"400"``,
``"401"``, ``"404"``, ``"hang"`` (accept, never answer), ``"drop"`` (close the connection),
``"empty"`` (empty content), or ``{"content": "...", "reasoning": "..."}`` (a scripted
reply; see :data:`JUDGE_MALFORMED` and :func:`judge_json`). A dict may also carry
``status``, ``retry_after``, ``message`` and ``finish_reason`` (e.g. ``"length"``: a reply cut short); :data:`NONCE` (``<NONCE>``) in a scripted
``content`` becomes the judge request's answer code (``Answer code: …`` in the prompt).

Normal replies are deterministic in the request (crash tests compare transcripts): a
judge request (model name containing ``judge`` or a first message naming the five
axes) gets valid score JSON, anything else a few sentences of text.

Use in-process (``with FaultServer() as srv``) or as a separate process, so that its CPU
is not counted with the client's: ``python tests/support/fault_server.py --port 0 --config
JSON`` prints ``PORT`` on its first line; :func:`spawn` wraps that, and
``GET /_stats`` / ``POST /_config`` read and change a running server.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import re
import socket
import subprocess
import sys
import threading
import time
from collections import Counter, deque
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.request import Request, urlopen

AXES = ("CAC", "EPC", "AR", "TRA", "ASCQ")
JUDGE_MALFORMED = "I would rate this conversation as quite good overall."
ERROR_TEXT = {
    400: ("invalid_request_error", "Invalid value for 'messages': this request is malformed"),
    401: ("authentication_error", "Incorrect API key provided: sk-fau***ault"),
    403: ("permission_error", "Your organization is not allowed to use this model"),
    404: ("not_found_error", "The model does not exist or you do not have access to it"),
    408: ("timeout_error", "Request timed out upstream"),
    429: ("rate_limit_error", "Rate limit reached for requests per min. Please try again later"),
    500: ("api_error", "The server had an error while processing your request"),
    503: ("overloaded_error", "The engine is currently overloaded, please try again later"),
}
# What a caching provider bills for cached prompt tokens, as a multiple of the input price.
BILLING = {"openai": {"read": 0.5, "write": 1.0}, "anthropic": {"read": 0.1, "write": 1.25}}
MAX_BREAKPOINTS = 4  # Anthropic refuses a request with more cache_control blocks
LOOKBACK_BLOCKS = 20  # how far before a breakpoint Anthropic looks for an earlier cache entry
AUTO_STEP = 128  # OpenAI's automatic cache hits in steps of this many tokens


NONCE = "<NONCE>"  # in a scripted reply: replaced by the request's answer code
_CODE_RE = re.compile(r"^Answer code: ([0-9a-f]{16})$", re.MULTILINE)  # mindeval.judging.answer.ANSWER_CODE_RE


def judge_json(missing: str | None = None, seed: str = "", code: str | None = None) -> str:
    """A judge reply with all five scores (or without axis ``missing``); with ``code``
    (e.g. :data:`NONCE`) it carries the answer code as ``"answer_code"``."""
    h = hashlib.sha256(seed.encode()).hexdigest()
    scores = {ax: 1 + int(h[i * 2:i * 2 + 2], 16) % 6 for i, ax in enumerate(AXES) if ax != missing}
    return json.dumps({"answer_code": code, **scores} if code else scores)


def answer_code(body: dict[str, Any]) -> str | None:
    """The judge answer code named in a request body (last one), if any."""
    hits: list[str] = []
    for m in body.get("messages", []):
        content = m.get("content", "")
        parts = content if isinstance(content, list) else [{"text": content}]
        for p in parts:
            hits += _CODE_RE.findall(str(p.get("text", "")) if isinstance(p, dict) else str(p))
    for p in body.get("system", []) if isinstance(body.get("system"), list) else []:
        hits += _CODE_RE.findall(str(p.get("text", "")))
    return hits[-1] if hits else None


def request_text(request: dict[str, Any]) -> str:
    """The text of a recorded chat request's messages (one of :attr:`FaultServer.requests`), joined by newlines."""
    return "\n".join(m["content"] for m in request["body"]["messages"])


def count_tokens(text: str) -> int:
    """The server's token count: one per four characters (what a tokenizer roughly gives)."""
    return max(1, math.ceil(len(text) / 4))


class _Server(ThreadingHTTPServer):
    """Threaded, with a listen backlog that takes a burst of connections (a benchmark opens
    hundreds at once; the default of 5 drops them into TCP's 1 s retransmit)."""

    request_queue_size = 1024


class FaultServer:
    """A threaded HTTP server with scripted and random faults, counting every request."""

    def __init__(
        self,
        *,
        latency_s: float = 0.0,
        rates: dict[str, float] | None = None,
        rate_limit: tuple[int, float] | None = None,
        cache: bool = False,
        cache_min_tokens: int = 1024,
        reply_words: int = 30,
        hang_s: float = 600.0,
        retry_after_s: float = 1.0,
        seed: int = 0,
        port: int = 0,
    ) -> None:
        self.latency_s = latency_s
        self.rates: dict[str, float] = dict(rates or {})
        self.rate_limit = tuple(rate_limit) if rate_limit else None
        self.cache = cache
        self.cache_min_tokens = cache_min_tokens
        self.reply_words = reply_words
        self.hang_s = hang_s
        self.retry_after_s = retry_after_s  # the Retry-After of a 429 that does not name its own
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._scripts: dict[str, deque[Any]] = {}
        self._accepted: deque[float] = deque()
        self._cache_keys: set[str] = set()
        self.requests: list[dict[str, Any]] = []
        self.outcomes: Counter[str] = Counter()
        self.billing: Counter[str] = Counter()
        handler = type("Handler", (_Handler,), {"server_obj": self})
        self._httpd = _Server(("127.0.0.1", port), handler)
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle
    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base(self) -> str:
        """Root URL (the Anthropic provider's ``api_base``)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """OpenAI-compatible base URL (``api_base`` for ``openai/...`` models)."""
        return f"{self.base}/v1"

    def start(self) -> FaultServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()  # releases hanging handlers
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> FaultServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ configuration
    def script(self, actions: list[Any], model: str = "*") -> None:
        """Queue ``actions`` for the next requests to ``model`` (``"*"``: any model)."""
        with self._lock:
            self._scripts.setdefault(model, deque()).extend(actions)

    def configure(self, **changes: Any) -> None:
        """Change settings of a running server (``rates``, ``latency_s``, ``rate_limit``, ...)."""
        with self._lock:
            for key, val in changes.items():
                if key == "script":
                    for model, actions in val.items():
                        self._scripts.setdefault(model, deque()).extend(actions)
                elif key == "reset":
                    self.requests.clear()
                    self.outcomes.clear()
                    self.billing.clear()
                    self._cache_keys.clear()
                    self._accepted.clear()
                elif key == "rate_limit":
                    self.rate_limit = tuple(val) if val else None
                elif hasattr(self, key) and not key.startswith("_"):
                    setattr(self, key, val)
                else:
                    raise ValueError(f"unknown setting {key!r}")

    # ------------------------------------------------------------------ accounting
    def count(self, model: str | None = None, outcome: str | None = None) -> int:
        """Requests received (optionally for one model name and/or with one outcome)."""
        with self._lock:
            return sum(
                1 for r in self.requests
                if (model is None or r["model"] == model) and (outcome is None or r["outcome"] == outcome)
            )

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {
                "requests": len(self.requests),
                "outcomes": dict(self.outcomes),
                "by_model": dict(Counter(r["model"] for r in self.requests)),
                "billing": dict(self.billing),
            }

    # ------------------------------------------------------------------ decisions
    def _decide(self, model: str) -> Any:
        with self._lock:
            for key in (model, "*"):
                queue = self._scripts.get(key)
                if queue:
                    return queue.popleft()
            draw = self._rng.random()
            acc = 0.0
            for action, rate in sorted(self.rates.items()):
                acc += rate
                if draw < acc:
                    return action
            if self.rate_limit:
                limit, window = self.rate_limit
                now = time.monotonic()
                while self._accepted and now - self._accepted[0] >= window:
                    self._accepted.popleft()
                if len(self._accepted) >= limit:
                    wait = window - (now - self._accepted[0])
                    return {"status": 429, "retry_after": max(0.001, wait), "outcome": "429-limit"}
                self._accepted.append(now)
            return "ok"

    def _record(self, path: str, headers: Any, body: dict[str, Any], outcome: str) -> None:
        with self._lock:
            self.requests.append({
                "path": path, "model": str(body.get("model", "")), "outcome": outcome,
                "auth": headers.get("Authorization") or headers.get("x-api-key"), "body": body,
                "at": time.monotonic(),  # when it arrived (a retry's wait shows between two)
            })
            self.outcomes[outcome] += 1

    def _sleep(self, seconds: float) -> None:
        self._stop.wait(seconds)

    # ------------------------------------------------------------------ replies
    def reply_text(self, blocks: list[tuple[str, str, bool]], model: str) -> str:
        code = next((c for _, text, _ in reversed(blocks) for c in reversed(_CODE_RE.findall(text))), None)
        stable = [(r, t[:t.find("\n\nAnswer code: ") + 1] if "\n\nAnswer code: " in t else t, m)
                  for r, t, m in blocks]  # the answer code is random per run
        digest = hashlib.sha256(json.dumps(stable).encode()).hexdigest()
        head = "".join(text for role, text, _ in blocks if role == blocks[0][0]) if blocks else ""
        if "REPLY UNDER JUDGMENT" in head:  # reply-level judging: one listed id per key of the shape line
            shape = next((ln for ln in head.splitlines() if ln.startswith('{"')), "")
            keys = {k: ids.split("|") for k, ids in re.findall(r'"(\w+)": "<([^>]*)>"', shape) if k != "rationale"}
            pick = int(digest[:8], 16)
            return json.dumps({**({"answer_code": code} if code else {}),
                               **{k: ids[(pick >> i) % len(ids)] for i, (k, ids) in enumerate(keys.items())}})
        if "judge" in model or all(ax in head for ax in AXES):
            return judge_json(seed=digest, code=code)
        n = sum(1 for role, _, _ in blocks if role == "assistant") + 1
        words = ["I", "hear", "you", "and", "that", "sounds", "hard", "to", "carry", "alone."]
        body = " ".join(words[(i + int(digest[:4], 16)) % len(words)] for i in range(self.reply_words))
        return f"Reply {n} ({digest[:8]}). {body}"

    def lookup(self, blocks: list[tuple[str, str, bool]], api: str, model: str = "") -> dict[str, Any]:
        """Prompt tokens split into uncached / cache read / cache write, as the provider would bill.

        Anthropic (explicit breakpoints): a cache entry is written at each breakpoint whose
        prefix has at least ``cache_min_tokens``; a request reads the longest prefix written
        earlier that ends at a block boundary within 20 blocks before one of its own
        breakpoints, and writes the rest up to its last breakpoint. OpenAI: every prefix of
        at least ``cache_min_tokens`` is cached, free, and a request reads the longest one it
        shares, in steps of :data:`AUTO_STEP` tokens. Entries are per model and become
        readable once the writing request is answered (:meth:`commit`).
        """
        sizes = [count_tokens(text) + 4 for _, text, _ in blocks]
        prefix = [0]
        keys = []
        h = hashlib.sha256(model.encode())
        for (role, text, _), size in zip(blocks, sizes):
            h.update(f"{role}\0{text}\0".encode())
            keys.append(h.hexdigest())
            prefix.append(prefix[-1] + size)
        total = prefix[-1]
        read = write = 0
        new_keys: list[str] = []
        if self.cache and api == "anthropic":
            marks = [i for i, b in enumerate(blocks) if b[2]]
            reachable = {i for m in marks for i in range(max(0, m - LOOKBACK_BLOCKS + 1), m + 1)}
            with self._lock:
                hits = [i for i in sorted(reachable) if keys[i] in self._cache_keys]
            if hits:
                read = prefix[hits[-1] + 1]
            new_keys = [keys[i] for i in marks if prefix[i + 1] >= self.cache_min_tokens]
            if marks and prefix[marks[-1] + 1] >= self.cache_min_tokens:
                write = max(0, prefix[marks[-1] + 1] - read)
        elif self.cache:
            steps = self._auto_steps(blocks, model)
            new_keys = [key for tokens, key in steps if tokens >= self.cache_min_tokens]
            with self._lock:
                hits = [tokens for tokens, key in steps if key in self._cache_keys]
            read = min(max(hits, default=0), total)
        return {"total": total, "read": read, "write": write, "uncached": total - read - write,
                "api": api, "keys": new_keys}

    @staticmethod
    def _auto_steps(blocks: list[tuple[str, str, bool]], model: str) -> list[tuple[int, str]]:
        """``(tokens, key)`` of every :data:`AUTO_STEP`-token prefix of the prompt, across
        block boundaries (OpenAI caches the longest common prefix in such steps). A block is
        its text after a 16-character header: 4 tokens, as :func:`count_tokens` + 4 counts."""
        flat = "".join(f"{role:>15}\0{text}" for role, text, _ in blocks)
        h = hashlib.sha256(model.encode())
        step = 4 * AUTO_STEP
        out = []
        for end in range(step, len(flat) + 1, step):
            h.update(flat[end - step:end].encode())
            out.append((end // 4, h.hexdigest()))
        return out

    def commit(self, bill: dict[str, Any]) -> None:
        """Bill a request answered now and make the entries it wrote readable."""
        price = BILLING[bill["api"]]
        with self._lock:
            self._cache_keys.update(bill["keys"])
            self.billing["prompt_tokens"] += bill["total"]
            self.billing["cache_read_tokens"] += bill["read"]
            self.billing["cache_write_tokens"] += bill["write"]
            self.billing["billed_input_tokens_x1000"] += round(
                1000 * (bill["uncached"] + price["read"] * bill["read"] + price["write"] * bill["write"]))

    def account(self, blocks: list[tuple[str, str, bool]], api: str, model: str = "") -> dict[str, Any]:
        """:meth:`lookup` and :meth:`commit` at once (a request answered immediately)."""
        bill = self.lookup(blocks, api, model)
        self.commit(bill)
        return bill


def _blocks_openai(body: dict[str, Any]) -> list[tuple[str, str, bool]]:
    out = []
    for m in body.get("messages", []):
        content = m.get("content")
        if isinstance(content, list):
            for part in content:
                out.append((m["role"], str(part.get("text", "")), bool(part.get("cache_control"))))
        else:
            out.append((m["role"], str(content or ""), False))
    return out


def _blocks_anthropic(body: dict[str, Any]) -> list[tuple[str, str, bool]]:
    out = []
    system = body.get("system")
    if isinstance(system, str):
        out.append(("system", system, False))
    elif isinstance(system, list):
        out += [("system", str(p.get("text", "")), bool(p.get("cache_control"))) for p in system]
    for m in body.get("messages", []):
        content = m.get("content")
        if isinstance(content, str):
            out.append((m["role"], content, False))
            continue
        for part in content or []:
            out.append((m["role"], str(part.get("text", "")), bool(part.get("cache_control"))))
    return out


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_obj: FaultServer

    def log_message(self, *args: Any) -> None:  # keep test output quiet
        pass

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, val in (headers or {}).items():
            self.send_header(key, val)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/_stats"):
            self._send(200, self.server_obj.stats())
        else:
            self._send(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:
        srv = self.server_obj
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        if self.path.rstrip("/").endswith("/_config"):
            srv.configure(**body)
            self._send(200, {"ok": True})
            return
        api = "anthropic" if self.path.rstrip("/").endswith("/messages") else "openai"
        model = str(body.get("model", ""))
        action = srv._decide(model)
        if isinstance(action, str) and action.isdigit():
            action = {"status": int(action)}
        outcome = action.get("outcome") or str(action.get("status") or "content") if isinstance(action, dict) else action
        blocks = _blocks_anthropic(body) if api == "anthropic" else _blocks_openai(body)
        marks = sum(1 for b in blocks if b[2])
        if api == "anthropic" and marks > MAX_BREAKPOINTS and not (isinstance(action, dict) and action.get("status")):
            action = {"status": 400, "outcome": "400-breakpoints", "message":
                      f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {marks}."}
            outcome = action["outcome"]
        srv._record(self.path, self.headers, body, outcome)
        replies = action not in ("hang", "drop") and not (isinstance(action, dict) and action.get("status"))
        bill = srv.lookup(blocks, api, model) if replies else None  # what is cached when it arrives
        if srv.latency_s:
            srv._sleep(srv.latency_s)
        if action == "hang":
            srv._sleep(srv.hang_s)
            self.close_connection = True
            return
        if action == "drop":
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if bill is None:
            self._error(api, int(action["status"]), action)
            return
        reasoning = action.get("reasoning") if isinstance(action, dict) else None
        if action == "empty":
            text = ""
        elif isinstance(action, dict) and "content" in action:
            text = str(action["content"]).replace(NONCE, answer_code(body) or NONCE)
        else:
            text = srv.reply_text(blocks, model)
        srv.commit(bill)
        out_tokens = count_tokens(text) if text else 0
        finish = str(action.get("finish_reason") or "stop") if isinstance(action, dict) else "stop"
        if api == "anthropic":
            self._send(200, {
                "id": "msg_fault", "type": "message", "role": "assistant", "model": model,
                "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                "usage": {"input_tokens": bill["uncached"], "output_tokens": out_tokens,
                          "cache_read_input_tokens": bill["read"],
                          "cache_creation_input_tokens": bill["write"]},
            })
            return
        self._send(200, {
            "id": "chatcmpl-fault", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "finish_reason": finish, "message": {
                "role": "assistant", "content": text, **({"reasoning_content": reasoning} if reasoning else {})}}],
            "usage": {"prompt_tokens": bill["total"], "completion_tokens": out_tokens,
                      "total_tokens": bill["total"] + out_tokens,
                      "prompt_tokens_details": {"cached_tokens": bill["read"]}},
        })

    def _error(self, api: str, status: int, action: dict[str, Any]) -> None:
        kind, default = ERROR_TEXT.get(status, ("api_error", f"HTTP {status}"))
        message = str(action.get("message") or default)
        headers = {}
        if status == 429:
            retry_after = float(action.get("retry_after", self.server_obj.retry_after_s))
            headers["Retry-After"] = f"{retry_after:.3f}"
            headers["retry-after-ms"] = str(int(retry_after * 1000))
        if api == "anthropic":
            self._send(status, {"type": "error", "error": {"type": kind, "message": message}}, headers)
        else:
            self._send(status, {"error": {"message": message, "type": kind, "code": None, "param": None}}, headers)


# ---------------------------------------------------------------------- separate process
@contextmanager
def spawn(**config: Any):
    """Run a :class:`FaultServer` in a child process; yield a :class:`RemoteServer`."""
    proc = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "--config", json.dumps(config)],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        port = int((proc.stdout.readline() if proc.stdout else "").strip())
        yield RemoteServer(port)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


class RemoteServer:
    """Client of a fault server in another process."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.base = f"http://127.0.0.1:{port}"
        self.url = f"{self.base}/v1"

    def stats(self) -> dict[str, Any]:
        with urlopen(f"{self.base}/_stats", timeout=10) as resp:
            return json.loads(resp.read())

    def configure(self, **changes: Any) -> None:
        req = Request(f"{self.base}/_config", data=json.dumps(changes).encode(),
                      headers={"Content-Type": "application/json"}, method="POST")
        with urlopen(req, timeout=10) as resp:
            resp.read()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--config", default="{}", help="JSON keyword arguments of FaultServer")
    args = parser.parse_args()
    srv = FaultServer(port=args.port, **json.loads(args.config))
    print(srv.port, flush=True)
    try:
        srv._httpd.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
