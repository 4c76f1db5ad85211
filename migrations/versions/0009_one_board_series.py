"""One series of board numbers for every game (issue 38 item 12)

Terrace, Terrace6x6 and patience each counted from 101, so one inbox could hold
three "Board 101"s.  New boards now take their number from one counter, the
``board_counters`` row named ``*`` (``store.repos.ALL_GAMES``), which starts after
every number any game has issued: no board is renumbered, every key and subject
already mailed stays valid, and no new board repeats an old one's number in any
game.  The per-game rows stay (unused) so that a downgrade finds them.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-28 11:40:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

FIRST_BOARD = 101


def upgrade() -> None:
    bind = op.get_bind()
    counted = bind.execute(sa.text("SELECT MAX(next_number) FROM board_counters WHERE game_type <> '*'")).scalar()
    issued = bind.execute(sa.text("SELECT MAX(board_number) FROM games")).scalar()
    start = max(FIRST_BOARD, int(counted or 0), int(issued or 0) + 1)
    bind.execute(sa.text("DELETE FROM board_counters WHERE game_type = '*'"))
    bind.execute(sa.text("INSERT INTO board_counters (game_type, next_number) VALUES ('*', :n)"), {"n": start})


def downgrade() -> None:
    # each game's own counter must pass every number the shared one gave out
    bind = op.get_bind()
    shared = bind.execute(sa.text("SELECT next_number FROM board_counters WHERE game_type = '*'")).scalar()
    if shared is not None:
        bind.execute(sa.text("UPDATE board_counters SET next_number = :n WHERE next_number < :n"), {"n": int(shared)})
    bind.execute(sa.text("DELETE FROM board_counters WHERE game_type = '*'"))
