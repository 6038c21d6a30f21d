"""The judge's answers to an item-level rubric, per item of a study (admin review).

A run imported into a study keeps each judge sample's scores in the item's ``meta``
(``importers``); for a target whose dimensions are scored from questions the sample's
answers are kept too. This module lays them out so a person can see why a level was
given: every question with the judge's answer, whether it lay on the path the answers
took, and the severity it fired.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from sqlalchemy import select

from mindeval.judging.rubric import walk
from mindeval.store.db import Database
from mindeval.targets.guidelines import Guidelines

from .studies import get_study
from .tables import ItemRow, StudyItemRow


class AnswerRow(BaseModel):
    """One question of one judge sample of one item."""

    item: str
    sample: int
    dimension: str
    level: str  # the dimension's level (label), or "not relevant"
    question: str
    text: str
    answer: str
    on_path: bool
    severity: str  # the level this answer fired on the path ("" when none)


def judge_answers(db: Database, g: Guidelines, study: int | str) -> list[AnswerRow]:
    """Every stored judge answer of the study's items, in item and question order (empty when none)."""
    with db.read() as s:
        sid = get_study(s, study).id
        items = s.execute(select(ItemRow.external_id, ItemRow.meta).join(StudyItemRow, StudyItemRow.item_id == ItemRow.id)
                          .where(StudyItemRow.study_id == sid).order_by(StudyItemRow.position)).all()
    labels = {lv.value: lv.label for lv in g.levels}
    out: list[AnswerRow] = []
    for external_id, meta in items:
        for j in (meta or {}).get("judgments", []):
            answers: dict[str, Any] = j.get("answers") or {}
            if not answers:
                continue
            for ax in (a for a in g.judge_axes if a.questions):
                path, _ = walk(ax.questions, answers)
                value = (j.get("scores") or {}).get(ax.code)
                level = "not relevant" if value is None else labels.get(value, str(value))
                for q in ax.questions:
                    ans = str(answers.get(q.id, ""))
                    fired = q.severity.get(ans, "") if q.id in path else ""
                    out.append(AnswerRow(item=str(external_id), sample=int(j.get("sample", 0)), dimension=ax.code,
                                         level=level, question=q.id, text=q.text, answer=ans, on_path=q.id in path,
                                         severity=fired))
    return out


class JudgedItem(BaseModel):
    """An item imported from a run directory with the judge's samples: where its judge record lives."""

    item: str  # the item's external id
    run_dir: str
    interaction_id: str
    judgments: list[dict[str, Any]]


def judged_items(db: Database, study: int | str) -> list[JudgedItem]:
    """The study's items imported from run directories with judge samples, in study order."""
    from pathlib import Path

    with db.read() as s:
        sid = get_study(s, study).id
        rows = s.execute(select(ItemRow.external_id, ItemRow.source, ItemRow.source_ref, ItemRow.meta)
                         .join(StudyItemRow, StudyItemRow.item_id == ItemRow.id)
                         .where(StudyItemRow.study_id == sid).order_by(StudyItemRow.position)).all()
    return [JudgedItem(item=str(ext), run_dir=str(Path(ref).parent), interaction_id=str(meta["id"]),
                       judgments=list(meta["judgments"]))
            for ext, source, ref, meta in rows
            if source == "run" and (meta or {}).get("judgments") and "id" in (meta or {})]
