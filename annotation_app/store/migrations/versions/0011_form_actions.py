"""Form actions applied, per person and browser tab, shared by every app process.

Revision ID: 0011
Revises: 0010

``ann_form_actions`` replaces the one process's memory that remembered the highest ``seq`` a
browser tab's form had applied: after a process dies, the browser re-sends its last Submit to
another process, which must refuse it as already applied. ``ann_form_writes`` replaces the one
process's memory of which tab's state wrote which rating versions: a state re-sent to another
process after a reconnect is based on the version its form showed, moved past its own tab's
earlier writes, not refused for them.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "ann_form_actions",
        sa.Column("user_id", sa.Integer, sa.ForeignKey("ann_annotators.id", ondelete="CASCADE"),
                  primary_key=True),
        sa.Column("tab", sa.String(64), primary_key=True),
        sa.Column("seq", sa.Integer, nullable=False),
    )
    op.create_table(
        "ann_form_writes",
        sa.Column("assignment_id", sa.Integer, sa.ForeignKey("ann_assignments.id", ondelete="CASCADE"),
                  primary_key=True),
        sa.Column("first_version", sa.Integer, primary_key=True),
        sa.Column("last_version", sa.Integer, nullable=False),
        sa.Column("tab", sa.String(64), nullable=False),
        sa.Column("seq", sa.Integer, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("ann_form_writes")
    op.drop_table("ann_form_actions")
