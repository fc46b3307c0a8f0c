"""What the engine observed: a nullable ``observed`` document on provider rows and
when it was published (``observed_at``), written by ``dreamlake provider watch``
each pass. Existing rows read NULL: nothing observed yet.

Revision ID: 0005_observed
Revises: 0003_identity
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from dreamlake.controlplane.db import UTCDateTime

revision = "0005_observed"
down_revision = "0003_identity"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("providers") as batch:
        batch.add_column(sa.Column("observed", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("observed_at", UTCDateTime(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("providers") as batch:
        batch.drop_column("observed_at")
        batch.drop_column("observed")
