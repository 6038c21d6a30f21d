"""Alembic environment: runs on the connection handed over by ``migrations.upgrade``."""

from __future__ import annotations

from alembic import context

from annotation_app.store.migrations import include_object
from annotation_app.store.tables import VERSION_TABLE, AnnotationBase

connection = context.config.attributes.get("connection")
if connection is None:  # pragma: no cover - only reachable from a bare `alembic` call
    raise RuntimeError("run migrations through annotation_app.store.migrations.upgrade(engine)")

context.configure(
    connection=connection,
    target_metadata=AnnotationBase.metadata,
    version_table=VERSION_TABLE,
    include_object=include_object,
    render_as_batch=True,  # SQLite needs batch mode to alter tables
)
with context.begin_transaction():
    context.run_migrations()
