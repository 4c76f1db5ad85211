"""Clocks with a time bank and vacations that stop them (issue 40 items 3 and 4)

- ``games.clock_from``: since when the clock of the player to move runs (the last
  ply, or the end of that player's vacation); None on old rows = ``last_move_at``.
- ``seats.turn_seconds``: time charged to this seat in the current turn before
  ``clock_from`` (a vacation that began mid-turn stops it there); reset by a ply.
- ``seats.bank_seconds``: the time left in the seat's bank (``--clock``), None on
  boards without a bank clock.
- ``seats.flagged_at``: when the seat's bank ran out on its turn (the opponent was
  told and may ``claim``); cleared by the seat's next ply.
- ``users.vacation_since`` / ``vacation_until``: the running vacation (``until``
  None = until ``vacation off`` or the allowance ends); ``vacation_year`` and
  ``vacation_used_seconds``: the allowance used in that calendar year.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-28 17:40:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("games") as batch:
        batch.add_column(sa.Column("clock_from", sa.DateTime(), nullable=True))
    with op.batch_alter_table("seats") as batch:
        batch.add_column(sa.Column("turn_seconds", sa.Float(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("bank_seconds", sa.Float(), nullable=True))
        batch.add_column(sa.Column("flagged_at", sa.DateTime(), nullable=True))
    with op.batch_alter_table("users") as batch:
        batch.add_column(sa.Column("vacation_since", sa.DateTime(), nullable=True))
        batch.add_column(sa.Column("vacation_until", sa.DateTime(), nullable=True))
        batch.add_column(sa.Column("vacation_year", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("vacation_used_seconds", sa.Float(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("users") as batch:
        batch.drop_column("vacation_used_seconds")
        batch.drop_column("vacation_year")
        batch.drop_column("vacation_until")
        batch.drop_column("vacation_since")
    with op.batch_alter_table("seats") as batch:
        batch.drop_column("flagged_at")
        batch.drop_column("bank_seconds")
        batch.drop_column("turn_seconds")
    with op.batch_alter_table("games") as batch:
        batch.drop_column("clock_from")
