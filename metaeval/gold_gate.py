"""Leave out raters of an annotation study whose gold accuracy is below a threshold
(``metaeval compare --min-gold-accuracy``), recording who was left out and why.

The study's gold answers arrive as plain data (:class:`mindeval.study_data.StudyRatings`:
``gold_items`` and per rater ``right`` of ``answered``, first submissions); gold items are never
among the ratings compared. A rater without any gold answer (e.g. imported ratings) has no
known accuracy and is left out too, and said so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mindeval.errors import MindEvalError
from mindeval.stats.proportion import wilson_interval
from mindeval.study_data import StudyRatings


def gate_raters(studies: Mapping[str, StudyRatings] | None, threshold: float | None
                ) -> tuple[dict[str, StudyRatings], list[dict[str, Any]]]:
    """``studies`` without the ratings of raters below ``threshold``, and one record per rater left out."""
    studies = dict(studies or {})
    if threshold is None:
        return studies, []
    if not 0 <= threshold <= 1:
        raise MindEvalError(f"--min-gold-accuracy is a share from 0 to 1, not {threshold}", field="--min-gold-accuracy")
    if not studies:
        raise MindEvalError("--min-gold-accuracy applies to an annotation study: give --humans DATABASE_URL --study NAME",
                            field="--min-gold-accuracy")
    out: dict[str, StudyRatings] = {}
    excluded: list[dict[str, Any]] = []
    for source, sr in studies.items():
        if sr.gold_items == 0:
            raise MindEvalError(f"study '{sr.study}' has no gold items, so no rater has a gold accuracy "
                                "(mark gold items with `mindeval app admin gold`)", field="--min-gold-accuracy")
        drop = set()
        for rater in sorted({r.annotator for r in sr.ratings if not r.adjudicated}):
            g = sr.gold.get(rater)
            if g is None or g.answered == 0:
                drop.add(rater)
                excluded.append({"source": sr.source, "rater": rater, "right": 0, "answered": 0, "accuracy": None,
                                 "ci95": None, "reason": "no gold item answered: accuracy unknown"})
                continue
            acc = g.right / g.answered
            if acc < threshold:
                drop.add(rater)
                low, high = wilson_interval(g.right, g.answered)
                excluded.append({"source": sr.source, "rater": rater, "right": g.right, "answered": g.answered,
                                 "accuracy": acc, "ci95": [low, high],
                                 "reason": f"gold accuracy {g.right}/{g.answered} = {acc:.2f} "
                                           f"(95% CI {low:.2f}-{high:.2f}) below {threshold:g}"})
        out[source] = sr.model_copy(update={"ratings": [r for r in sr.ratings if r.annotator not in drop]})
    return out, excluded
