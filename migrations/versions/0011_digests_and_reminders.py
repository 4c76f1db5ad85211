"""Digests, reminders and the timers' clock (issue 40 items 1, 2, 5, 6)

- ``users.digest`` (the times and time zone of ``change digest``, NULL = a mail
  per event), ``users.digest_next_at`` (when the next one is due, UTC),
  ``users.remind_hours`` (``change remind``: NULL = the board's nag settings,
  0 = none).
- ``digest_entries``: board mails held for a player's next digest; ``digest_id``
  is set in the transaction that queues the digest telling them.
- ``digests``: each digest sent, with the boards (and their versions) its reply
  key may move on.
- ``timer_runs``: when the timers last ran (``admin timers --at`` refuses an
  earlier time).

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-28 14:10:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("users") as batch:
        batch.add_column(sa.Column("digest", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("digest_next_at", sa.DateTime(), nullable=True))
        batch.add_column(sa.Column("remind_hours", sa.Float(), nullable=True))
        batch.create_index("ix_users_digest_next_at", ["digest_next_at"], unique=False)
    op.create_table(
        "digests",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("boards", sa.JSON(), nullable=False),
        sa.Column("sent_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_digests_user_id", "digests", ["user_id"], unique=False)
    op.create_table(
        "digest_entries",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("game_id", sa.Integer(), nullable=False),
        sa.Column("line", sa.String(length=300), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("digest_id", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["game_id"], ["games.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_digest_entries_user_digest", "digest_entries", ["user_id", "digest_id"], unique=False)
    op.create_index("ix_digest_entries_game_id", "digest_entries", ["game_id"], unique=False)
    op.create_table(
        "timer_runs",
        sa.Column("name", sa.String(length=32), nullable=False),
        sa.Column("last_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )


def downgrade() -> None:
    op.drop_table("timer_runs")
    op.drop_index("ix_digest_entries_game_id", table_name="digest_entries")
    op.drop_index("ix_digest_entries_user_digest", table_name="digest_entries")
    op.drop_table("digest_entries")
    op.drop_index("ix_digests_user_id", table_name="digests")
    op.drop_table("digests")
    with op.batch_alter_table("users") as batch:
        batch.drop_index("ix_users_digest_next_at")
        batch.drop_column("remind_hours")
        batch.drop_column("digest_next_at")
        batch.drop_column("digest")
