"""Loopback ports for tests that start servers (or need one where nothing listens)."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A loopback port that was free a moment ago (closed again: nothing listens there until a server binds it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
