"""Reading and writing a run directory's files: JSONL rows and JSON documents whose errors name
file:line:field (:func:`validate_row`), and the files' names."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ConfigDict, PrivateAttr, ValidationError

from ..errors import MindEvalError
from ..files import atomic_write

if TYPE_CHECKING:
    from typing_extensions import Self

_M = TypeVar("_M", bound=BaseModel)


class _FieldError(ValueError):
    """A validation error that names a sub-field (e.g. ``scores.CAC``)."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field



def read_jsonl(path: str | Path, problems: list[MindEvalError] | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for each non-blank line; bad JSON names file:line.

    A leading UTF-8 byte-order mark is accepted. With ``problems``, a bad line is
    appended there and skipped instead of raised, so a caller can report every one.
    """
    p = Path(path)
    if not p.is_file():
        raise MindEvalError("file not found", path=p)
    try:
        with p.open(encoding="utf-8-sig") as fh:
            for lineno, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                    if not isinstance(obj, dict):
                        raise MindEvalError("each line must be a JSON object", path=p, line=lineno)
                except (json.JSONDecodeError, MindEvalError) as exc:
                    err = exc if isinstance(exc, MindEvalError) else \
                        MindEvalError(f"malformed JSON ({exc.msg})", path=p, line=lineno)
                    if problems is None:
                        raise err from None
                    problems.append(err)
                    continue
                yield lineno, obj
    except UnicodeDecodeError as exc:
        raise MindEvalError(f"not UTF-8 text ({exc.reason})", path=p) from None


def _validation_message(exc: ValidationError) -> tuple[str, str]:
    """The field and message of a validation error's first problem."""
    return _error_message(exc.errors()[0])


def _error_message(err: Any) -> tuple[str, str]:
    """The field (``scores.CAC``) and message of one problem of a validation error."""
    loc = ".".join(str(x) for x in err["loc"])
    cause = (err.get("ctx") or {}).get("error")
    if isinstance(cause, _FieldError):
        loc = ".".join(x for x in (loc.rpartition(".")[0], cause.field) if x)
        return loc, str(cause)
    if err["type"] == "missing":
        return loc, "missing required field"
    return loc, err["msg"].removeprefix("Value error, ")


def validate_row(model: type[_M], obj: Any, *, path: str | Path = "<input>", line: int | None = None,
                 context: dict[str, Any] | None = None) -> _M:
    """``model.model_validate(obj)``; a failure is a :class:`MindEvalError` naming file:line:field."""
    try:
        return model.model_validate(obj, context=context)
    except ValidationError as exc:
        field, msg = _validation_message(exc)
        raise MindEvalError(msg, path=path, line=line, field=field or None) from None


# ------------------------------------------------------------ run directory rows
#
# A run directory (``mindeval run`` or ``metaeval judge``) holds config.json,
# interactions.jsonl, judgments.jsonl and summary.json. Each file's rows are the
# models below; every writer and reader goes through them.

CONFIG_FILE = "config.json"
INTERACTIONS_FILE = "interactions.jsonl"
JUDGMENTS_FILE = "judgments.jsonl"
SUMMARY_FILE = "summary.json"


class _Row(BaseModel):
    """A JSONL row model: ``read(path)`` validates every line, ``write(path, rows)`` is atomic."""

    model_config = ConfigDict(extra="ignore")
    _line: int | None = PrivateAttr(default=None)

    @property
    def line(self) -> int | None:
        """The line of the file this row was read from (None when built in memory)."""
        return self._line

    @classmethod
    def read(cls, path: str | Path, context: dict[str, Any] | None = None) -> list[Self]:
        rows = []
        for n, obj in read_jsonl(path):
            row = validate_row(cls, obj, path=path, line=n, context=context)
            row._line = n
            rows.append(row)
        return rows

    @classmethod
    def write(cls, path: str | Path, rows: list[Any]) -> None:
        atomic_write(path, "".join(
            json.dumps(r.model_dump(mode="json"), ensure_ascii=False) + "\n" for r in rows))


def read_json_object(path: str | Path) -> dict[str, Any]:
    """A JSON document holding one object (config.json, summary.json); errors name file:line."""
    p = Path(path)
    if not p.is_file():
        raise MindEvalError("file not found", path=p)
    try:
        obj = json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise MindEvalError(f"malformed JSON ({exc.msg})", path=p, line=exc.lineno) from None
    if not isinstance(obj, dict):
        raise MindEvalError("expected a JSON object", path=p, line=1)
    return obj


class _Document(BaseModel):
    """A JSON document model (config.json, summary.json)."""

    model_config = ConfigDict(extra="allow")

    @classmethod
    def read(cls, path: str | Path) -> Self:
        return validate_row(cls, read_json_object(path), path=path)

    def write(self, path: str | Path) -> None:
        atomic_write(path, json.dumps(self.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n")

