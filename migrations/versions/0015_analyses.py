"""Analyses on request (issue 42 item 3): ``analyze N[#k]``

- ``analyses``: one row per ``analyze`` request of a finished board at a ply,
  written by the handler in the mail's transaction (``state`` 'pending'); the
  worker pool computes the robot's three best moves there, and the answer mail
  and ``state`` 'sent' (or 'failed') are written in one transaction, so a restart
  answers each request once.  The rows of the last hour per address are the
  sender's cap (they survive a restart and are shared by several workers).

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-28 17:35:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "analyses",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("game_id", sa.Integer(), nullable=False),
        sa.Column("ply", sa.Integer(), nullable=False),
        sa.Column("address", sa.String(length=320), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("requested_at", sa.DateTime(), nullable=False),
        sa.Column("done_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(["game_id"], ["games.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_analyses_state", "analyses", ["state"], unique=False)
    op.create_index("ix_analyses_address_at", "analyses", ["address", "requested_at"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_analyses_address_at", table_name="analyses")
    op.drop_index("ix_analyses_state", table_name="analyses")
    op.drop_table("analyses")
