"""Is the trusted proxy header (``mindeval app --trusted-proxy-header``) on the connections?

Each browser connection (its WebSocket handshake, which Streamlit's ``st.context.headers``
reports) is counted once per process as carrying the header or not. While the header is
configured but no connection has carried it, sign-in limits silently count everybody by the
connection's own address: the server log says so at the first such connection, and admins see
:func:`missing_notice` on every page.
"""

from __future__ import annotations

import logging
import threading

logger = logging.getLogger(__name__)
_lock = threading.Lock()
_counts = {"with": 0, "without": 0}


def saw(header: str, present: bool, peer: str | None) -> None:
    """Count one connection; log the first one that lacks the configured header."""
    with _lock:
        _counts["with" if present else "without"] += 1
        first_missing = not present and _counts["without"] == 1
    if first_missing:
        logger.warning(
            "the trusted proxy header %s is configured but was not on a browser connection (from %s): "
            "requests reach the app without the proxy, or the proxy does not pass the header on WebSocket "
            "upgrades (Streamlit reads it from the /_stcore/stream handshake); sign-in limits count such "
            "connections by their own address", header, peer or "this computer")


def missing_notice(header: str | None) -> str | None:
    """A one-line notice while the header is configured and no connection has carried it yet."""
    with _lock:
        if not header or _counts["with"] or not _counts["without"]:
            return None
        n = _counts["without"]
    return (f"The trusted proxy header {header} has not been on any of the {n} browser connection"
            f"{'s' if n > 1 else ''} since the app started: sign-in limits count these by the connection's own "
            "address. Check that every request comes through the proxy and that it passes the header on "
            "WebSocket upgrades.")


def reset() -> None:
    """Forget the counts (tests)."""
    with _lock:
        _counts.update({"with": 0, "without": 0})
