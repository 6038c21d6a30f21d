"""The authors' ``human_annotations.jsonl`` layout and its criterion → sub-axis mapping.

Each row holds flat keys ``criterion_N.responses`` (scores, 0 = not rated),
``criterion_N.responses.users`` (annotator ids, aligned) and
``criterion_N.responses.status``; likewise ``score_justification.*`` and
``safety_justification.*``. Which criterion is which sub-axis is read from
``guidelines/authors_criteria.yaml`` (``fields: {criterion_1: <subaxis id or null>}``);
criteria mapped to ``null`` are carried along unchanged.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import BaseModel

from mindeval.errors import MindEvalError
from mindeval.guidelines import Guidelines
from mindeval.resources import guidelines_dir

MAPPING_FILE = "authors_criteria.yaml"
RESP = ".responses"
USERS = ".responses.users"
STATUS = ".responses.status"
JUSTIFICATION = "score_justification"
SAFETY = "safety_justification"
# Keys of an authors' row that are not ratings and that we keep verbatim.
PASSTHROUGH = ("status", "_server_id", "member_profile", "conversation")


class CriteriaMapping(BaseModel):
    """Ordered criterion keys of the authors' file and the sub-axis each one holds."""

    fields: dict[str, str | None]
    source: str

    def criterion_for(self, subaxis_id: str) -> str:
        for crit, sub in self.fields.items():
            if sub == subaxis_id:
                return crit
        raise MindEvalError(f"no criterion maps to sub-axis '{subaxis_id}'", path=self.source)


def load_mapping(g: Guidelines, path: str | Path | None = None) -> CriteriaMapping:
    """Read and check the mapping: every sub-axis exactly once, known ids only."""
    p = Path(path) if path else guidelines_dir() / MAPPING_FILE
    if not p.is_file():
        raise MindEvalError(
            "the criterion → sub-axis mapping file is missing (needed for the authors' schema)", path=p
        )
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise MindEvalError(f"invalid YAML: {exc}", path=p) from None
    fields = data.get("fields") if isinstance(data, dict) else None
    if not isinstance(fields, dict) or not fields:
        raise MindEvalError("expected a mapping 'fields: {criterion_N: subaxis_id or null}'", path=p, field="fields")
    known = {s.id for s in g.human_subaxes}
    seen: dict[str, str] = {}
    for crit, sub in fields.items():
        if sub is None:
            continue
        if sub not in known:
            raise MindEvalError(f"unknown sub-axis '{sub}'", path=p, field=f"fields.{crit}")
        if sub in seen:
            raise MindEvalError(f"sub-axis '{sub}' is mapped twice ({seen[sub]} and {crit})", path=p, field=f"fields.{crit}")
        seen[sub] = str(crit)
    missing = sorted(known - set(seen))
    if missing:
        raise MindEvalError(f"sub-axes with no criterion: {', '.join(missing)}", path=p, field="fields")
    return CriteriaMapping(fields={str(k): v for k, v in fields.items()}, source=str(p))


def is_authors_row(obj: dict) -> bool:
    return any(k.startswith("criterion") and k.endswith(RESP) for k in obj)
