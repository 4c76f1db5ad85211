"""Game reviews (issue 42 item 1)

- ``reviews``: one row per finished game that owes its players a review, written
  in the transaction that ends the game (``state`` 'pending'); the worker pool's
  result (``data``, the JSON of :mod:`pbmserv_terrace.gametypes.review`) and the
  review mails are written in one transaction that sets ``state`` 'sent' (or
  'skipped' when nobody wants it any more, 'failed' when the engine could not
  review the game), so a restart sends it once.
- ``users.review``: ``change review`` (default on).

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-28 17:45:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("users") as batch:
        batch.add_column(sa.Column("review", sa.Boolean(), nullable=False, server_default=sa.true()))
    op.create_table(
        "reviews",
        sa.Column("game_id", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("data", sa.JSON(), nullable=True),
        sa.Column("requested_at", sa.DateTime(), nullable=False),
        sa.Column("done_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(["game_id"], ["games.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("game_id"),
    )
    op.create_index("ix_reviews_state", "reviews", ["state"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_reviews_state", table_name="reviews")
    op.drop_table("reviews")
    with op.batch_alter_table("users") as batch:
        batch.drop_column("review")
