"""Composite indexes for the hot look-ups that filter on several columns, each of
which matched single-column indexes only. SQLite keeps no statistics: it took the
first of them, ``namespace_id``, and read every token or work item of the namespace
(or, by worker, every work item). Now:

* a provider's live daemon tokens (of one host), which every token minted for a
  host (each ``connect``) replaces (``server/access/daemon_tokens.py``);
* a provider's queued work items, oldest first, which every poll claims from
  (``server/store.py``), and a namespace's running items (the queue loop's busy
  workers);
* a worker's items: the runs a re-registration loses, a worker's last finished run
  (the queue loop's idle check).

Revision ID: 0201_hot_indexes
Revises: 0200_token_scopes
"""

from __future__ import annotations

from alembic import op

revision = "0201_hot_indexes"
down_revision = "0200_token_scopes"
branch_labels = None
depends_on = None

INDEXES = (
    ("ix_tokens_namespace_provider_host", "tokens", ["namespace_id", "provider_name", "host"]),
    (
        "ix_work_items_by_state",
        "work_items",
        ["namespace_id", "state", "provider_name", "created_at"],
    ),
    ("ix_work_items_worker", "work_items", ["worker_id", "state"]),
)


def upgrade() -> None:
    for name, table, columns in INDEXES:
        op.create_index(name, table, columns)


def downgrade() -> None:
    for name, table, _columns in reversed(INDEXES):
        op.drop_index(name, table_name=table)
