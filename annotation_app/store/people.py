"""Annotators and sign-in: codes are hashed, tokens are hashed, nothing plain is stored."""

from __future__ import annotations

import logging
from datetime import timedelta

from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError

from mindeval.errors import MindEvalError
from mindeval.store.db import Database

from . import signins
from .auth import (
    MIN_CODE_LEN,
    generate_code,
    hash_code,
    new_token,
    normalize_code,
    token_hash,
    verify_code,
)
from .common import SignedOut
from .models import AnnotatorInfo, SignedIn, Viewer
from .tables import AnnotatorRow, AuthSessionRow, as_utc, name_key, utcnow

log = logging.getLogger(__name__)
SESSION_HOURS = 12
# A real-looking hash to compare against when the name is unknown, so timing
# does not reveal which names exist.
_DUMMY_HASH = hash_code("not-a-real-code")


def _info(row: AnnotatorRow) -> AnnotatorInfo:
    return AnnotatorInfo(
        id=row.id, name=row.name, is_admin=row.is_admin, active=row.active,
        origin=row.origin, can_sign_in=bool(row.code_hash) and row.active,
    )


def check_name(name: str) -> str:
    name = name.strip()
    if not name or len(name) > 120:
        raise MindEvalError("a name of 1 to 120 characters is required", field="name")
    return name


def find_person(s, name: str) -> AnnotatorRow | None:
    """The person with this name, ignoring case and extra spaces."""
    return s.scalar(select(AnnotatorRow).where(AnnotatorRow.name_key == name_key(name)))


def _taken(s, name: str) -> MindEvalError:
    other = find_person(s, name)
    same = f" (names are compared ignoring case: '{other.name}')" if other is not None and other.name != name else ""
    return MindEvalError(f"an annotator named '{name}' already exists{same}", field="name")


def add_annotator(db: Database, name: str, *, admin: bool = False, code: str | None = None) -> tuple[AnnotatorInfo, str]:
    """Create a person who can sign in; return them and their access code (shown once)."""
    name = check_name(name)
    if code is not None and len(normalize_code(code)) < MIN_CODE_LEN:
        raise MindEvalError(f"an access code needs at least {MIN_CODE_LEN} letters or digits", field="code")
    code = code or generate_code()
    try:
        with db.write() as s:
            if find_person(s, name) is not None:
                raise _taken(s, name)
            row = AnnotatorRow(name=name, code_hash=hash_code(code), is_admin=admin, origin="created")
            s.add(row)
            s.flush()
            info = _info(row)
    except IntegrityError:  # created by someone else in the meantime
        with db.read() as s:
            raise _taken(s, name) from None
    log.info("annotator %s created (admin=%s)", name, admin)
    return info, code


def reset_code(db: Database, name: str, code: str | None = None) -> str:
    """Give a person a new access code (the old one stops working, sessions end).

    An imported annotator (inactive) becomes able to sign in: the admin chose to.
    """
    code = code or generate_code()
    with db.write() as s:
        row = find_person(s, name)
        if row is None:
            raise MindEvalError(f"no annotator named '{name}'", field="name")
        row.code_hash = hash_code(code)
        row.active = True
        s.execute(delete(AuthSessionRow).where(AuthSessionRow.annotator_id == row.id))
    log.info("access code of %s reset", row.name)
    return code


def imported_annotator(s, user: str, mapped: dict[str, str] | None = None) -> tuple[AnnotatorRow, bool]:
    """The annotator who holds an imported file's ratings by ``user``; ``True`` when created.

    Imported ratings never attach to a person who signs in unless the admin maps ``user``
    to them (``mapped``). Otherwise they belong to an imported, inactive annotator named
    ``user``, or ``"<user> (imported)"`` when a person already has that name.
    """
    if mapped and user in mapped:
        row = find_person(s, mapped[user])
        if row is None:
            raise MindEvalError(f"no annotator named '{mapped[user]}' (mapped from '{user}')", field="map-annotator")
        return row, False
    base = check_name(user)
    for n in range(1, 1000):
        name = base if n == 1 else f"{base} (imported)" if n == 2 else f"{base} (imported {n - 1})"
        row = find_person(s, name)
        if row is None:
            row = AnnotatorRow(name=check_name(name), code_hash=None, is_admin=False, active=False, origin="import")
            s.add(row)
            s.flush()
            return row, True
        if row.origin == "import":
            return row, False
    raise MindEvalError(f"too many people are named like '{base}'", field="name")  # pragma: no cover


def list_annotators(db: Database) -> list[AnnotatorInfo]:
    with db.read() as s:
        return [_info(r) for r in s.scalars(select(AnnotatorRow).order_by(AnnotatorRow.id))]


def sign_in(db: Database, name: str, code: str, client: str = "") -> SignedIn | None:
    """Check name and code; on success open a session and return its token.

    Every attempt is audited and repeated failures are slowed down (see :mod:`.signins`);
    raises :class:`~.signins.SignInThrottled` while this name or client must wait.
    """
    signins.check(db, name, client)
    with db.read() as s:
        row = find_person(s, name)
    ok = verify_code(code, row.code_hash if row else _DUMMY_HASH) and row is not None and row.active
    if not ok or row is None:
        signins.record(db, name, client, "failed")
        return None
    token = new_token()
    with db.write() as s:
        s.add(AuthSessionRow(
            token_hash=token_hash(token), annotator_id=row.id,
            expires_at=utcnow() + timedelta(hours=SESSION_HOURS),
        ))
    signins.record(db, name, client, "ok")
    log.info("%s signed in", row.name)
    return SignedIn(viewer=Viewer(id=row.id, name=row.name, is_admin=row.is_admin, session=token_hash(token)),
                    token=token)


def viewer_for_token(db: Database, token: str | None) -> Viewer | None:
    """The person a session token belongs to, or ``None`` if unknown or expired."""
    if not token or not isinstance(token, str) or len(token) > 200:
        return None
    return _session_viewer(db, token_hash(token))


def _session_viewer(db: Database, hashed: str) -> Viewer | None:
    with db.read() as s:
        sess = s.scalar(select(AuthSessionRow).where(AuthSessionRow.token_hash == hashed))
        if sess is None or as_utc(sess.expires_at) < utcnow():
            return None
        row = s.get(AnnotatorRow, sess.annotator_id)
        if row is None or not row.active:
            return None
        return Viewer(id=row.id, name=row.name, is_admin=row.is_admin, session=hashed)


def check_session(db: Database, viewer: Viewer, system_id: int = 0) -> None:
    """Raise :class:`SignedOut` unless ``viewer``'s sign-in session is still valid.

    Only the command line (``system_id``, no session) acts without one.
    """
    if viewer.session is None and viewer.id == system_id:
        return
    now = _session_viewer(db, viewer.session) if viewer.session else None
    if now is None or now.id != viewer.id:
        raise SignedOut("you have been signed out; please sign in again", field="session")


def sign_out(db: Database, token: str) -> None:
    with db.write() as s:
        s.execute(delete(AuthSessionRow).where(AuthSessionRow.token_hash == token_hash(token)))
