"""Capacity: leases, capacity back-off, the namespace price table; queues may name
several providers and a placement strategy.

Revision ID: 0110_capacity
Revises: 0100_launch
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from dreamlake.controlplane.db import UTCDateTime

revision = "0110_capacity"
down_revision = "0100_launch"
branch_labels = None
depends_on = None


def _ns(primary: bool = False) -> sa.Column:  # type: ignore[type-arg]
    return sa.Column(
        "namespace_id",
        sa.Integer,
        sa.ForeignKey("namespaces.id", ondelete="CASCADE"),
        nullable=False,
        index=not primary,
        primary_key=primary,
    )


def upgrade() -> None:
    op.create_table(
        "capacity_leases",
        sa.Column("id", sa.String(40), primary_key=True),
        _ns(),
        sa.Column("state", sa.String(16), nullable=False, index=True),
        sa.Column("slot", sa.String(400), nullable=True, unique=True),
        sa.Column("provider_name", sa.String(255), nullable=True),
        sa.Column("offer", sa.String(255), nullable=True),
        sa.Column("via", sa.String(16), nullable=True),
        sa.Column("worker_id", sa.String(36), nullable=True),
        sa.Column("instance_id", sa.String(255), nullable=True),
        sa.Column("launched", sa.Integer, nullable=False),
        sa.Column("request", sa.JSON, nullable=False),
        sa.Column("decision", sa.JSON, nullable=True),
        sa.Column("reason", sa.Text, nullable=True),
        sa.Column("ttl_seconds", sa.Float, nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("granted_at", UTCDateTime(), nullable=True),
        sa.Column("expires_at", UTCDateTime(), nullable=False, index=True),
        sa.Column("ended_at", UTCDateTime(), nullable=True),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
    )
    op.create_table(
        "capacity_backoffs",
        sa.Column("id", sa.Integer, primary_key=True),
        _ns(),
        sa.Column("provider_name", sa.String(255), nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("failures", sa.Integer, nullable=False),
        sa.Column("until", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.UniqueConstraint("namespace_id", "provider_name", name="uq_capacity_backoffs_provider"),
    )
    op.create_table(
        "capacity_prices",
        _ns(primary=True),
        sa.Column("prices", sa.JSON, nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
    )
    with op.batch_alter_table("queues") as batch:
        batch.add_column(sa.Column("providers", sa.JSON, nullable=True))
        batch.add_column(sa.Column("strategy", sa.String(16), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("queues") as batch:
        batch.drop_column("strategy")
        batch.drop_column("providers")
    for table in ("capacity_prices", "capacity_backoffs", "capacity_leases"):
        op.drop_table(table)
