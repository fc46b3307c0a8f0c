"""A namespace's leases in force, by (namespace, state): every claim of a work item
asks whether a lease holds the worker (``server/store.py``), and each grant which
leases hold what. Ended leases stay as history; with single-column indexes only,
SQLite (which keeps no statistics) took ``namespace_id`` and read every lease the
namespace ever had.

Revision ID: 0111_capacity_lease_states
Revises: 0110_capacity
"""

from __future__ import annotations

from alembic import op

revision = "0111_capacity_lease_states"
down_revision = "0110_capacity"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(
        "ix_capacity_leases_namespace_state", "capacity_leases", ["namespace_id", "state"]
    )


def downgrade() -> None:
    op.drop_index("ix_capacity_leases_namespace_state", table_name="capacity_leases")
