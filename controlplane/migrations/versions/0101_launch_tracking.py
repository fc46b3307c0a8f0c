"""Launch tracking: one live instance row per instance id (a reused host gets a new
row; terminated rows stay as history), when an instance last started (the start
timeout counts from a resume), and the token a worker registered with (ties a
daemon to the instance a launch recorded).

Revision ID: 0101_launch_tracking
Revises: 0100_launch
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from dreamlake.controlplane.db import UTCDateTime

revision = "0101_launch_tracking"
down_revision = "0100_launch"
branch_labels = None
depends_on = None

LIVE = sa.text("terminated_at IS NULL")


def upgrade() -> None:
    with op.batch_alter_table("instances") as batch:
        batch.drop_constraint("uq_instances_id", type_="unique")
        batch.add_column(sa.Column("started_at", UTCDateTime(), nullable=True))
    op.create_index(
        "uq_instances_live_id",
        "instances",
        ["namespace_id", "provider_name", "instance_id"],
        unique=True,
        sqlite_where=LIVE,
        postgresql_where=LIVE,
    )
    with op.batch_alter_table("workers") as batch:
        batch.add_column(sa.Column("token_id", sa.Integer, nullable=True))
        batch.create_foreign_key(
            "fk_workers_token_id", "tokens", ["token_id"], ["id"], ondelete="SET NULL"
        )


def downgrade() -> None:
    with op.batch_alter_table("workers") as batch:
        batch.drop_constraint("fk_workers_token_id", type_="foreignkey")
        batch.drop_column("token_id")
    op.drop_index("uq_instances_live_id", table_name="instances")
    with op.batch_alter_table("instances") as batch:
        batch.drop_column("started_at")
        batch.create_unique_constraint(
            "uq_instances_id", ["namespace_id", "provider_name", "instance_id"]
        )
