"""Sign-in audit log and throttling, persisted so a restart does not reset them.

Every attempt is a :class:`SignInEventRow` (normalised name, client address, time,
outcome; never the code). After :data:`FREE_FAILURES` failures for one name (or
:data:`CLIENT_FREE_FAILURES` from one client) within :data:`WINDOW`, each further
attempt must wait ``BASE_DELAY * 2**(extra failures)``, at most :data:`MAX_DELAY`,
counted from the last failure. While a name or client waits, even a correct code
is refused (and logged as ``throttled``); a success clears that name's count.

The client is the address the server sees (:func:`client_key`), or, when the admin names
a trusted proxy header (``mindeval app --trusted-proxy-header X-Forwarded-For``), the
address that proxy reports. A client the server cannot tell apart from others (a
connection from this machine: a reverse proxy on it without the header configured, or
everybody using the app on this computer) has no per-client limit, since it would lock
everybody out at once; the per-name limits still apply to it.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import re
from collections.abc import Mapping
from datetime import datetime, timedelta

from sqlalchemy import func, select

from mindeval.errors import MindEvalError
from mindeval.store.db import Database

from .models import SignInEvent
from .tables import SignInEventRow, as_utc, name_key, utcnow

log = logging.getLogger(__name__)
FREE_FAILURES = 5
CLIENT_FREE_FAILURES = 20
WINDOW = timedelta(minutes=15)
BASE_DELAY = timedelta(seconds=30)
MAX_DELAY = timedelta(minutes=15)
LOCAL_CLIENT = "local"
PROXY_HEADER_ENV = "MINDEVAL_TRUSTED_PROXY_HEADER"
_HEADER_NAME = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$")


def check_header_name(name: str) -> str:
    """A valid HTTP header name, or a one-line error."""
    name = name.strip()
    if not _HEADER_NAME.match(name):
        raise MindEvalError(f"'{name}' is not an HTTP header name", field="trusted-proxy-header")
    return name


def trusted_proxy_header() -> str | None:
    """The header the admin trusts to carry the client's address (``$MINDEVAL_TRUSTED_PROXY_HEADER``)."""
    name = os.environ.get(PROXY_HEADER_ENV, "").strip()
    return check_header_name(name) if name else None


def _address(text: str) -> str | None:
    """An IP address from a header entry (``1.2.3.4``, ``1.2.3.4:5678``, ``[::1]:80``), else None."""
    text = text.strip().strip('"')
    if text.startswith("["):
        text = text[1:].split("]", 1)[0]
    elif text.count(":") == 1:
        text = text.split(":", 1)[0]
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return None


def client_key(peer: str | None, headers: Mapping[str, str] | None = None, trusted_header: str | None = None,
               values: list[str] | None = None) -> str:
    """The address sign-in throttling counts per client ("" when unknown: this machine).

    With ``trusted_header`` set and present, the right-most entry of it: the address the
    trusted proxy itself saw (entries to its left come from the client and can be forged).
    ``values`` are all instances of the header when it was sent more than once. Without a
    trusted header the header is ignored, so a client cannot choose its own key.
    """
    if trusted_header:
        seen = values if values else ([headers.get(trusted_header)] if headers else [])
        entries = [e for v in seen if v for e in str(v).split(",") if e.strip()]
        found = _address(entries[-1]) if entries else None
        if found:
            return found
    return peer or ""


class SignInThrottled(MindEvalError):
    """Too many failed sign-ins for this name or client; ``retry_after`` seconds to wait."""

    def __init__(self, retry_after: float) -> None:
        self.retry_after = max(1.0, retry_after)
        minutes = max(1, round(self.retry_after / 60))
        super().__init__(
            "too many failed sign-ins for this name or this computer; please wait about "
            f"{minutes} minute{'s' if minutes > 1 else ''} and try again, or ask your study admin")


def _wait(s, column, key: str, free: int, now: datetime) -> float:
    """Seconds ``key`` must still wait (0 when it may try now)."""
    last_ok = s.scalar(select(func.max(SignInEventRow.at)).where(column == key, SignInEventRow.outcome == "ok"))
    since = max(now - WINDOW, as_utc(last_ok)) if last_ok else now - WINDOW
    n, last = s.execute(
        select(func.count(), func.max(SignInEventRow.at))
        .where(column == key, SignInEventRow.outcome == "failed", SignInEventRow.at > since)
    ).one()
    if n < free or last is None:
        return 0.0
    delay = min(BASE_DELAY * 2 ** (n - free), MAX_DELAY)
    return max(0.0, (as_utc(last) + delay - now).total_seconds())


def check(db: Database, name: str, client: str, now: datetime | None = None) -> None:
    """Raise :class:`SignInThrottled` (and log the attempt) if this name or client must wait."""
    now = now or utcnow()
    key, client = name_key(name)[:120], (client or LOCAL_CLIENT)[:64]
    with db.read() as s:
        wait = _wait(s, SignInEventRow.name_key, key, FREE_FAILURES, now)
        if client != LOCAL_CLIENT:  # "local" is everybody the server cannot tell apart: no shared lock
            wait = max(wait, _wait(s, SignInEventRow.client, client, CLIENT_FREE_FAILURES, now))
    if wait > 0:
        record(db, name, client, "throttled", now)
        raise SignInThrottled(wait)


def record(db: Database, name: str, client: str, outcome: str, now: datetime | None = None) -> None:
    """Add an attempt to the audit log (and the server log, without any code)."""
    key, client = name_key(name)[:120], (client or LOCAL_CLIENT)[:64]
    with db.write() as s:
        s.add(SignInEventRow(at=now or utcnow(), name_key=key, client=client, outcome=outcome))
    if outcome != "ok":
        log.warning("sign-in %s for name %r from %s", outcome, key, client)


def recent(db: Database, limit: int = 100, outcomes: tuple[str, ...] = ("failed", "throttled")) -> list[SignInEvent]:
    """The newest attempts with these outcomes, newest first (for the admin's audit view)."""
    with db.read() as s:
        rows = s.scalars(select(SignInEventRow).where(SignInEventRow.outcome.in_(outcomes))
                         .order_by(SignInEventRow.id.desc()).limit(limit))
        return [SignInEvent(at=as_utc(r.at), name=r.name_key, client=r.client, outcome=r.outcome) for r in rows]
