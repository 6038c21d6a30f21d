"""Keeping N app processes running on consecutive loopback ports (``mindeval app serve``).

Each process is a whole app (``streamlit run``) on one port. The supervisor starts them one
after the other (the first migrates a fresh database; the others find it done), starts again
any that exits, and on ``SIGHUP`` restarts them one at a time, each only after the one before
answers ``/_stcore/health`` again, so the proxy always has live processes to send browsers to.
``SIGTERM`` or ``SIGINT`` stops them all.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from typing import TextIO

HEALTH_PATH = "/_stcore/health"
STOP_SECONDS = 30.0
TICK_SECONDS = 0.25
MAX_BACKOFF_SECONDS = 30.0


def healthy(port: int, timeout: float = 2.0) -> bool:
    """Whether the app on 127.0.0.1:``port`` answers its health check with ``ok``."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{HEALTH_PATH}", timeout=timeout) as r:
            return r.read().decode().strip() == "ok"
    except OSError:
        return False


class AppProcesses:
    """The app processes of one deployment: ``command(port)`` is the command line of one."""

    def __init__(self, command: Callable[[int], list[str]], ports: list[int], env: dict[str, str],
                 *, health_timeout: float = 180.0, out: TextIO = sys.stdout) -> None:
        self.command, self.ports, self.env = command, ports, env
        self.health_timeout = health_timeout
        self.out = out
        self.procs: list[subprocess.Popen | None] = [None] * len(ports)
        self._failures = [0] * len(ports)
        self._next_start = [0.0] * len(ports)
        self._started = [0.0] * len(ports)
        self._rolling = False
        self._stopping = False

    def _say(self, text: str) -> None:
        print(f"[serve] {text}", file=self.out, flush=True)

    def _name(self, i: int) -> str:
        return f"process {i + 1} of {len(self.ports)} on 127.0.0.1:{self.ports[i]}"

    def start(self, i: int) -> None:
        proc = subprocess.Popen(self.command(self.ports[i]), env=self.env)
        self.procs[i], self._started[i] = proc, time.monotonic()
        self._say(f"{self._name(i)} started (pid {proc.pid})")

    def wait_healthy(self, i: int) -> bool:
        """Wait until process ``i`` answers its health check (False: it exited or took too long)."""
        deadline = time.monotonic() + self.health_timeout
        proc = self.procs[i]
        while time.monotonic() < deadline and proc is not None and proc.poll() is None:
            if healthy(self.ports[i]):
                self._say(f"{self._name(i)} is healthy (pid {proc.pid})")
                return True
            time.sleep(TICK_SECONDS)
        self._say(f"{self._name(i)} did not become healthy")
        return False

    def stop(self, i: int) -> None:
        """Stop process ``i``: SIGTERM (Streamlit closes its connections), SIGKILL after 30 s."""
        proc, self.procs[i] = self.procs[i], None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def start_all(self) -> None:
        for i in range(len(self.ports)):
            self.start(i)
            self.wait_healthy(i)

    def stop_all(self) -> None:
        for i in range(len(self.ports)):
            self.stop(i)

    def rolling_restart(self) -> None:
        """Restart every process in turn, each once the one before is healthy again."""
        self._say("rolling restart: one process at a time")
        for i in range(len(self.ports)):
            if self._stopping:
                return
            self.stop(i)
            self.start(i)
            self.wait_healthy(i)
        self._say("rolling restart done")

    def revive(self) -> None:
        """Start again any process that has exited (waiting longer after each quick failure)."""
        now = time.monotonic()
        for i, proc in enumerate(self.procs):
            if proc is not None and proc.poll() is None:
                continue
            if proc is not None:
                quick = now - self._started[i] < 30
                self._failures[i] = self._failures[i] + 1 if quick else 0
                self._next_start[i] = now + min(MAX_BACKOFF_SECONDS, 2 ** self._failures[i] - 1)
                self._say(f"{self._name(i)} (pid {proc.pid}) exited with code {proc.returncode}; starting it again")
                self.procs[i] = None
            if now >= self._next_start[i]:
                self.start(i)

    def run(self) -> int:
        """Start every process and watch them until SIGTERM/SIGINT; SIGHUP: a rolling restart."""
        signal.signal(signal.SIGHUP, lambda *_: setattr(self, "_rolling", True))
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: setattr(self, "_stopping", True))
        try:
            self.start_all()
            self._say("all processes started")
            while not self._stopping:
                if self._rolling:
                    self._rolling = False
                    self.rolling_restart()
                self.revive()
                time.sleep(TICK_SECONDS)
        finally:
            self._say("stopping")
            self.stop_all()
        return 0
