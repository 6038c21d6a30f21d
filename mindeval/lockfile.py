"""A lock file naming the process that holds it (pid, host, start time).

Taken with ``O_EXCL``; another live process holding it is one clear error naming that process;
a lock left by a process that is gone (same host, pid not running) is taken over with a note.
Used for run directories (:mod:`mindeval.rundir_guard`) and SQLite run stores
(:mod:`mindeval.store.claim`).
"""

from __future__ import annotations

import json
import os
import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

from .errors import MindEvalError


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _holder(lock: Path) -> dict | None:
    try:
        data = json.loads(lock.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


@contextmanager
def lock_file(lock: Path, where: str | Path, busy: str, hint: str = "wait for it to finish") -> Iterator[Path]:
    """Hold ``lock`` (pid, host and start time) while this process writes ``where``.

    Another live process holding it is one error line (``where``: ``busy``, naming the holder);
    a lock left by a process that is gone (same host, pid not running) is taken over with a
    note on stderr.
    """
    me = {"pid": os.getpid(), "host": socket.gethostname(),
          "started": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    for _ in range(2):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            held = _holder(lock) or {}
            pid, host = held.get("pid"), held.get("host")
            if host == me["host"] and isinstance(pid, int) and not _alive(pid):
                print(f"note: {lock}: taking over the lock of pid {pid} (no longer running)", file=sys.stderr)
                lock.unlink(missing_ok=True)
                continue
            raise MindEvalError(f"{busy}: pid {pid} on {host} since {held.get('started')}; {hint} "
                                f"(if it is not running, delete {lock})", path=where) from None
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(me, f)
        break
    else:
        raise MindEvalError(f"cannot take the lock {lock}; delete it if no process is using it", path=where)
    try:
        yield lock
    finally:
        if (_holder(lock) or {}).get("pid") == me["pid"]:
            lock.unlink(missing_ok=True)
