"""a board's subscribers by an index (issue 18)

Every board mail lists its board's subscribers (``Watchers.subscribers``, and a
batch's ``Watchers.preload``), looked up by ``game_id`` alone; the only index
led with ``game_type``, so the database walked every user instead.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23 16:00:00.000000
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_subscriptions_game_id", "subscriptions", ["game_id"])


def downgrade() -> None:
    op.drop_index("ix_subscriptions_game_id", table_name="subscriptions")
