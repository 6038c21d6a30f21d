"""Judge few-shot examples drawn (seeded) from an annotated file.

The file follows the authors' ``human_annotations.jsonl`` schema. An example's scores
are the annotators' mean per axis: each annotator's axis score is the mean of the
sub-axes they rated (0 = not rated, skipped), then averaged over annotators. The field
→ sub-axis mapping is ``guidelines/authors_criteria.yaml``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .authors import axis_means, load_mapping
from .errors import MindEvalError
from .judge import FewShotExample
from .records import INTAKE_FIELDS, read_jsonl


def load_fewshot(path: Path, k: int, seed: int) -> list[FewShotExample]:
    """Pick ``k`` annotated interactions with a seeded generator (sorted by file order)."""
    mapping = load_mapping()
    candidates: list[FewShotExample] = []
    for lineno, row in read_jsonl(path):
        for key in ("member_attributes", "messages"):
            if key not in row:
                raise MindEvalError("missing required field", path=path, line=lineno, field=key)
        means = axis_means(row, mapping)
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
