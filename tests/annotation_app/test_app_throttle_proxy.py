"""Sign-in throttling cannot lock everybody out: per-name limits stay, the per-client limit keys
on the address a trusted proxy reports (`--trusted-proxy-header`, off by default), and a client
the server cannot tell apart from others (this machine) has no shared per-client lock."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import tempfile
import threading

import pytest
from appkit import ADMIN_CODE, DEMO_CODE, ROOT, free_port, make_workspace, stop, wait_healthy
from browserkit import CHROMIUM, FLAGS, playwright_api

from annotation_app.services import DB_ENV, SYSTEM, SignInThrottled
from annotation_app.store import signins
from annotation_app.store.signins import PROXY_HEADER_ENV, client_key

XFF = "X-Forwarded-For"


def test_the_client_is_the_right_most_address_of_the_trusted_header_only():
    headers = {XFF: "198.51.100.7, 203.0.113.5"}  # the client wrote the first, the proxy added the last
    assert client_key("10.0.0.2", headers, XFF) == "203.0.113.5"
    assert client_key(None, headers, XFF) == "203.0.113.5"
    assert client_key(None, None, XFF, values=["1.1.1.1", "9.9.9.9, 203.0.113.6:4431"]) == "203.0.113.6"
    assert client_key(None, {XFF: "[2001:db8::1]:443"}, XFF) == "2001:db8::1"
    assert client_key("10.0.0.2", headers, None) == "10.0.0.2"  # not configured: ignored
    assert client_key(None, headers, None) == ""  # this machine: unknown
    assert client_key("10.0.0.2", {XFF: "not-an-address"}, XFF) == "10.0.0.2"  # garbage is not a key
    assert client_key("10.0.0.2", {}, XFF) == "10.0.0.2"


def test_twenty_wrong_codes_from_one_client_do_not_lock_out_another_person(demo_ws):
    for n in range(signins.CLIENT_FREE_FAILURES):
        assert demo_ws.sign_in(f"guess{n}", "WRONG-CODE-0001", client="203.0.113.5") is None
    with pytest.raises(SignInThrottled):  # that client waits, even with a right code
        demo_ws.sign_in("demo", DEMO_CODE, client="203.0.113.5")
    assert demo_ws.sign_in("demo", DEMO_CODE, client="203.0.113.9") is not None  # another person does not
    # everybody the server cannot tell apart ("" = this machine) shares no per-client lock ...
    for n in range(signins.CLIENT_FREE_FAILURES + 5):
        assert demo_ws.sign_in(f"other{n}", "WRONG-CODE-0001", client="") is None
    assert demo_ws.sign_in("admin", ADMIN_CODE, client="") is not None
    # ... but the per-name limit still holds for it
    for _ in range(signins.FREE_FAILURES):
        assert demo_ws.sign_in("demo", "WRONG-CODE-0002", client="") is None
    with pytest.raises(SignInThrottled):
        demo_ws.sign_in("demo", DEMO_CODE, client="")


def test_a_bad_header_name_is_a_one_line_error(tmp_path, capsys):
    from mindeval.cli import main

    assert main(["app", "--db", f"sqlite:///{tmp_path / 'x.db'}", "--trusted-proxy-header", "X Forwarded"]) == 2
    err = capsys.readouterr().err
    assert "trusted-proxy-header" in err and "not an HTTP header name" in err and "Traceback" not in err


# ------------------------------------------------------------------ through the real server


def _start(url: str, tmp_path, header: str | None) -> tuple[subprocess.Popen, int]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != PROXY_HEADER_ENV}
    env[DB_ENV] = url
    cmd = [sys.executable, "-m", "mindeval", "app", "--db", url, "--port", str(port)]
    if header:
        cmd += ["--trusted-proxy-header", header]
    proc = subprocess.Popen(cmd, stdout=(tmp_path / f"app{port}.log").open("w"), stderr=subprocess.STDOUT,
                            env=env, cwd=ROOT)
    try:
        wait_healthy(port, proc)
    except BaseException:
        stop(proc)  # a server that never became healthy is not left running after the test
        raise
    return proc, port


class ForwardingProxy:
    """A reverse proxy on 127.0.0.1 in front of the app, as nginx with
    ``proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for``: it appends ``client`` (the
    address it "saw") to every request's X-Forwarded-For, the WebSocket upgrade included.

    The test browser cannot play the proxy itself: Chromium sends extra HTTP headers set
    through DevTools (playwright's ``extra_http_headers``) on WebSocket handshakes only from
    version 151 on, and Streamlit reads the headers from that handshake alone.
    """

    def __init__(self, upstream_port: int, client: str) -> None:
        self.upstream, self.client = upstream_port, client
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = conn.recv(65536)
            if not chunk:
                conn.close()
                return
            head += chunk
        top, rest = head.split(b"\r\n\r\n", 1)
        lines = top.split(b"\r\n")
        kept, forwarded, upgrade = [lines[0]], [], False
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            low = name.strip().lower()
            if low == XFF.lower().encode():
                forwarded.append(value.strip())
            elif low == b"connection":
                upgrade = b"upgrade" in value.lower()
                kept.append(line)
            else:
                kept.append(line)
        forwarded.append(self.client.encode())
        kept.append(XFF.encode() + b": " + b", ".join(forwarded))
        if not upgrade:  # one request per connection: no keep-alive to parse
            kept = [ln for ln in kept if not ln.lower().startswith(b"connection:")] + [b"Connection: close"]
        up = socket.create_connection(("127.0.0.1", self.upstream))
        up.sendall(b"\r\n".join(kept) + b"\r\n\r\n" + rest)
        threading.Thread(target=self._pipe, args=(up, conn), daemon=True).start()
        self._pipe(conn, up)

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        self.server.close()


def _try(browser, base: str, forwarded: str, name: str, code: str, expect: str) -> None:
    """One person's sign-in in a fresh browser context whose requests carry ``forwarded``;
    waits until the page shows ``expect`` (a success reloads the page once, through the cookie route)."""
    ctx = browser.new_context(extra_http_headers={XFF: forwarded}, viewport={"width": 1400, "height": 1000})
    try:
        page = ctx.new_page()
        page.set_default_timeout(90_000)
        page.goto(base)
        page.get_by_label("Your name").fill(name)
        page.get_by_label("Access code").fill(code)
        page.get_by_role("button", name="Sign in").click()
        page.get_by_text(re.compile(re.escape(expect), re.I)).first.wait_for()
    finally:
        ctx.close()


@pytest.fixture
def browser(tmp_path):
    api = playwright_api()
    with api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        yield b
        b.close()


@pytest.mark.browser
def test_behind_a_trusted_proxy_two_clients_are_limited_separately(browser, tmp_path):
    url = f"sqlite:///{tempfile.mkdtemp(dir=tmp_path)}/proxy.db"
    ws = make_workspace(url)
    proc, port = _start(url, tmp_path, XFF)
    # two people behind the proxy: it appends the address it saw to what the browser sent
    first, second = ForwardingProxy(port, "203.0.113.5"), ForwardingProxy(port, "203.0.113.9")
    try:
        # the attacker forges a first entry; the proxy appends the address it saw (the right-most)
        _try(browser, f"http://127.0.0.1:{first.port}/", "198.51.100.1", "nobody", "WRONG-CODE-0001", "do not match")
        assert ws.signin_events(SYSTEM, 1)[0].client == "203.0.113.5"
        for n in range(signins.CLIENT_FREE_FAILURES - 1):  # the rest of the 20 failures, faster
            ws.sign_in(f"guess{n}", "WRONG-CODE-0001", client="203.0.113.5")
        _try(browser, f"http://127.0.0.1:{first.port}/", "198.51.100.2", "demo", DEMO_CODE, "too many failed sign-ins")
        assert ws.signin_events(SYSTEM, 1)[0].outcome == "throttled"
        _try(browser, f"http://127.0.0.1:{second.port}/", "198.51.100.1", "demo", DEMO_CODE, "Hello, demo")
        assert "was not on a browser connection" not in (tmp_path / f"app{port}.log").read_text()
    finally:
        first.close()
        second.close()
        stop(proc)
        ws.close()


@pytest.mark.browser
def test_a_configured_header_that_never_arrives_is_reported_in_the_log_and_to_admins(browser, tmp_path):
    url = f"sqlite:///{tempfile.mkdtemp(dir=tmp_path)}/noproxy.db"
    ws = make_workspace(url)
    proc, port = _start(url, tmp_path, "X-Real-IP")  # configured, but nobody sets it: no proxy in front
    try:
        ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = ctx.new_page()
        page.set_default_timeout(90_000)
        page.goto(f"http://127.0.0.1:{port}/")
        page.get_by_label("Your name").fill("admin")
        page.get_by_label("Access code").fill(ADMIN_CODE)
        page.get_by_role("button", name="Sign in").click()
        page.get_by_text("The trusted proxy header X-Real-IP has not been on any").wait_for()
        ctx.close()
        log = (tmp_path / f"app{port}.log").read_text()
        assert "the trusted proxy header X-Real-IP is configured but was not on a browser connection" in log
    finally:
        stop(proc)
        ws.close()


@pytest.mark.browser
def test_without_the_option_the_header_is_ignored_and_nobody_is_locked_out(browser, tmp_path):
    url = f"sqlite:///{tempfile.mkdtemp(dir=tmp_path)}/direct.db"
    ws = make_workspace(url)
    proc, port = _start(url, tmp_path, None)
    base = f"http://127.0.0.1:{port}/"
    try:
        _try(browser, base, "203.0.113.5", "nobody", "WRONG-CODE-0001", "do not match")
        assert ws.signin_events(SYSTEM, 1)[0].client == signins.LOCAL_CLIENT  # the forged header is not used
        for n in range(signins.CLIENT_FREE_FAILURES):  # 20 more failures from this machine
            ws.sign_in(f"guess{n}", "WRONG-CODE-0001", client="")
        _try(browser, base, "203.0.113.77", "demo", DEMO_CODE, "Hello, demo")
    finally:
        stop(proc)
        ws.close()
