"""a board's version for reply keys (issue 36)

A reply key named the ply its board mail was sent at; after an undo the board
came back to that ply and the old mail's key was valid again.  ``taken_back``
counts the plies ever taken back, so ``ply + 2 * taken_back`` only grows (a
move adds one, an undo of k plies adds k): keys now name that version.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-28 02:40:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("games") as batch:
        batch.add_column(sa.Column("taken_back", sa.Integer(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("games") as batch:
        batch.drop_column("taken_back")
