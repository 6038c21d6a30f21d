"""The configurable mapping of the authors' criterion fields to MindEval's human sub-axes.

The default file is ``guidelines/authors_criteria.yaml`` (decision and evidence in
``docs/criteria-mapping.md``); any file with the same shape can be given instead::

    version: "1"
    zero_means: not_rated
    fields:
      criterion_1: evidence_based_intervention   # a sub-axis id of guidelines.yaml
      criterion11: null                          # a field that is read but not used

Sub-axis ids are checked against the human sub-axes of the guidelines, which also
give each sub-axis its axis.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import BaseModel

from mindeval.errors import MindEvalError
from mindeval.guidelines import load_guidelines
from mindeval.resources import guidelines_dir

DEFAULT_FILE = "authors_criteria.yaml"


class CriteriaMapping(BaseModel):
    """Authors' field → sub-axis id (``None`` = not used), and sub-axis id → axis."""

    source: str
    version: str
    fields: dict[str, str | None]
    subaxis_axis: dict[str, str]

    @property
    def field_subaxis(self) -> dict[str, str]:
        return {f: s for f, s in self.fields.items() if s is not None}


def default_mapping_path() -> Path:
    return guidelines_dir() / DEFAULT_FILE


def load_mapping(path: str | Path | None = None) -> CriteriaMapping:
    """Read and validate a criterion mapping file (default: the bundled one)."""
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
    guidelines = load_guidelines()
    subaxis_axis = {s.id: s.axis for s in guidelines.human_subaxes}
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
    return CriteriaMapping(
        source=str(p), version=str(data.get("version", "")), fields=clean, subaxis_axis=subaxis_axis,
    )
