"""Bounces (issue 43 part 3): bounce events per address, and addresses marked bouncing

- ``bounces``: one row per reply that bounced for good (a 5.x.x DSN, or a VERP
  bounce with no DSN from a mailer daemon), its recipient, status and time;
  ``outbox_id`` is unique, so one reply counts once however many reports come.
  ``cleared_at`` is set when the player writes again.
- ``users.bouncing``: the confirmed addresses marked bouncing (the threshold was
  reached within the window); they get no mail until the player writes again.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-28 14:10:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("users") as batch:
        batch.add_column(sa.Column("bouncing", sa.JSON(), nullable=False, server_default="[]"))
    op.create_table(
        "bounces",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("address", sa.String(length=320), nullable=False),
        sa.Column("outbox_id", sa.Integer(), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("bounced_at", sa.DateTime(), nullable=False),
        sa.Column("cleared_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("outbox_id"),
    )
    op.create_index("ix_bounces_address_at", "bounces", ["address", "bounced_at"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_bounces_address_at", table_name="bounces")
    op.drop_table("bounces")
    with op.batch_alter_table("users") as batch:
        batch.drop_column("bouncing")
