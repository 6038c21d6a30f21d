"""Access codes and sign-in tokens: generated at random, stored only as hashes.

Access codes use scrypt with a per-code random salt (``scrypt$n$r$p$salt$hash``);
session tokens are 256-bit random strings stored as their SHA-256.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

# Unambiguous characters (no 0/O, 1/I/L) so a code can be read aloud or copied by hand.
ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
CODE_GROUPS = 3
GROUP_LEN = 4
MIN_CODE_LEN = 8
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**14, 8, 1


def generate_code() -> str:
    """A fresh access code such as ``K7QF-MPX2-9TAB`` (about 59 bits of entropy)."""
    groups = ["".join(secrets.choice(ALPHABET) for _ in range(GROUP_LEN)) for _ in range(CODE_GROUPS)]
    return "-".join(groups)


def normalize_code(code: str) -> str:
    """Case, spaces and dashes do not matter when a code is typed."""
    return "".join(ch for ch in code.upper() if ch not in " -\t\n")


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def hash_code(code: str) -> str:
    """Salted scrypt hash of a normalized access code."""
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(
        normalize_code(code).encode(), salt=salt, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P, dklen=32
    )
    return f"scrypt${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}${_b64(salt)}${_b64(digest)}"


def verify_code(code: str, stored: str | None) -> bool:
    """Constant-time check of a typed code against a stored hash."""
    if not stored:
        return False
    try:
        algo, n, r, p, salt, digest = stored.split("$")
    except ValueError:
        return False
    if algo != "scrypt":
        return False
    got = hashlib.scrypt(
        normalize_code(code).encode(), salt=_unb64(salt), n=int(n), r=int(r), p=int(p), dklen=32
    )
    return hmac.compare_digest(got, _unb64(digest))


def new_token() -> str:
    return secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()
