"""Human corrections of judge values in the run store: the one writer (append-only) and reader.

A correction never touches the judge's rows (``judgments``, ``reply_judgments``): each is a
new ``corrections`` row saying who changed which value, when, from what, to what and why.
What a correction means for scores is :mod:`mindeval.corrections`'s (the latest row per
key wins).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field
from sqlalchemy import inspect, select

from .db import Database
from .runs import insert_row
from .tables import CorrectionRow

Unit = Literal["conversation", "reply", "question"]
Value = int | float | str | None
# How a correction's reviewer is known: a name typed by the reviewer (``--who``, the run viewer's
# name box), this computer's account (the default), or the annotation app's signed-in person.
WhoSource = Literal["self-declared", "os-user", "signed-in"]
WHO_SOURCE_SHOWN = {"self-declared": "self-declared", "os-user": "this computer's user",
                    "signed-in": "signed in to the annotation app", None: "identity not recorded"}


class Correction(BaseModel):
    """One correction as stored: the key (interaction, judge, sample, unit, ref, axis), the
    change (``from_value`` -> ``to_value``) and its provenance (``who``, ``at``, ``reason``).

    ``ref``: a reply's turn (its 0-based position in the judged messages) or a question id;
    ``""`` for the conversation. ``derived``: for a question, the axis value its corrected
    answers give (computed when the correction was made, with every earlier correction)."""

    id: int | None = None
    run_id: str
    interaction_id: str
    judge_model: str
    sample: int = Field(ge=0)
    unit: Unit
    ref: str = ""
    axis: str
    from_value: Value
    to_value: Value
    derived: Value = None
    reason: str = Field(min_length=1)
    who: str = Field(min_length=1)
    who_source: WhoSource | None = None  # None: made before this was recorded (schema version < 5)
    at: datetime | None = None

    @property
    def key(self) -> tuple[str, int, str, str, str]:
        """What a later correction replaces: (interaction, sample, unit, ref, axis)."""
        return (self.interaction_id, self.sample, self.unit, self.ref, self.axis)

    def where(self) -> str:
        """The corrected place in words (``reply at turn 4``, ``question q2``, ``conversation``)."""
        if self.unit == "reply":
            return f"reply at turn {int(self.ref) + 1}"
        return f"question {self.ref}" if self.unit == "question" else "conversation"

    def who_shown(self) -> str:
        """The reviewer with how she is known: ``ana (self-declared)``."""
        return f"{self.who} ({WHO_SOURCE_SHOWN[self.who_source]})"

    def provenance(self) -> dict[str, Any]:
        """The row as exports list it."""
        return {"run_id": self.run_id, "interaction_id": self.interaction_id, "judge_model": self.judge_model,
                "sample": self.sample, "unit": self.unit, "ref": self.ref, "axis": self.axis,
                "from": self.from_value, "to": self.to_value, "reason": self.reason, "who": self.who,
                "who_source": self.who_source, "at": self.at.isoformat() if self.at else None}


def append_corrections(db: Database, corrections: list[Correction]) -> list[Correction]:
    """Insert ``corrections`` in one transaction; return them with their ids and times."""
    out = []
    with db.write() as s:
        for c in corrections:
            values = dict(run_id=c.run_id, interaction_id=c.interaction_id, judge_model=c.judge_model,
                          sample=c.sample, unit=c.unit, ref=c.ref, axis=c.axis, from_json={"value": c.from_value},
                          to_json={"value": c.to_value},
                          derived_json=None if c.unit != "question" else {"value": c.derived},
                          reason=c.reason, who=c.who, who_source=c.who_source)
            row_id = insert_row(s, CorrectionRow, values)
            out.append((c, row_id))
    stored = {c.id: c for c in read_corrections(db, corrections[0].run_id)} if corrections else {}
    return [stored[row_id] for _, row_id in out]


def read_corrections(db: Database, run_id: str) -> list[Correction]:
    """Every correction of ``run_id``, oldest first (none in a store made before corrections; a store
    opened without upgrading that predates ``who_source`` reads it as not recorded)."""
    insp = inspect(db.engine)
    if not insp.has_table(CorrectionRow.__tablename__):
        return []
    have = {c["name"] for c in insp.get_columns(CorrectionRow.__tablename__)}
    table = CorrectionRow.__table__
    with db.read() as s:
        rows = s.execute(select(*[c for c in table.columns if c.name in have]).where(table.c.run_id == run_id)
                         .order_by(table.c.id)).mappings().all()
    return [Correction(id=r["id"], run_id=r["run_id"], interaction_id=r["interaction_id"],
                       judge_model=r["judge_model"], sample=r["sample"], unit=r["unit"], ref=r["ref"], axis=r["axis"],
                       from_value=r["from_json"].get("value"), to_value=r["to_json"].get("value"),
                       derived=(r["derived_json"] or {}).get("value"), reason=r["reason"], who=r["who"],
                       who_source=r.get("who_source"), at=r["created_at"]) for r in rows]
