"""Launch tables: launch requests, instances, queues, queue events, leases.

New tables only; a branch of its own off the registry, so it merges with any other
revision that also follows 0002 (migrations run to every head).

Revision ID: 0100_launch
Revises: 0002_registry
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from dreamlake.controlplane.db import UTCDateTime

revision = "0100_launch"
down_revision = "0002_registry"
branch_labels = None
depends_on = None


def _ns() -> sa.Column:  # type: ignore[type-arg]
    return sa.Column(
        "namespace_id",
        sa.Integer,
        sa.ForeignKey("namespaces.id", ondelete="CASCADE"),
        nullable=False,
        index=True,
    )


def _stamps() -> list[sa.Column]:  # type: ignore[type-arg]
    return [
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
    ]


def upgrade() -> None:
    op.create_table(
        "launch_requests",
        sa.Column("id", sa.Integer, primary_key=True),
        _ns(),
        sa.Column("client_token", sa.String(64), nullable=False),
        sa.Column("provider_name", sa.String(255), nullable=False),
        sa.Column("launcher", sa.String(63), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("result", sa.JSON, nullable=True),
        *_stamps(),
        sa.UniqueConstraint("namespace_id", "client_token", name="uq_launch_requests_token"),
    )
    op.create_table(
        "instances",
        sa.Column("id", sa.Integer, primary_key=True),
        _ns(),
        sa.Column("provider_name", sa.String(255), nullable=False, index=True),
        sa.Column("launcher", sa.String(63), nullable=False),
        sa.Column("instance_id", sa.String(255), nullable=False),
        sa.Column("client_token", sa.String(64), nullable=False),
        sa.Column("queue", sa.String(63), nullable=True),
        sa.Column("state", sa.String(32), nullable=False),
        sa.Column(
            "token_id", sa.Integer, sa.ForeignKey("tokens.id", ondelete="SET NULL"), nullable=True
        ),
        sa.Column("details", sa.JSON, nullable=False),
        *_stamps(),
        sa.Column("terminated_at", UTCDateTime(), nullable=True),
        sa.UniqueConstraint("namespace_id", "provider_name", "instance_id", name="uq_instances_id"),
    )
    op.create_table(
        "queues",
        sa.Column("id", sa.Integer, primary_key=True),
        _ns(),
        sa.Column("name", sa.String(63), nullable=False),
        sa.Column("provider_name", sa.String(255), nullable=False),
        sa.Column("mode", sa.String(255), nullable=True),
        sa.Column("min_workers", sa.Integer, nullable=False),
        sa.Column("max_workers", sa.Integer, nullable=False),
        sa.Column("idle_seconds", sa.Float, nullable=False),
        sa.Column("idle_action", sa.String(16), nullable=False),
        sa.Column("server_url", sa.String(1024), nullable=False),
        *_stamps(),
        sa.UniqueConstraint("namespace_id", "name", name="uq_queues_namespace_name"),
    )
    op.create_table(
        "queue_events",
        sa.Column("id", sa.Integer, primary_key=True),
        _ns(),
        sa.Column("queue", sa.String(63), nullable=False, index=True),
        sa.Column("action", sa.String(32), nullable=False),
        sa.Column("detail", sa.Text, nullable=False),
        sa.Column("holder", sa.String(128), nullable=False),
        sa.Column("at", UTCDateTime(), nullable=False),
    )
    op.create_table(
        "leases",
        sa.Column("name", sa.String(63), primary_key=True),
        sa.Column("holder", sa.String(128), nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=False),
    )


def downgrade() -> None:
    for table in ("leases", "queue_events", "queues", "instances", "launch_requests"):
        op.drop_table(table)
