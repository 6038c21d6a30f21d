"""A structured next situation (a target's ``situation_fields``): the next-session step answers one
JSON object holding exactly the declared fields, each a string, read strictly (no default is ever
put in place of an unreadable reply: it is asked again, then the step is recorded failed).

The stored situation (:attr:`mindeval.records.SessionInfo.situation`) is that object as JSON; the
next session's patient prompt receives each field as ``${situation_<name>}`` and all of them as
``${situation}`` (one ``name: text`` line each)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

SITUATION_ATTEMPTS = 3  # the first answer and two retries, each a stored call
# A value that is only a form's placeholder (``<text>``, as a template shows the answer's form): a
# small model copies the form instead of filling it in, which is no situation.
_PLACEHOLDER = re.compile(r"<[^<>\n]{1,40}>")


def answer_instruction(fields: Sequence[str]) -> str:
    """What the next-session step is told about its answer's form."""
    keys = ", ".join(f'"{f}"' for f in fields)
    return f"Answer with only one JSON object with exactly the keys {keys}, each value a string."


def situation_schema(fields: Sequence[str], opening: str | None = None) -> dict:
    """The answer's JSON-schema ``response_format``, sent where the model accepts one (the provider
    table's rule, as for the judge): the declared fields, each a string, the opening one non-empty.
    The answer is still read by :func:`parse_situation`: a schema is a request, not a guarantee."""
    props = {f: {"type": "string", **({"minLength": 1} if f == opening else {})} for f in fields}
    schema = {"type": "object", "properties": props, "required": list(fields), "additionalProperties": False}
    return {"type": "json_schema", "json_schema": {"name": "next_situation", "strict": True, "schema": schema}}


def parse_situation(text: str, fields: Sequence[str], opening: str | None = None) -> dict[str, str]:
    """The fields of one answer, in declared order; raises :class:`ValueError` saying why it is unreadable."""
    try:
        data = json.loads(text.strip())
    except json.JSONDecodeError as exc:
        raise ValueError(f"not a JSON object ({exc.msg})") from None
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    missing, extra = [f for f in fields if f not in data], sorted(set(data) - set(fields))
    if missing or extra:
        raise ValueError("; ".join(([f"missing {', '.join(missing)}"] if missing else [])
                                   + ([f"unexpected {', '.join(extra)}"] if extra else [])))
    bad = [f for f in fields if not isinstance(data[f], str)]
    if bad:
        raise ValueError(f"not a string: {', '.join(bad)}")
    copied = [f for f in fields if _PLACEHOLDER.fullmatch(data[f].strip())]
    if copied:
        raise ValueError(f"the form's placeholder copied, not filled in: {', '.join(copied)}")
    if opening is not None and not data[opening].strip():
        raise ValueError(f"{opening} (the next session's opening message) is empty")
    return {f: data[f] for f in fields}


def stored_parts(situation: str | None, fields: Sequence[str]) -> dict[str, str] | None:
    """The fields of a stored structured situation (None: none declared, or session 1's free text)."""
    if not fields or not situation:
        return None
    try:
        return parse_situation(situation, fields)
    except ValueError:
        return None  # session 1's situation is the target's free text


def situation_lines(parts: dict[str, str]) -> str:
    """``${situation}`` of a structured situation: one ``name: text`` line per field."""
    return "\n".join(f"{k}: {v}" for k, v in parts.items())
