"""Tournaments (issue 41): tournaments, their entrants, their rounds' games

- ``tournaments``: one row per tournament (its number is a series of its own, the
  ``board_counters`` row ``#tournament``, shown as ``T7``).
- ``tournament_entrants``: who plays, their seed and rating at the start, and the
  round they withdrew in.
- ``tournament_games``: one row per game (or bye) of each round, with its board
  and, once it ended, the first seat's score; unique per (tournament, round,
  board), so a round is never paired twice.
- ``games.tournament_id``: the tournament a board is a game of.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-28 14:05:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "tournaments",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("game_type", sa.String(length=16), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("system", sa.String(length=16), nullable=False),
        sa.Column("swiss_rounds", sa.Integer(), nullable=False),
        sa.Column("rounds", sa.Integer(), nullable=False),
        sa.Column("min_players", sa.Integer(), nullable=False),
        sa.Column("max_players", sa.Integer(), nullable=False),
        sa.Column("start_at", sa.DateTime(), nullable=True),
        sa.Column("setup", sa.String(length=16), nullable=False),
        sa.Column("options", sa.JSON(), nullable=False),
        sa.Column("option_text", sa.String(length=300), nullable=False),
        sa.Column("organizer_id", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("round", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("started_at", sa.DateTime(), nullable=True),
        sa.Column("finished_at", sa.DateTime(), nullable=True),
        sa.Column("winner_id", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(["organizer_id"], ["users.id"]),
        sa.ForeignKeyConstraint(["winner_id"], ["users.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("number"),
    )
    op.create_index("ix_tournaments_status_start", "tournaments", ["status", "start_at"], unique=False)
    op.create_table(
        "tournament_entrants",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tournament_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("seed", sa.Integer(), nullable=True),
        sa.Column("rating", sa.Float(), nullable=False),
        sa.Column("joined_at", sa.DateTime(), nullable=False),
        sa.Column("withdrawn_round", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(["tournament_id"], ["tournaments.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("tournament_id", "user_id", name="uq_tournament_entrants_user"),
    )
    op.create_index("ix_tournament_entrants_user_id", "tournament_entrants", ["user_id"], unique=False)
    with op.batch_alter_table("games") as batch:
        batch.add_column(sa.Column("tournament_id", sa.Integer(), nullable=True))
        batch.create_foreign_key("fk_games_tournament_id", "tournaments", ["tournament_id"], ["id"])
    op.create_table(
        "tournament_games",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tournament_id", sa.Integer(), nullable=False),
        sa.Column("round", sa.Integer(), nullable=False),
        sa.Column("board", sa.Integer(), nullable=False),
        sa.Column("white_id", sa.Integer(), nullable=False),
        sa.Column("black_id", sa.Integer(), nullable=True),
        sa.Column("game_id", sa.Integer(), nullable=True),
        sa.Column("score", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(["tournament_id"], ["tournaments.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["white_id"], ["users.id"]),
        sa.ForeignKeyConstraint(["black_id"], ["users.id"]),
        sa.ForeignKeyConstraint(["game_id"], ["games.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("tournament_id", "round", "board", name="uq_tournament_games_round_board"),
    )
    op.create_index("ix_tournament_games_game", "tournament_games", ["game_id"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_tournament_games_game", table_name="tournament_games")
    op.drop_table("tournament_games")
    with op.batch_alter_table("games") as batch:
        batch.drop_constraint("fk_games_tournament_id", type_="foreignkey")
        batch.drop_column("tournament_id")
    op.drop_index("ix_tournament_entrants_user_id", table_name="tournament_entrants")
    op.drop_table("tournament_entrants")
    op.drop_index("ix_tournaments_status_start", table_name="tournaments")
    op.drop_table("tournaments")
    op.execute("DELETE FROM board_counters WHERE game_type = '#tournament'")
