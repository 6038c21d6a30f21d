"""User-facing errors: each names the file, line and field when it knows them."""

from __future__ import annotations

from pathlib import Path


class MindEvalError(Exception):
    """An error caused by user input or configuration; the CLI prints it without a traceback."""

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.message = message
        self.path = str(path) if path is not None else None
        self.line = line
        self.field = field
        super().__init__(str(self))

    def __str__(self) -> str:
        where = ""
        if self.path:
            where = self.path
            if self.line is not None:
                where += f":{self.line}"
            if self.field:
                where += f":{self.field}"
            where += ": "
        elif self.field:
            where = f"{self.field}: "
        return f"{where}{self.message}"


class ModelCallError(MindEvalError):
    """A model call failed (provider error, empty reply, unknown provider, missing key).

    ``str(err)`` is one line naming the role, the model and the provider's own message,
    e.g. ``clinician openai/gpt-4o-mini: 401 AuthenticationError: Incorrect API key``.
    ``transient`` tells whether retrying the same request later may succeed.
    """

    def __init__(
        self,
        message: str,
        *,
        role: str = "",
        model: str = "",
        status: int | None = None,
        transient: bool = False,
        provider_message: str = "",
        **where: object,
    ) -> None:
        self.role = role
        self.model = model
        self.status = status
        self.transient = transient
        self.provider_message = provider_message or message
        super().__init__(message, **where)  # type: ignore[arg-type]


class ConfigMismatchError(MindEvalError):
    """Resuming a run with a configuration different from the stored one."""
