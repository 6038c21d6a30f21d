"""Moving a new sign-in from the Streamlit page into an HttpOnly cookie.

A Streamlit script cannot set cookies, so a successful sign-in issues a one-time
*ticket* (random, 60 s, kept hashed in this process's memory). The page sends the
browser to ``/mindeval/session?t=TICKET``; that route (see :mod:`annotation_app.server`)
redeems the ticket and sets the session cookie: HttpOnly, SameSite=Strict, path ``/``.
The session token itself never appears in a URL, the page or JavaScript.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time

COOKIE = "mindeval_session"
SESSION_ROUTE = "/mindeval/session"
SIGNOUT_ROUTE = "/mindeval/signout"
TICKET_SECONDS = 60.0

_tickets: dict[str, tuple[str, float]] = {}
_lock = threading.Lock()


def _key(ticket: str) -> str:
    return hashlib.sha256(ticket.encode()).hexdigest()


def issue_ticket(token: str) -> str:
    """A one-time ticket that the session route exchanges for ``token`` within a minute."""
    ticket = secrets.token_urlsafe(24)
    now = time.monotonic()
    with _lock:
        for k in [k for k, (_, exp) in _tickets.items() if exp < now]:
            del _tickets[k]
        _tickets[_key(ticket)] = (token, now + TICKET_SECONDS)
    return ticket


def redeem_ticket(ticket: str | None) -> str | None:
    """The token of a valid ticket (which is used up), else ``None``."""
    if not ticket or len(ticket) > 100:
        return None
    with _lock:
        found = _tickets.pop(_key(ticket), None)
    if found is None or found[1] < time.monotonic():
        return None
    return found[0]
