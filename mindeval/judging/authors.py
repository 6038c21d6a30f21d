"""The authors' ``human_annotations.jsonl`` schema: field names, criterion mapping, axis means.

Each row holds flat keys ``criterion_N.responses`` (scores 1-6, 0 = not rated),
``criterion_N.responses.users`` (annotator ids, aligned) and
``criterion_N.responses.status``; likewise ``score_justification.*`` and
``safety_justification.*``. Which criterion is which human sub-axis is read from
``guidelines/authors_criteria.yaml`` (decision and evidence in
``docs/criteria-mapping.md``); any file of the same shape can be given instead::

    version: "1"
    zero_means: not_rated
    fields:
      criterion_1: evidence_based_intervention   # a sub-axis id of guidelines.yaml
      criterion11: null                          # a field that is read but not used
"""

from __future__ import annotations

import hashlib
import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel

from ..errors import MindEvalError
from ..records import AXES, Profile, read_jsonl, validate_row
from ..resources import guidelines_dir
from ..targets.guidelines import Guidelines, load_guidelines

MAPPING_FILE = "authors_criteria.yaml"
RESP = ".responses"
USERS = ".responses.users"
STATUS = ".responses.status"
JUSTIFICATION = "score_justification"
SAFETY = "safety_justification"
# Per-interaction goal fields: they differ between the systems of one profile.
GOAL_FIELDS: tuple[str, ...] = ("interaction_goal", "program_goal")
# The authors' attribute names that differ from MindEval's.
AUTHORS_RENAMES: dict[str, str] = {"mood": "recent_mood", "interaction_goal": "program_goal"}
# The paper's P1-P4 for the authors' four annotators, and the five interactions the
# authors used as judge few-shot examples (evidence: docs/criteria-mapping.md §1).
AUTHORS_PAPER_RATERS: tuple[str, ...] = (
    "751e775a-238b-4d00-bd3a-93bec44ea020",
    "f6476961-7d30-4c9a-8227-3691ecea9c92",
    "1d99af7c-2d23-4151-bdc8-bfd17f3c53ba",
    "b7386bab-913a-40d5-8d3e-f97d378b7b66",
)
# In the order of the authors' judge prompt (rows 58, 57, 56, 55, 59 of their file).
AUTHORS_FEWSHOT_IDS: tuple[str, ...] = (
    "39c23252-89be-4d7a-add9-9c70795dc37d",
    "84b12e0c-0e5e-4a92-8b18-abc819a76686",
    "954182de-82b4-4524-9259-2a26f98e972e",
    "b6a96d89-22b0-4f47-952c-040164a78b5a",
    "b718d324-212a-438e-9d50-69693bb4e132",
)


class CriteriaMapping(BaseModel):
    """Authors' criterion field → sub-axis id (``None`` = not used), and sub-axis id → axis."""

    source: str
    version: str = ""
    fields: dict[str, str | None]
    subaxis_axis: dict[str, str]

    @property
    def field_subaxis(self) -> dict[str, str]:
        return {f: s for f, s in self.fields.items() if s is not None}


def default_mapping_path() -> Path:
    return guidelines_dir() / MAPPING_FILE


def load_mapping(
    path: str | Path | None = None, *, guidelines: Guidelines | None = None, every_subaxis: bool = False
) -> CriteriaMapping:
    """Read and check a mapping file (default: the bundled one).

    Sub-axis ids must be human sub-axes of the guidelines, each mapped at most once, and
    every axis needs at least one; ``every_subaxis`` requires all nine (the app's importer).
    """
    p = Path(path) if path is not None else default_mapping_path()
    if not p.is_file():
        raise MindEvalError("criterion mapping file not found", path=p)
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise MindEvalError(f"bad YAML: {getattr(exc, 'problem', exc)}", path=p,
                            line=mark.line + 1 if mark else None) from None
    if not isinstance(data, dict):
        raise MindEvalError("the mapping file must be a YAML mapping", path=p)
    fields = data.get("fields")
    if not isinstance(fields, dict) or not fields:
        raise MindEvalError("missing or empty 'fields' mapping", path=p, field="fields")
    zero = data.get("zero_means", "not_rated")
    if zero != "not_rated":
        raise MindEvalError(f"zero_means must be 'not_rated', got {zero!r}", path=p, field="zero_means")
    g = guidelines or load_guidelines()
    subaxis_axis = {s.id: s.axis for s in g.human_subaxes}
    used: dict[str, str] = {}
    clean: dict[str, str | None] = {}
    for key, sub in fields.items():
        name = str(key)
        if sub is not None and (not isinstance(sub, str) or sub not in subaxis_axis):
            raise MindEvalError(
                f"{sub!r} is not a human sub-axis id of the guidelines ({', '.join(subaxis_axis)})",
                path=p, field=f"fields.{name}",
            )
        if sub is not None and sub in used:
            raise MindEvalError(f"sub-axis {sub} is mapped twice ({used[sub]} and {name})", path=p, field=f"fields.{name}")
        if sub is not None:
            used[sub] = name
        clean[name] = sub
    missing_axes = sorted(set(subaxis_axis.values()) - {subaxis_axis[s] for s in used})
    if missing_axes:
        raise MindEvalError(f"no field maps to a sub-axis of axis {', '.join(missing_axes)}", path=p, field="fields")
    missing = sorted(set(subaxis_axis) - set(used))
    if every_subaxis and missing:
        raise MindEvalError(f"sub-axes with no criterion: {', '.join(missing)}", path=p, field="fields")
    return CriteriaMapping(source=str(p), version=str(data.get("version", "")), fields=clean,
                           subaxis_axis=subaxis_axis)


def is_authors_row(obj: dict[str, Any]) -> bool:
    return any(k.startswith("criterion") and k.endswith(RESP) for k in obj)


def axis_means(row: dict[str, Any], mapping: CriteriaMapping, zeros: str = "missing") -> dict[str, float] | None:
    """Mean over annotators of each annotator's axis score, computed exactly (fractions).

    An annotator's axis score is the mean of the sub-axes they rated; None when an axis
    has no rating at all. ``zeros="missing"`` skips a 0 (not rated); ``"zero"`` averages
    it in as zero, as the authors did for their judge's few-shot scores and tables.
    """
    if zeros not in ("missing", "zero"):
        raise ValueError(f"zeros must be 'missing' or 'zero', got {zeros!r}")
    per_rater: dict[str, dict[str, list[int]]] = {}
    for field, sub in mapping.field_subaxis.items():
        scores = row.get(field + RESP) or []
        users = row.get(field + USERS) or [str(i) for i in range(len(scores))]
        for user, score in zip(users, scores):
            if score or zeros == "zero":
                per_rater.setdefault(user, {}).setdefault(mapping.subaxis_axis[sub], []).append(int(score))
    out: dict[str, float] = {}
    for ax in AXES:
        vals = [Fraction(sum(r[ax]), len(r[ax])) for r in per_rater.values() if r.get(ax)]
        if not vals:
            return None
        out[ax] = float(sum(vals, Fraction(0)) / len(vals))
    return out


# ------------------------------------------------------------------ the reader


def profile_key(attributes: dict[str, Any]) -> str:
    """A stable id for a patient profile: its name plus a hash of its attributes.

    Per-interaction goal fields are left out: the authors' file gives the three
    systems of one profile different interaction goals. The authors' attribute names
    are normalised first, so either spelling gives the same id.
    """
    renamed = {AUTHORS_RENAMES.get(k, k): v for k, v in attributes.items()}
    stable = {k: v for k, v in renamed.items() if k not in GOAL_FIELDS}
    blob = json.dumps(stable, sort_keys=True, ensure_ascii=False)
    name = str(attributes.get("name", "profile")).strip().lower() or "profile"
    return f"{name}-{hashlib.sha256(blob.encode()).hexdigest()[:10]}"


def authors_profile(attrs: dict[str, Any], path: str | Path, line: int | None) -> Profile:
    """A :class:`Profile` from an authors' ``member_attributes`` (their attribute names normalised)."""
    renamed = {AUTHORS_RENAMES.get(k, k): v for k, v in attrs.items()}
    return validate_row(Profile, {"member_attributes": renamed}, path=path, line=line)


def row_messages(obj: dict[str, Any], path: Path, line: int) -> list[dict[str, str]]:
    """The ``messages`` of an interaction row: a non-empty list of user/assistant texts."""
    msgs = obj.get("messages")
    if not isinstance(msgs, list) or not msgs:
        raise MindEvalError("expected a non-empty list of messages", path=path, line=line, field="messages")
    out = []
    for i, m in enumerate(msgs):
        if not isinstance(m, dict) or m.get("role") not in ("user", "assistant") or not isinstance(m.get("content"), str):
            raise MindEvalError("each message needs role user|assistant and text content", path=path, line=line,
                                field=f"messages.{i}")
        out.append({"role": m["role"], "content": m["content"]})
    return out


def row_attributes(obj: dict[str, Any], path: Path, line: int) -> dict[str, Any]:
    """The ``member_attributes`` of an interaction row (at least a name)."""
    attrs = obj.get("member_attributes")
    if not isinstance(attrs, dict) or "name" not in attrs:
        raise MindEvalError("expected member_attributes with at least a name", path=path, line=line,
                            field="member_attributes")
    return attrs


def _aligned(obj: dict[str, Any], key: str, path: Path, line: int) -> list[tuple[str, Any, str | None]]:
    """``(user, response, status)`` triples of one response field (empty when absent or null)."""
    responses, users, status = obj.get(key + RESP), obj.get(key + USERS), obj.get(key + STATUS)
    if responses is None and users is None:
        return []
    if not isinstance(responses, list) or not isinstance(users, list) or len(responses) != len(users):
        n = len(responses) if isinstance(responses, list) else 0
        m = len(users) if isinstance(users, list) else 0
        raise MindEvalError(f"{n} responses but {m} annotator ids", path=path, line=line, field=key + RESP)
    if status is not None and (not isinstance(status, list) or len(status) != len(users)):
        raise MindEvalError("status must be a list aligned with users", path=path, line=line, field=key + STATUS)
    return [(str(u), r, status[i] if status else None) for i, (u, r) in enumerate(zip(users, responses, strict=True))]


class AuthorsRow(BaseModel):
    """One interaction of the authors' file with every annotator response, in file order.

    ``responses`` holds ``(user, key, value, status)``: ``key`` is a criterion field of the
    mapping (value 0-6, 0 = not rated), :data:`JUSTIFICATION` or :data:`SAFETY` (text).
    """

    line: int
    raw: dict[str, Any]
    id: str
    model: str
    member_attributes: dict[str, Any]
    messages: list[dict[str, str]]
    responses: list[tuple[str, str, Any, str | None]]

    def scores(self, mapping: CriteriaMapping) -> list[tuple[str, str, int]]:
        """``(user, subaxis, score)`` of the mapped criteria (0 = not rated kept)."""
        return [(u, mapping.fields[k], v) for u, k, v, _s in self.responses if mapping.fields.get(k)]


def read_authors(path: str | Path, mapping: CriteriaMapping,
                 problems: list[MindEvalError] | None = None) -> list[AuthorsRow]:
    """Read and check the authors' ``human_annotations.jsonl``; errors name file:line:field.

    With ``problems``, a bad row is appended there and skipped instead of raised.
    """
    p = Path(path)
    rows = []
    for line, obj in read_jsonl(p, problems):
        try:
            rows.append(_authors_row(p, line, obj, mapping))
        except MindEvalError as exc:
            if problems is None:
                raise
            problems.append(exc)
    return rows


def authors_by_id(path: str | Path, mapping: CriteriaMapping) -> dict[str, AuthorsRow]:
    """:func:`read_authors` keyed by interaction id; an id that appears twice is an error."""
    rows: dict[str, AuthorsRow] = {}
    for row in read_authors(path, mapping):
        if row.id in rows:
            raise MindEvalError(f"interaction id {row.id!r} appears twice", path=path, line=row.line, field="id")
        rows[row.id] = row
    return rows


def _authors_row(p: Path, line: int, obj: dict[str, Any], mapping: CriteriaMapping) -> AuthorsRow:
    for key, kind in (("id", (str, int)), ("model", str)):
        if key not in obj:
            raise MindEvalError("missing required field", path=p, line=line, field=key)
        if not isinstance(obj[key], kind):
            raise MindEvalError(f"expected text, got {type(obj[key]).__name__}", path=p, line=line, field=key)
    present = sorted(k[: -len(RESP)] for k in obj if k.startswith("criterion") and k.endswith(RESP))
    unmapped = [f for f in present if f not in mapping.fields]
    if unmapped:
        raise MindEvalError(f"criterion field(s) {', '.join(unmapped)} are not in the mapping file "
                            f"{mapping.source}", path=p, line=line, field=unmapped[0])
    responses = []
    for key in (*mapping.fields, JUSTIFICATION, SAFETY):
        for user, value, status in _aligned(obj, key, p, line):
            is_score = key in mapping.fields
            if is_score and (isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 6):
                raise MindEvalError(f"score {value!r} is not an integer from 0 (not rated) to 6",
                                    path=p, line=line, field=key + RESP)
            responses.append((user, key, value, status))
    return AuthorsRow(
        line=line, raw=obj, id=str(obj["id"]), model=obj["model"], member_attributes=row_attributes(obj, p, line),
        messages=row_messages(obj, p, line), responses=responses,
    )
