"""One-time sign-in tickets in the database, so any app process redeems a ticket another issued.

A ticket (random, :data:`TICKET_SECONDS`) carries a new session token from the Streamlit page to
the cookie route (:mod:`annotation_app.handoff`). Neither is stored in clear: the row holds the
SHA-256 of the ticket and the token XOR-ed with a key stream derived from the ticket (SHAKE-256),
so only the browser holding the ticket can recover the token, once, before it expires. Redeeming
deletes the row; of two processes redeeming one ticket at the same time only one gets the token.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from sqlalchemy import delete, select

from mindeval.store.db import Database

from .tables import SignInTicketRow, as_utc, utcnow

TICKET_SECONDS = 60.0
MAX_TICKET_LEN = 100
_CONTEXT = b"mindeval sign-in ticket\x00"


def _hash(ticket: str) -> str:
    return hashlib.sha256(ticket.encode()).hexdigest()


def _stream(ticket: str, n: int) -> bytes:
    return hashlib.shake_256(_CONTEXT + ticket.encode()).digest(n)


def _seal(ticket: str, token: str) -> str:
    raw = token.encode()
    return bytes(a ^ b for a, b in zip(raw, _stream(ticket, len(raw)), strict=True)).hex()


def _unseal(ticket: str, sealed: str) -> str | None:
    raw = bytes.fromhex(sealed)
    try:
        return bytes(a ^ b for a, b in zip(raw, _stream(ticket, len(raw)), strict=True)).decode()
    except UnicodeDecodeError:  # pragma: no cover - a row not written by _seal
        return None


def issue(db: Database, token: str) -> str:
    """A one-time ticket that any process exchanges for ``token`` within :data:`TICKET_SECONDS`."""
    if len(token) > 90:
        raise ValueError("a session token is at most 90 characters")
    ticket = secrets.token_urlsafe(24)
    now = utcnow()
    with db.write() as s:
        s.execute(delete(SignInTicketRow).where(SignInTicketRow.expires_at < now))
        s.add(SignInTicketRow(ticket_hash=_hash(ticket), sealed=_seal(ticket, token),
                              expires_at=now + timedelta(seconds=TICKET_SECONDS)))
    return ticket


def redeem(db: Database, ticket: str | None) -> str | None:
    """The token of a valid ticket (which is used up), else ``None``."""
    if not ticket or not isinstance(ticket, str) or len(ticket) > MAX_TICKET_LEN:
        return None
    with db.write() as s:
        row = s.scalar(select(SignInTicketRow).where(SignInTicketRow.ticket_hash == _hash(ticket)))
        if row is None:
            return None
        gone = s.execute(delete(SignInTicketRow).where(SignInTicketRow.id == row.id)).rowcount
        if gone != 1 or as_utc(row.expires_at) < utcnow():  # another process took it, or too late
            return None
        sealed = row.sealed
    return _unseal(ticket, sealed)
