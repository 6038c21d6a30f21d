"""Sign-in tickets any app process can redeem, and a record of the schema's upgrades.

Revision ID: 0010
Revises: 0009

``ann_signin_tickets`` replaces the one process's memory that held one-time sign-in tickets,
so several app processes behind one proxy share them (only hashes and sealed tokens are
stored). ``ann_migration_log`` gets a row each time an upgrade changes the revision (this one
included), naming the process that ran it.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "ann_signin_tickets",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("ticket_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("sealed", sa.String(200), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False, index=True),
    )
    op.create_table(
        "ann_migration_log",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("from_revision", sa.String(32), nullable=True),
        sa.Column("to_revision", sa.String(32), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("by", sa.String(120), nullable=False, server_default=""),
    )


def downgrade() -> None:
    op.drop_table("ann_migration_log")
    op.drop_table("ann_signin_tickets")
