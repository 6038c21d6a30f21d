"""Ratings at the judge's unit: answers to a target's questions, and one rating per reply.

Revision ID: 0008
Revises: 0007

``ann_rating_answers`` holds a draft's answer per question id (item-level targets);
``ann_rating_replies`` a draft's level and issue flags per clinician reply (``unit: reply``
targets, ``turn`` = the reply's 0-based position in the messages). Each submission freezes
them in its revision row (``answers_json``: the answers the walk reaches; ``replies_json``:
every reply), beside ``values_json``.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "ann_rating_answers",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("rating_id", sa.Integer, sa.ForeignKey("ann_ratings.id"), nullable=False, index=True),
        sa.Column("question", sa.String(80), nullable=False),
        sa.Column("answer", sa.String(80), nullable=False),
        sa.UniqueConstraint("rating_id", "question", name="uq_rating_answer"),
    )
    op.create_table(
        "ann_rating_replies",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("rating_id", sa.Integer, sa.ForeignKey("ann_ratings.id"), nullable=False, index=True),
        sa.Column("turn", sa.Integer, nullable=False),
        sa.Column("level", sa.String(80), nullable=True),
        sa.Column("flags", sa.JSON, nullable=False),
        sa.UniqueConstraint("rating_id", "turn", name="uq_rating_reply"),
    )
    with op.batch_alter_table("ann_rating_revisions") as batch:
        batch.add_column(sa.Column("answers_json", sa.JSON, nullable=True))
        batch.add_column(sa.Column("replies_json", sa.JSON, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("ann_rating_revisions") as batch:
        batch.drop_column("replies_json")
        batch.drop_column("answers_json")
    op.drop_table("ann_rating_replies")
    op.drop_table("ann_rating_answers")
