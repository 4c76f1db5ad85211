"""workers that add up on PostgreSQL (issue 18 item 5)

- ``inbound_queue``: the mailbox's messages as the reader saw them, in delivery
  order, with their raw bytes and conflict keys; every worker claims ready rows
  (``FOR UPDATE SKIP LOCKED``) and marks them done in the claim's transaction;
  the reader files finished ones on the IMAP server and deletes their rows.
- ``throttle_marks``, ``throttle_notices``: the per-sender throttle, shared.
- ``password_failures``: the password-guessing guard's counts, shared.

SQLite (one process) has the tables too but keeps these in the process.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-07 10:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "inbound_queue",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("mailbox", sa.String(length=255), nullable=False),
        sa.Column("uidvalidity", sa.BigInteger(), nullable=False),
        sa.Column("uid", sa.BigInteger(), nullable=False),
        sa.Column("message_id", sa.String(length=255), nullable=False),
        sa.Column("keys", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("raw", sa.LargeBinary(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("queued_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("mailbox", "uidvalidity", "uid", name="uq_inbound_queue_uid"),
    )
    op.create_index("ix_inbound_queue_state", "inbound_queue", ["state", "id"], unique=False)
    op.create_table(
        "throttle_marks",
        sa.Column("message_id", sa.String(length=255), nullable=False),
        sa.Column("sender", sa.String(length=320), nullable=False),
        sa.Column("at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("message_id"),
    )
    op.create_index("ix_throttle_marks_sender_at", "throttle_marks", ["sender", "at"], unique=False)
    op.create_table(
        "throttle_notices",
        sa.Column("sender", sa.String(length=320), nullable=False),
        sa.Column("message_id", sa.String(length=255), nullable=False),
        sa.Column("at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("sender"),
    )
    op.create_table(
        "password_failures",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("userid", sa.String(length=64), nullable=False),
        sa.Column("at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_password_failures_userid_at", "password_failures", ["userid", "at"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_password_failures_userid_at", table_name="password_failures")
    op.drop_table("password_failures")
    op.drop_table("throttle_notices")
    op.drop_index("ix_throttle_marks_sender_at", table_name="throttle_marks")
    op.drop_table("throttle_marks")
    op.drop_index("ix_inbound_queue_state", table_name="inbound_queue")
    op.drop_table("inbound_queue")
