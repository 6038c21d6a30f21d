"""Helpers of the hosting tests and benchmark: ``mindeval app serve`` with N processes behind a
real nginx (Debian's, started per test without root: a temp prefix and a free port)."""

from __future__ import annotations

import http.client
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from appkit import ROOT, free_port, stop, wait_for

from annotation_app.hosting import standalone_config
from annotation_app.services import SYSTEM, Workspace

NGINX = os.environ.get("MINDEVAL_NGINX", "/usr/sbin/nginx")
START_S = 600.0  # N Streamlit processes starting one after the other beside CPU hogs


def nginx_binary() -> str:
    """nginx, or skip (fail in CI) when it is missing (scripts/services.sh installs nginx-light)."""
    found = NGINX if Path(NGINX).is_file() else shutil.which("nginx")
    if not found:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("nginx is missing in CI: scripts/services.sh should have installed nginx-light")
        pytest.skip("no nginx (scripts/services.sh installs nginx-light)")
    return found


def free_ports(n: int) -> int:
    """The first of ``n`` consecutive free loopback ports."""
    for _ in range(200):
        base = free_port()
        if base + n > 65535:
            continue
        try:
            socks = []
            for p in range(base, base + n):
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", p))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError("no consecutive free ports")


def get(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.read().decode()
    except OSError:
        return None


def established(port: int) -> int:
    """Open TCP connections to 127.0.0.1:``port`` (from /proc/net/tcp): whom nginx sends browsers to."""
    want = f"0100007F:{port:04X}"
    n = 0
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        parts = line.split()
        n += parts[1] == want and parts[3] == "01"
    return n


class Deployment:
    """``mindeval app serve --processes N`` and nginx in front of it, all in ``tmp``."""

    def __init__(self, url: str, n: int, tmp: Path) -> None:
        self.url, self.n, self.tmp = url, n, tmp
        self.log = tmp / "serve.log"
        self.first = free_ports(n)
        self.ports = list(range(self.first, self.first + n))
        self.proxy_port = free_port()
        self.base = f"http://127.0.0.1:{self.proxy_port}"
        self.serve: subprocess.Popen | None = None
        self.nginx: subprocess.Popen | None = None

    def start(self) -> Deployment:
        nginx = nginx_binary()
        site = self.tmp / "site.conf"
        self.serve = subprocess.Popen(
            [sys.executable, "-m", "mindeval", "app", "serve", "--db", self.url, "--processes", str(self.n),
             "--port", str(self.first), "--listen", f"127.0.0.1:{self.proxy_port}", "--nginx-conf", str(site)],
            stdout=self.log.open("w"), stderr=subprocess.STDOUT, cwd=ROOT, env=dict(os.environ))
        wait_for(lambda: "all processes started" in self.log.read_text(), "all app processes", START_S, self.serve)
        conf = self.tmp / "nginx.conf"
        conf.write_text(standalone_config(str(site), str(self.tmp)))
        self.nginx = subprocess.Popen([nginx, "-p", str(self.tmp), "-c", str(conf)],
                                      stdout=subprocess.DEVNULL, stderr=(self.tmp / "nginx.out").open("w"))
        wait_for(lambda: get(f"{self.base}/_stcore/health") == "ok", "nginx in front of the app", 60, self.nginx)
        return self

    def lines(self) -> list[str]:
        return [ln for ln in self.log.read_text().splitlines() if ln.startswith("[serve]")]

    def pid(self, port: int) -> int | None:
        """The newest pid the supervisor started on ``port``."""
        pids = [int(ln.rsplit("(pid ", 1)[1].rstrip(")")) for ln in self.lines()
                if f"127.0.0.1:{port} started" in ln]
        return pids[-1] if pids else None

    def kill(self, port: int) -> None:
        """SIGKILL the app process on ``port`` (the supervisor starts another)."""
        os.kill(self.pid(port), signal.SIGKILL)

    def count(self, text: str) -> int:
        return sum(text in ln for ln in self.lines())

    def rolling_restart(self) -> None:
        """SIGHUP the supervisor (returns at once; :meth:`count` of 'rolling restart done' tells when)."""
        self.serve.send_signal(signal.SIGHUP)

    def stop(self) -> None:
        for proc in (self.nginx, self.serve):
            if proc is not None and proc.poll() is None:
                stop(proc, timeout=90)


def add_raters(ws: Workspace, study: str, names: list[str]) -> dict[str, str]:
    """People ``names`` (code = ``CODE-<name>``) who each get every item of ``study``."""
    codes = {}
    for name in names:
        codes[name] = f"CODE-{name.upper()}-1234"
        ws.add_annotator(SYSTEM, name, code=codes[name])
    ws.assign(SYSTEM, study, annotators=names, k=len(names))
    return codes


# The rating form component (annotation_app/assets/forms/rate.js) in Chromium: its root names its
# item and says "saved" once everything it shows is stored and acknowledged.
FORM_SAVED_JS = """([item, field, label]) => { const f = document.querySelector('.mindeval-rate');
  if (!f || f.dataset.item !== String(item) || f.dataset.state !== 'saved') return false;
  if (!field) return true;
  const ids = JSON.parse(f.dataset.fields || '[]'), st = JSON.parse(f.dataset.stored || '[]');
  return st[ids.indexOf(field)] === label; }"""


def form_saved(page, aid: int, field: str = "", label: str = "", timeout: float = 180_000) -> None:
    """Wait in Chromium until the rating form shows item ``aid`` with nothing left to save (and,
    with ``field``, ``label`` stored on it)."""
    page.wait_for_function(FORM_SAVED_JS, arg=[aid, field, label], timeout=timeout)


def click_score(page, field: str, label: str) -> None:
    """Click option ``label`` of the form's field ``field`` in Chromium."""
    page.locator(f'.mindeval-rate fieldset.rate-axis[data-sub="{field}"] input[value="{label}"]').click()


def score(who: int, aid: int, j: int) -> int:
    """The score annotator ``who`` gives sub-axis ``j`` of assignment ``aid`` (1..5, each differs)."""
    return 1 + (who + aid + j) % 5


class Annotator:
    """A protocol annotator (:class:`stclient.StClient`) rating its items on the rating form
    component through the proxy (or one app process): each score one key, sent as the form's
    whole state (a fragment run) and kept until the form's answer acknowledges it; after a
    reconnect the page is loaded again and the same state re-sent (the page's own buffer does
    the same). Counts what happened and how long each key took until stored."""

    def __init__(self, base: str, who: int, name: str, code: str, study: int) -> None:
        from stclient import RateTab, StClient

        self.c = StClient(base)
        self.tab = RateTab(self.c)
        self.who, self.name, self.code, self.study = who, name, code, study
        self.signin_s: float | None = None
        self.key_s: list[float] = []
        self.reconnects = 0
        self.signed_out = 0
        self.expected: dict[int, dict[int, int]] = {}

    def sign_in(self) -> None:
        t = time.perf_counter()
        self.c.connect()
        self.c.sign_in(self.name, self.code)
        self.signin_s = time.perf_counter() - t

    def _retry(self, aid: int, act) -> dict:
        """``act()`` until it runs without the connection dropping (reconnect and reload between)."""
        from stclient import Disconnected

        for _ in range(50):
            try:
                return act()
            except Disconnected:
                self.reconnects += 1
                self._fresh()
                try:
                    self._page(aid)
                except Disconnected:
                    continue
        raise AssertionError(f"{self.name}: item {aid} never answered")

    def _page(self, aid: int) -> dict:
        """Load the rating page of ``aid``; the form's data (raises when it shows no form or another item)."""
        self.c.run(page="rate", query=f"study={self.study}&item={aid}")
        data = self.tab.data()
        if data is None:
            self.signed_out += "signin_name" in self.c.widgets
            raise AssertionError(f"{self.name}: no rating form for item {aid}: {self.c.text()[:200]}")
        if data["item"] != aid:
            raise AssertionError(f"{self.name}: the page shows item {data['item']}, not {aid}")
        return data

    def _fresh(self) -> None:
        wait_for(self._reconnect, f"{self.name} connecting", 120)

    def _reconnect(self) -> bool:
        try:
            self.c.connect()
            return True
        except (OSError, http.client.HTTPException):  # refused, reset, or cut mid-answer by a dying process
            return False

    def key(self, aid: int, field: str, label: str) -> None:
        """One key: ``label`` on ``field``, sent until the form's answer says it is stored."""
        state = self.tab.state({field: label})
        for _ in range(5):
            self._retry(aid, lambda: self.tab.send(state))
            if self.tab.acked(state):
                return
        raise AssertionError(f"{self.name}: {field}={label} on item {aid} never acknowledged: "
                             f"{self.tab.data()} {self.c.text()[:300]}")

    def rate(self, aid: int, keys: int, between=None) -> None:
        """Give ``keys`` scores on ``aid`` (the form's first ``keys`` sub-axes), one key each."""
        self._fresh()  # a new tab on the item's link: the page reads the item from the URL at its first run
        data = self._retry(aid, lambda: self._page(aid))
        fields = [a["id"] for a in data["axes"] if a["kind"] == "radio"]
        want = self.expected.setdefault(aid, {})
        for j in range(keys):
            want[j] = score(self.who, aid, j)
            t = time.perf_counter()
            self.key(aid, fields[j], str(want[j]))
            self.key_s.append(time.perf_counter() - t)
            if between:
                between()


def run_threads(work, people) -> float:
    """Run ``work(person)`` for every person at once, one thread each; the wall time in seconds."""
    t0 = time.perf_counter()
    threads = [threading.Thread(target=work, args=(a,)) for a in people]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - t0
