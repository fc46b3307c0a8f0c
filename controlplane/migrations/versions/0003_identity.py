"""Provider identity: a nullable ``identity`` on provider rows and on workers, so a
daemon's claim counts for the provider that started it and not for a namesake in
another ``.dream`` root.

Revision ID: 0003_identity
Revises: 0002_registry
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003_identity"
down_revision = "0002_registry"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("workers") as batch:
        batch.add_column(sa.Column("identity", sa.String(64), nullable=True))
    with op.batch_alter_table("providers") as batch:
        batch.add_column(sa.Column("identity", sa.String(64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("providers") as batch:
        batch.drop_column("identity")
    with op.batch_alter_table("workers") as batch:
        batch.drop_column("identity")
