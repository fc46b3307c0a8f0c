"""Core tables: namespaces, tokens, workers, work items.

Revision ID: 0001_core
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from dreamlake.controlplane.db import UTCDateTime

revision = "0001_core"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "namespaces",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(63), nullable=False, unique=True),
        sa.Column("org_id", sa.String(128), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
    )
    op.create_index("ix_namespaces_org_id", "namespaces", ["org_id"])
    op.create_table(
        "tokens",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column(
            "namespace_id",
            sa.Integer,
            sa.ForeignKey("namespaces.id", ondelete="CASCADE"),
            nullable=True,
        ),
        sa.Column("admin", sa.Boolean, nullable=False),
        sa.Column("label", sa.String(200), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("revoked_at", UTCDateTime(), nullable=True),
    )
    op.create_index("ix_tokens_namespace_id", "tokens", ["namespace_id"])
    op.create_table(
        "workers",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column(
            "namespace_id",
            sa.Integer,
            sa.ForeignKey("namespaces.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("provider_name", sa.String(63), nullable=False),
        sa.Column("instance_id", sa.String(255), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("queues", sa.JSON, nullable=False),
        sa.Column("version", sa.String(64), nullable=False),
        sa.Column("registered_at", UTCDateTime(), nullable=False),
        sa.Column("last_seen", UTCDateTime(), nullable=False),
        sa.Column("polled_at", UTCDateTime(), nullable=True),
        sa.Column("deregistered_at", UTCDateTime(), nullable=True),
        sa.UniqueConstraint("namespace_id", "provider_name", "instance_id"),
    )
    op.create_index("ix_workers_namespace_id", "workers", ["namespace_id"])
    op.create_index("ix_workers_provider_name", "workers", ["provider_name"])
    op.create_table(
        "work_items",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column(
            "namespace_id",
            sa.Integer,
            sa.ForeignKey("namespaces.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("provider_name", sa.String(63), nullable=False),
        sa.Column("queue", sa.String(63), nullable=True),
        sa.Column("command", sa.Text, nullable=False),
        sa.Column("timeout_seconds", sa.Float, nullable=True),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column(
            "worker_id",
            sa.String(36),
            sa.ForeignKey("workers.id", ondelete="SET NULL"),
            nullable=True,
        ),
        sa.Column("exit_code", sa.Integer, nullable=True),
        sa.Column("output_tail", sa.Text, nullable=True),
        sa.Column("error", sa.Text, nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("started_at", UTCDateTime(), nullable=True),
        sa.Column("finished_at", UTCDateTime(), nullable=True),
    )
    op.create_index("ix_work_items_namespace_id", "work_items", ["namespace_id"])
    op.create_index("ix_work_items_provider_name", "work_items", ["provider_name"])
    op.create_index("ix_work_items_state", "work_items", ["state"])


def downgrade() -> None:
    op.drop_table("work_items")
    op.drop_table("workers")
    op.drop_table("tokens")
    op.drop_table("namespaces")
