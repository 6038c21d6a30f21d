"""Role-play mode: clinician settings on studies, study profiles and role-play sessions.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table("ann_studies") as batch:
        batch.add_column(sa.Column("clinician_model", sa.String(200), nullable=True))
        batch.add_column(sa.Column("clinician_max_tokens", sa.Integer, nullable=True))
        batch.add_column(sa.Column("clinician_temperature", sa.Float, nullable=True))
        batch.add_column(sa.Column("clinician_prompt", sa.String(200), nullable=True))
        batch.add_column(sa.Column("minutes", sa.Integer, nullable=True))
    op.create_table(
        "ann_study_profiles",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("study_id", sa.Integer, sa.ForeignKey("ann_studies.id"), nullable=False, index=True),
        sa.Column("profile_id", sa.String(120), nullable=False),
        sa.Column("profile_json", sa.JSON, nullable=False),
        sa.Column("position", sa.Integer, nullable=False),
        sa.UniqueConstraint("study_id", "profile_id", name="uq_study_profile"),
    )
    op.create_table(
        "ann_roleplay_sessions",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("study_id", sa.Integer, sa.ForeignKey("ann_studies.id"), nullable=False, index=True),
        sa.Column("annotator_id", sa.Integer, sa.ForeignKey("ann_annotators.id"), nullable=False, index=True),
        sa.Column("study_profile_id", sa.Integer, sa.ForeignKey("ann_study_profiles.id"), nullable=False),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("run_id", sa.String(64), nullable=True),
        sa.Column("interaction_id", sa.String(120), nullable=True),
        sa.Column("started_at", TZ, nullable=True),
        sa.Column("deadline_at", TZ, nullable=True),
        sa.Column("finished_at", TZ, nullable=True),
        sa.Column("item_id", sa.Integer, sa.ForeignKey("ann_items.id"), nullable=True),
        sa.UniqueConstraint("study_id", "annotator_id", "study_profile_id", name="uq_roleplay_session"),
        sa.CheckConstraint(
            "status IN ('not_started', 'active', 'finished')", name="ck_roleplay_status"
        ),
    )


def downgrade() -> None:
    op.drop_table("ann_roleplay_sessions")
    op.drop_table("ann_study_profiles")
    with op.batch_alter_table("ann_studies") as batch:
        for col in ("minutes", "clinician_prompt", "clinician_temperature",
                    "clinician_max_tokens", "clinician_model"):
            batch.drop_column(col)
