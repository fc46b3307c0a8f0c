"""Secret key ids: each secret names the key it is encrypted with (``key_id``), so a
server can tell a row another key wrote and a rotation can tell when no row uses
the previous key any more. Existing rows read NULL: a server starting with the
database's key (its key check passes) gives them that key's id.

Revision ID: 0004_secret_key_ids
Revises: 0002_registry
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004_secret_key_ids"
down_revision = "0002_registry"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("secrets") as batch:
        batch.add_column(sa.Column("key_id", sa.String(32), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("secrets") as batch:
        batch.drop_column("key_id")
