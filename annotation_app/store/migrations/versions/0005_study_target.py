"""Studies belong to a target; rating values follow the target's scale.

Revision ID: 0005
Revises: 0004

``ann_studies.target`` names the study's target (a built-in name such as ``crisis``,
or the folder of a target outside the package); existing studies are ``mindeval``.
The fixed 0-6 range check of ``ann_rating_values.value`` is dropped: which values a
sub-axis accepts now depends on the study's target, and the app checks them against
its guidelines before storing (a categorical target may use 0 for a level, and then
stores "not applicable" as a value below its lowest level).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

RANGE = "value >= 0 AND value <= 6"


def upgrade() -> None:
    op.add_column("ann_studies", sa.Column("target", sa.String(500), nullable=False, server_default="mindeval"))
    # SQLite rebuilds the table (batch mode); the named check is left out of the copy.
    with op.batch_alter_table("ann_rating_values") as batch:
        batch.drop_constraint("ck_rating_value_range", type_="check")


def downgrade() -> None:
    with op.batch_alter_table("ann_rating_values") as batch:
        batch.create_check_constraint("ck_rating_value_range", sa.text(RANGE))
    with op.batch_alter_table("ann_studies") as batch:
        batch.drop_column("target")
