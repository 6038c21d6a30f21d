"""Names are unique ignoring case: a normalised ``name_key`` column with a unique constraint.

Revision ID: 0003
Revises: 0002

Older databases could hold names that differ only in case (``Bruno`` and ``bruno``);
only the first of them could sign in. The first (lowest id) keeps its name; each
later one is renamed ``<name> #<id>`` (logged), so nobody and no rating is lost.
"""

from __future__ import annotations

import logging

import sqlalchemy as sa
from alembic import op

from annotation_app.store.tables import name_key

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

log = logging.getLogger("annotation_app.store.migrations")


def upgrade() -> None:
    # A plain ADD COLUMN and a unique index: no table rebuild, so SQLite's foreign keys
    # into ann_annotators stay untouched.
    op.add_column("ann_annotators", sa.Column("name_key", sa.String(400), nullable=False, server_default=""))
    conn = op.get_bind()
    people = sa.table("ann_annotators", sa.column("id", sa.Integer), sa.column("name", sa.String),
                      sa.column("name_key", sa.String))
    seen: set[str] = set()
    for pid, name in conn.execute(sa.select(people.c.id, people.c.name).order_by(people.c.id)).all():
        key = name_key(name)
        if key in seen:
            new = f"{name} #{pid}"
            log.warning("annotator %r (id %s) renamed to %r: another name differs only in case", name, pid, new)
            name, key = new, name_key(new)
        seen.add(key)
        conn.execute(sa.update(people).where(people.c.id == pid).values(name=name, name_key=key))
    op.create_index("uq_annotator_name_key", "ann_annotators", ["name_key"], unique=True)


def downgrade() -> None:
    op.drop_index("uq_annotator_name_key", table_name="ann_annotators")
    with op.batch_alter_table("ann_annotators") as batch:
        batch.drop_column("name_key")
