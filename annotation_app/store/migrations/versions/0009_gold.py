"""Gold items, qualification and the kind of each assignment.

Revision ID: 0009
Revises: 0008

``ann_gold_items`` holds an item of a rating study with its expected values (sub-axis ->
value) and a tolerance (0 = exact; categorical scales are always exact). A study mixes gold
items into every rater's queue at ``gold_rate`` and can require a new rater to pass
``qualify_n`` gold items (a share ``qualify_pass`` of them right) before real items open.
``ann_assignments.kind`` is ``real``, ``gold`` or ``qualify`` (never shown to the rater).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("ann_studies", sa.Column("gold_rate", sa.Float(), nullable=False, server_default="0"))
    op.add_column("ann_studies", sa.Column("qualify_n", sa.Integer(), nullable=False, server_default="0"))
    op.add_column("ann_studies", sa.Column("qualify_pass", sa.Float(), nullable=False, server_default="1"))
    op.add_column("ann_assignments", sa.Column("kind", sa.String(8), nullable=False, server_default="real"))
    op.create_table(
        "ann_gold_items",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("study_id", sa.Integer, sa.ForeignKey("ann_studies.id"), nullable=False, index=True),
        sa.Column("item_id", sa.Integer, sa.ForeignKey("ann_items.id"), nullable=False),
        sa.Column("expected", sa.JSON, nullable=False),
        sa.Column("tolerance", sa.Integer, nullable=False, server_default="0"),
        sa.Column("note", sa.Text, nullable=False, server_default=""),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("study_id", "item_id", name="uq_gold_item"),
    )


def downgrade() -> None:
    op.drop_table("ann_gold_items")
    with op.batch_alter_table("ann_assignments") as batch:
        batch.drop_column("kind")
    with op.batch_alter_table("ann_studies") as batch:
        batch.drop_column("qualify_pass")
        batch.drop_column("qualify_n")
        batch.drop_column("gold_rate")
