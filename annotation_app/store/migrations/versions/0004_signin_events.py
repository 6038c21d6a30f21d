"""Sign-in audit log: every attempt (normalised name, client, time, outcome; never the code).

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "ann_signin_events",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False, index=True),
        sa.Column("name_key", sa.String(120), nullable=False, index=True),
        sa.Column("client", sa.String(64), nullable=False, index=True),
        sa.Column("outcome", sa.String(16), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("ann_signin_events")
