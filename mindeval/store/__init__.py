"""The run store: SQLAlchemy tables, the call log and run bookkeeping."""

from .calls import CallLog, LoggedCall, request_hash
from .db import Database, redact_url, sqlite_url

__all__ = ["CallLog", "Database", "LoggedCall", "redact_url", "request_hash", "sqlite_url"]
