"""Token expiry, and server-wide facts every replica must agree on.

``server_meta`` holds the secret key's check value (a Fernet token of a known
plaintext: a replica whose key cannot decrypt it refuses to start) and the
``unscoped_listings`` default: installs that already had namespaces keep the spec's
"no orgId = unscoped listing"; new installs scope every listing to its namespace
until the setting turns it on.

Revision ID: 0003_fleet
Revises: 0002_registry
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from dreamlake.controlplane.db import UTCDateTime

revision = "0003_fleet"
down_revision = "0002_registry"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tokens") as batch:
        batch.add_column(sa.Column("expires_at", UTCDateTime(), nullable=True))
    meta = op.create_table(
        "server_meta",
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("value", sa.Text, nullable=False),
    )
    existing = op.get_bind().execute(sa.text("SELECT COUNT(*) FROM namespaces")).scalar()
    if existing:
        op.bulk_insert(meta, [{"key": "unscoped_listings", "value": "true"}])


def downgrade() -> None:
    op.drop_table("server_meta")
    with op.batch_alter_table("tokens") as batch:
        batch.drop_column("expires_at")
