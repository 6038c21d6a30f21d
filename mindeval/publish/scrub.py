"""Secrets never leave in an export: names that hold them are dropped, values that look like them
are replaced, wherever they sit (configs, transcripts, judge replies, error messages)."""

from __future__ import annotations

import os
import re
from typing import Any

REDACTED = "[redacted]"
# Field names whose value is a credential (not "max_tokens" / "prompt_tokens": counts end in s).
SECRET_NAME = re.compile(r"(api[_-]?key|secret|passw(or)?d|authorization|access[_-]?code|(^|[_-])token$|bearer)",
                         re.IGNORECASE)
_KEY_SHAPES = re.compile(r"\b(sk-[A-Za-z0-9_\-]{8,}|hf_[A-Za-z0-9]{8,}|AKIA[0-9A-Z]{12,}|AIza[0-9A-Za-z_\-]{20,})")
_URL_USER = re.compile(r"(?P<scheme>[a-z][a-z0-9+.\-]*://)[^/@\s]+@", re.IGNORECASE)
_URL_QUERY = re.compile(r"(?P<name>[?&](api[_-]?key|key|token|access_token|sig|signature)=)[^&\s#]+", re.IGNORECASE)


def _env_secrets() -> list[str]:
    """Values of this process's secret-named environment variables (8 characters or more)."""
    return sorted((v for k, v in os.environ.items() if SECRET_NAME.search(k) and len(v) >= 8), key=len, reverse=True)


class Scrubber:
    """Replaces secrets in text and drops secret-named fields; counts what it replaced."""

    def __init__(self) -> None:
        self.secrets = _env_secrets()
        self.replaced = 0

    def text(self, value: str) -> str:
        out = value
        for secret in self.secrets:
            out = out.replace(secret, REDACTED)
        out = _KEY_SHAPES.sub(REDACTED, out)
        out = _URL_USER.sub(lambda m: f"{m['scheme']}{REDACTED}@", out)
        out = _URL_QUERY.sub(lambda m: f"{m['name']}{REDACTED}", out)
        if out != value:
            self.replaced += 1
        return out

    def __call__(self, value: Any) -> Any:
        """``value`` (JSON-like) without secret-named fields and with secret-looking text replaced."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            kept = {}
            for k, v in value.items():
                if isinstance(k, str) and SECRET_NAME.search(k) and v not in (None, "", {}, []):
                    self.replaced += 1
                    continue
                kept[k] = self(v)
            return kept
        if isinstance(value, list | tuple):
            return [self(v) for v in value]
        return value
