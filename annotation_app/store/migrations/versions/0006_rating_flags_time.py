"""Ratings: skip / flag with a reason, and active time per item.

Revision ID: 0006
Revises: 0005

``ann_ratings.flag`` is ``skip`` (the annotator will not rate the item) or ``flag`` (a
problem with the item the admin should see), with ``flag_reason`` in the annotator's
words; ``active_seconds`` is the time spent actively on the item. The existing
``version`` column (incremented by every write) is what the app now checks: a write
based on an older version is refused.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("ann_ratings", sa.Column("flag", sa.String(16), nullable=True))
    op.add_column("ann_ratings", sa.Column("flag_reason", sa.Text(), nullable=False, server_default=""))
    op.add_column("ann_ratings", sa.Column("active_seconds", sa.Float(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("ann_ratings") as batch:
        batch.drop_column("active_seconds")
        batch.drop_column("flag_reason")
        batch.drop_column("flag")
