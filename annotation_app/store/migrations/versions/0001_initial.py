"""Initial annotation schema: people, studies, items, assignments and ratings.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "ann_annotators",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(120), nullable=False, unique=True),
        sa.Column("code_hash", sa.String(300), nullable=True),
        sa.Column("is_admin", sa.Boolean, nullable=False),
        sa.Column("active", sa.Boolean, nullable=False),
        sa.Column("origin", sa.String(16), nullable=False),
        sa.Column("created_at", TZ, nullable=False),
    )
    op.create_table(
        "ann_auth_sessions",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("annotator_id", sa.Integer, sa.ForeignKey("ann_annotators.id"), nullable=False, index=True),
        sa.Column("created_at", TZ, nullable=False),
        sa.Column("expires_at", TZ, nullable=False),
    )
    op.create_table(
        "ann_studies",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(200), nullable=False, unique=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("description", sa.Text, nullable=False),
        sa.Column("k", sa.Integer, nullable=False),
        sa.Column("seed", sa.Integer, nullable=False),
        sa.Column("guidelines_version", sa.String(40), nullable=False),
        sa.Column("created_at", TZ, nullable=False),
    )
    op.create_table(
        "ann_items",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("external_id", sa.String(200), nullable=False, unique=True),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("source_ref", sa.Text, nullable=False),
        sa.Column("member_attributes", sa.JSON, nullable=False),
        sa.Column("messages", sa.JSON, nullable=False),
        sa.Column("clinician_model", sa.String(200), nullable=True),
        sa.Column("patient_kind", sa.String(16), nullable=False),
        sa.Column("meta", sa.JSON, nullable=False),
        sa.Column("created_at", TZ, nullable=False),
    )
    op.create_table(
        "ann_study_items",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("study_id", sa.Integer, sa.ForeignKey("ann_studies.id"), nullable=False, index=True),
        sa.Column("item_id", sa.Integer, sa.ForeignKey("ann_items.id"), nullable=False),
        sa.Column("position", sa.Integer, nullable=False),
        sa.UniqueConstraint("study_id", "item_id", name="uq_study_item"),
    )
    op.create_table(
        "ann_assignments",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("study_id", sa.Integer, sa.ForeignKey("ann_studies.id"), nullable=False, index=True),
        sa.Column("item_id", sa.Integer, sa.ForeignKey("ann_items.id"), nullable=False),
        sa.Column("annotator_id", sa.Integer, sa.ForeignKey("ann_annotators.id"), nullable=False, index=True),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("created_at", TZ, nullable=False),
        sa.UniqueConstraint("study_id", "item_id", "annotator_id", name="uq_assignment"),
        sa.UniqueConstraint("study_id", "annotator_id", "position", name="uq_assignment_position"),
    )
    op.create_table(
        "ann_ratings",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("assignment_id", sa.Integer, sa.ForeignKey("ann_assignments.id"), nullable=False, unique=True),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("revision", sa.Integer, nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("justification", sa.Text, nullable=False),
        sa.Column("safety_note", sa.Text, nullable=True),
        sa.Column("extra", sa.JSON, nullable=False),
        sa.Column("created_at", TZ, nullable=False),
        sa.Column("updated_at", TZ, nullable=False),
        sa.Column("submitted_at", TZ, nullable=True),
        sa.CheckConstraint("state IN ('draft', 'submitted')", name="ck_rating_state"),
    )
    op.create_table(
        "ann_rating_values",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("rating_id", sa.Integer, sa.ForeignKey("ann_ratings.id"), nullable=False, index=True),
        sa.Column("subaxis", sa.String(80), nullable=False),
        sa.Column("value", sa.Integer, nullable=False),
        sa.UniqueConstraint("rating_id", "subaxis", name="uq_rating_value"),
        sa.CheckConstraint("value >= 0 AND value <= 6", name="ck_rating_value_range"),
    )
    op.create_table(
        "ann_rating_revisions",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("rating_id", sa.Integer, sa.ForeignKey("ann_ratings.id"), nullable=False, index=True),
        sa.Column("revision", sa.Integer, nullable=False),
        sa.Column("action", sa.String(16), nullable=False),
        sa.Column("values_json", sa.JSON, nullable=False),
        sa.Column("justification", sa.Text, nullable=False),
        sa.Column("safety_note", sa.Text, nullable=True),
        sa.Column("created_at", TZ, nullable=False),
        sa.UniqueConstraint("rating_id", "revision", name="uq_rating_revision"),
    )


def downgrade() -> None:
    for name in (
        "ann_rating_revisions", "ann_rating_values", "ann_ratings", "ann_assignments",
        "ann_study_items", "ann_items", "ann_studies", "ann_auth_sessions", "ann_annotators",
    ):
        op.drop_table(name)
