"""Token scopes: what a token may do (``admin``, ``namespace`` or ``daemon``), and
for a daemon token the provider (and the instance, once pinned) it works for and
the host it was minted for. Existing admin tokens read ``admin``; every other
existing token reads ``namespace``, as it did.

Revision ID: 0200_token_scopes
Revises: 0001_core
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0200_token_scopes"
down_revision = "0001_core"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tokens") as batch:
        batch.add_column(
            sa.Column("scope", sa.String(16), nullable=False, server_default="namespace")
        )
        batch.add_column(sa.Column("provider_name", sa.String(63), nullable=True))
        batch.add_column(sa.Column("instance_id", sa.String(255), nullable=True))
        batch.add_column(sa.Column("host", sa.String(255), nullable=True))
        batch.create_index("ix_tokens_provider_name", ["provider_name"])
    op.execute("UPDATE tokens SET scope = 'admin' WHERE admin")


def downgrade() -> None:
    with op.batch_alter_table("tokens") as batch:
        batch.drop_index("ix_tokens_provider_name")
        batch.drop_column("host")
        batch.drop_column("instance_id")
        batch.drop_column("provider_name")
        batch.drop_column("scope")
