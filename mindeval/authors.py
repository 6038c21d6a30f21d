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

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel

from .errors import MindEvalError
from .guidelines import Guidelines, load_guidelines
from .records import AXES
from .resources import guidelines_dir

MAPPING_FILE = "authors_criteria.yaml"
RESP = ".responses"
USERS = ".responses.users"
STATUS = ".responses.status"
JUSTIFICATION = "score_justification"
SAFETY = "safety_justification"
# Keys of an authors' row that are not ratings and that are kept verbatim.
PASSTHROUGH = ("status", "_server_id", "member_profile", "conversation")


class CriteriaMapping(BaseModel):
    """Authors' criterion field → sub-axis id (``None`` = not used), and sub-axis id → axis."""

    source: str
    version: str = ""
    fields: dict[str, str | None]
    subaxis_axis: dict[str, str]

    @property
    def field_subaxis(self) -> dict[str, str]:
        return {f: s for f, s in self.fields.items() if s is not None}

    def criterion_for(self, subaxis_id: str) -> str:
        for crit, sub in self.fields.items():
            if sub == subaxis_id:
                return crit
        raise MindEvalError(f"no criterion maps to sub-axis '{subaxis_id}'", path=self.source)


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


def axis_means(row: dict[str, Any], mapping: CriteriaMapping) -> dict[str, float] | None:
    """Mean over annotators of each annotator's axis score (0 = not rated, skipped).

    An annotator's axis score is the mean of the sub-axes they rated; None when an axis
    has no rating at all.
    """
    per_rater: dict[str, dict[str, list[int]]] = {}
    for field, sub in mapping.field_subaxis.items():
        scores = row.get(field + RESP) or []
        users = row.get(field + USERS) or [str(i) for i in range(len(scores))]
        for user, score in zip(users, scores):
            if score:
                per_rater.setdefault(user, {}).setdefault(mapping.subaxis_axis[sub], []).append(int(score))
    out: dict[str, float] = {}
    for ax in AXES:
        vals = [sum(r[ax]) / len(r[ax]) for r in per_rater.values() if r.get(ax)]
        if not vals:
            return None
        out[ax] = sum(vals) / len(vals)
    return out
