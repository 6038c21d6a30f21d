"""Role-play messages sent while the clinician is still answering wait in a queue.

Revision ID: 0007
Revises: 0006

``ann_roleplay_queue`` holds a patient's message, in order, until the clinician's reply to
the previous one is stored; then it becomes the next turn (in the same transaction that
removes it from the queue), so a message is never lost nor sent twice.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "ann_roleplay_queue",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("session_id", sa.Integer, sa.ForeignKey("ann_roleplay_sessions.id"), nullable=False, index=True),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("ann_roleplay_queue")
