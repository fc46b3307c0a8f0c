"""A daemon's certificate remembers the token it was first asked for with
(``tokens.root_token_id``: the bootstrap, daemon or instance token; its renewals
keep the same root), so revoking that token revokes every certificate it led to.
Existing rows read NULL: no certificate was issued before.

Revision ID: 0006_token_roots
Revises: 0005_observed
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006_token_roots"
down_revision = "0005_observed"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tokens") as batch:
        batch.add_column(sa.Column("root_token_id", sa.Integer(), nullable=True))
        batch.create_index("ix_tokens_root_token_id", ["root_token_id"])


def downgrade() -> None:
    with op.batch_alter_table("tokens") as batch:
        batch.drop_index("ix_tokens_root_token_id")
        batch.drop_column("root_token_id")
