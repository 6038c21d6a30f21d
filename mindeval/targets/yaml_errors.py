"""Where a problem of a YAML file is: pydantic errors as file:line:field problems."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from ..errors import MindEvalError
from .scales import SCALE_KINDS
from .schema import Problems


def validation_problems(exc: ValidationError, path: Path, text: str) -> list[MindEvalError]:
    """One :class:`MindEvalError` per problem of a pydantic error on a YAML file (file:line:field)."""
    out: list[MindEvalError] = []
    for err in exc.errors():
        loc = tuple(err.get("loc", ()))
        if len(loc) > 1 and loc[0] == "scale" and loc[1] in SCALE_KINDS:
            loc = loc[:1] + loc[2:]  # the discriminator's tag is not a field of the file
        cause = (err.get("ctx") or {}).get("error")
        items = cause.items if isinstance(cause, Problems) else [((), _message(err))]
        for sub, msg in items:
            full = loc + sub
            out.append(MindEvalError(msg, path=path, line=yaml_line(text, full),
                                     field=".".join(str(p) for p in full) or None))
    return out


def _message(err: Any) -> str:
    kind = err.get("type")
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        return "unknown field (check the spelling)"
    if kind == "union_tag_invalid":
        return f"kind must be one of {', '.join(SCALE_KINDS)}"
    return str(err.get("msg", "invalid value")).removeprefix("Value error, ")


def yaml_line(text: str, loc: tuple[Any, ...]) -> int | None:
    """1-based line of the YAML node at ``loc`` (its deepest existing ancestor)."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return None
    line = node.start_mark.line + 1 if node is not None else None
    for part in loc:
        child = None
        if isinstance(node, yaml.MappingNode):
            for k, val in node.value:
                if str(k.value) == str(part):
                    child = val
                    line = k.start_mark.line + 1
                    break
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if 0 <= part < len(node.value):
                child = node.value[part]
                line = child.start_mark.line + 1
        if child is None:
            break
        node = child
    return line


def line_of_key(path: Path, dotted: str) -> int | None:
    """1-based line of the dotted key (``score.formula``) in a YAML file (``None``: unreadable)."""
    try:
        parts = tuple(int(p) if p.isdigit() else p for p in dotted.split("."))  # a number: a list's item
        return yaml_line(path.read_text(encoding="utf-8"), parts)
    except (OSError, UnicodeDecodeError):
        return None
