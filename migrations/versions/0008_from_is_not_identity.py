"""From is not identity (issue 36 part 5): confirmations, counts per (user, sender)

- ``users.pending_addresses``: addresses given at signup or by ``change address``
  that have not answered their confirmation mail; ``users.addresses`` keeps the
  confirmed ones only (every address already there counts as confirmed).
- ``confirmations``: one row per confirmation mail sent (an address, or a
  challenge made without a password), named by the key in its Reply-To.
- ``throttle_marks``/``throttle_notices`` get ``userid`` (a mail that
  authenticates is counted per (user, sender), so a flood under a forged From
  cannot silence it); both hold at most two minutes of counts and are made anew.
- ``password_failures`` gets ``sender``: wrong passwords are counted per (user,
  sender), per sender and per user (a high cap), so other senders cannot lock a
  player out of their own address.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-28 04:10:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _throttle_tables(with_userid: bool) -> None:
    userid = [sa.Column("userid", sa.String(length=64), nullable=False, server_default="")] if with_userid else []
    op.create_table(
        "throttle_marks",
        sa.Column("message_id", sa.String(length=255), nullable=False),
        sa.Column("sender", sa.String(length=320), nullable=False),
        *userid,
        sa.Column("at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("message_id"),
    )
    op.create_index("ix_throttle_marks_sender_at", "throttle_marks", ["sender", "at"], unique=False)
    op.create_table(
        "throttle_notices",
        sa.Column("sender", sa.String(length=320), nullable=False),
        *[sa.Column("userid", sa.String(length=64), nullable=False, server_default="")] * with_userid,
        sa.Column("message_id", sa.String(length=255), nullable=False),
        sa.Column("at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("sender", *(["userid"] if with_userid else [])),
    )


def upgrade() -> None:
    with op.batch_alter_table("users") as batch:
        batch.add_column(sa.Column("pending_addresses", sa.JSON(), nullable=False, server_default="[]"))
    op.create_table(
        "confirmations",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("address", sa.String(length=320), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_confirmations_user_id", "confirmations", ["user_id"], unique=False)
    op.create_index("ix_confirmations_address_at", "confirmations", ["address", "created_at"], unique=False)
    op.drop_index("ix_throttle_marks_sender_at", table_name="throttle_marks")
    op.drop_table("throttle_marks")
    op.drop_table("throttle_notices")
    _throttle_tables(with_userid=True)
    with op.batch_alter_table("password_failures") as batch:
        batch.add_column(sa.Column("sender", sa.String(length=320), nullable=False, server_default=""))
    op.create_index("ix_password_failures_sender_at", "password_failures", ["sender", "at"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_password_failures_sender_at", table_name="password_failures")
    with op.batch_alter_table("password_failures") as batch:
        batch.drop_column("sender")
    op.drop_index("ix_throttle_marks_sender_at", table_name="throttle_marks")
    op.drop_table("throttle_marks")
    op.drop_table("throttle_notices")
    _throttle_tables(with_userid=False)
    op.drop_index("ix_confirmations_address_at", table_name="confirmations")
    op.drop_index("ix_confirmations_user_id", table_name="confirmations")
    op.drop_table("confirmations")
    with op.batch_alter_table("users") as batch:
        batch.drop_column("pending_addresses")
