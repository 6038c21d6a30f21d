"""Judge few-shot examples drawn (seeded) from an annotated file.

The file follows the authors' ``human_annotations.jsonl`` schema. An example's scores
are the annotators' mean per axis: each annotator's axis score is the mean of the
sub-axes they rated (0 = not rated, skipped), then averaged over annotators. The field
→ sub-axis mapping is ``guidelines/authors_criteria.yaml``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml

from .errors import MindEvalError
from .guidelines import load_guidelines
from .judge import FewShotExample
from .records import AXES, INTAKE_FIELDS, read_jsonl
from .resources import guidelines_dir


def criteria_map(path: Path | None = None) -> dict[str, str]:
    """Authors' criterion field → sub-axis id (fields mapped to null are dropped)."""
    p = path or guidelines_dir() / "authors_criteria.yaml"
    data = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
    return {k: v for k, v in (data.get("fields") or {}).items() if v}


def axis_means(row: dict, mapping: dict[str, str], subaxis_axis: dict[str, str]) -> dict[str, float] | None:
    """Mean over annotators of each annotator's axis score; None when an axis has no rating."""
    per_rater: dict[str, dict[str, list[int]]] = {}
    for field, sub in mapping.items():
        scores = row.get(f"{field}.responses") or []
        users = row.get(f"{field}.responses.users") or [str(i) for i in range(len(scores))]
        for user, score in zip(users, scores):
            if score:  # 0 = not rated
                per_rater.setdefault(user, {}).setdefault(subaxis_axis[sub], []).append(int(score))
    out: dict[str, float] = {}
    for ax in AXES:
        vals = [float(np.mean(r[ax])) for r in per_rater.values() if r.get(ax)]
        if not vals:
            return None
        out[ax] = float(np.mean(vals))
    return out


def load_fewshot(path: Path, k: int, seed: int) -> list[FewShotExample]:
    """Pick ``k`` annotated interactions with a seeded generator (sorted by file order)."""
    g = load_guidelines()
    subaxis_axis = {s.id: s.axis for s in g.human_subaxes}
    mapping = criteria_map()
    candidates: list[FewShotExample] = []
    for lineno, row in read_jsonl(path):
        for key in ("member_attributes", "messages"):
            if key not in row:
                raise MindEvalError("missing required field", path=path, line=lineno, field=key)
        means = axis_means(row, mapping, subaxis_axis)
        if means is None:
            continue
        attrs = row["member_attributes"]
        missing = [f for f in INTAKE_FIELDS if f not in attrs]
        if missing:
            raise MindEvalError("missing intake attribute", path=path, line=lineno,
                                field=f"member_attributes.{missing[0]}")
        candidates.append(FewShotExample(
            intake={f: str(attrs[f]) for f in INTAKE_FIELDS},
            messages=[{"role": m["role"], "content": m["content"]} for m in row["messages"]],
            scores=means,
        ))
    if k > len(candidates):
        raise MindEvalError(f"asked for {k} few-shot examples but only {len(candidates)} are rated", path=path)
    idx = sorted(np.random.default_rng(seed).choice(len(candidates), size=k, replace=False).tolist())
    return [candidates[i] for i in idx]
