"""Registry tables: providers, secrets, modes.

Revision ID: 0002_registry
Revises: 0001_core
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from dreamlake.controlplane.db import UTCDateTime

revision = "0002_registry"
down_revision = "0001_core"
branch_labels = None
depends_on = None


def _ns() -> sa.Column:  # type: ignore[type-arg]
    return sa.Column(
        "namespace_id",
        sa.Integer,
        sa.ForeignKey("namespaces.id", ondelete="CASCADE"),
        nullable=False,
    )


def _stamps() -> list[sa.Column]:  # type: ignore[type-arg]
    return [
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
    ]


def upgrade() -> None:
    op.create_table(
        "providers",
        sa.Column("id", sa.Integer, primary_key=True),
        _ns(),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("kind", sa.String(63), nullable=False),
        sa.Column("config", sa.JSON, nullable=False),
        sa.Column("hidden", sa.Boolean, nullable=False),
        sa.Column("deleted_at", UTCDateTime(), nullable=True),
        *_stamps(),
        sa.UniqueConstraint("namespace_id", "name", name="uq_providers_namespace_name"),
    )
    op.create_index("ix_providers_namespace_id", "providers", ["namespace_id"])
    op.create_table(
        "secrets",
        sa.Column("id", sa.Integer, primary_key=True),
        _ns(),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("ciphertext", sa.Text, nullable=False),
        *_stamps(),
        sa.UniqueConstraint("namespace_id", "name", name="uq_secrets_namespace_name"),
    )
    op.create_index("ix_secrets_namespace_id", "secrets", ["namespace_id"])
    op.create_table(
        "modes",
        sa.Column("id", sa.Integer, primary_key=True),
        _ns(),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("backend", sa.String(63), nullable=False),
        sa.Column("runner", sa.String(63), nullable=False),
        sa.Column("image", sa.String(1024), nullable=True),
        sa.Column("tags", sa.JSON, nullable=True),
        sa.Column("resources", sa.JSON, nullable=True),
        sa.Column("env", sa.JSON, nullable=True),
        sa.Column("timeout_s", sa.Float, nullable=True),
        sa.Column("provider", sa.String(255), nullable=True),
        *_stamps(),
        sa.UniqueConstraint("namespace_id", "name", name="uq_modes_namespace_name"),
    )
    op.create_index("ix_modes_namespace_id", "modes", ["namespace_id"])


def downgrade() -> None:
    op.drop_table("modes")
    op.drop_table("secrets")
    op.drop_table("providers")
