"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-11-22 11:09:35.456609
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op


revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    counters = op.create_table(
        "board_counters",
        sa.Column("game_type", sa.String(length=16), nullable=False),
        sa.Column("next_number", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("game_type"),
    )
    # Board numbers start at 101 for every game type (COMMANDS.md section 3).
    op.bulk_insert(
        counters, [{"game_type": "terrace", "next_number": 101}, {"game_type": "terrace6x6", "next_number": 101}]
    )
    op.create_table(
        "games",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("game_type", sa.String(length=16), nullable=False),
        sa.Column("board_number", sa.Integer(), nullable=False),
        sa.Column("variant", sa.String(length=16), nullable=False),
        sa.Column("options", sa.JSON(), nullable=False),
        sa.Column("position", sa.String(length=200), nullable=False),
        sa.Column("start_position", sa.String(length=200), nullable=False),
        sa.Column("ply", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("winner_seat", sa.Integer(), nullable=True),
        sa.Column("result", sa.String(length=200), nullable=True),
        sa.Column("rated", sa.Boolean(), nullable=False),
        sa.Column("draw_votes", sa.JSON(), nullable=False),
        sa.Column("undo_votes", sa.JSON(), nullable=False),
        sa.Column("comment", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("last_move_at", sa.DateTime(), nullable=False),
        sa.Column("deadline_at", sa.DateTime(), nullable=True),
        sa.Column("finished_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("game_type", "board_number", name="uq_games_type_board"),
    )
    with op.batch_alter_table("games", schema=None) as batch_op:
        batch_op.create_index("ix_games_status_deadline", ["status", "deadline_at"], unique=False)
        batch_op.create_index("ix_games_type_status", ["game_type", "status", "board_number"], unique=False)

    op.create_table(
        "outbox",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("message_id", sa.String(length=255), nullable=False),
        sa.Column("recipient", sa.String(length=320), nullable=False),
        sa.Column("subject", sa.String(length=998), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("in_reply_to", sa.String(length=255), nullable=True),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("sent_at", sa.DateTime(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("message_id"),
    )
    with op.batch_alter_table("outbox", schema=None) as batch_op:
        batch_op.create_index("ix_outbox_state_next", ["state", "next_attempt_at"], unique=False)

    op.create_table(
        "processed_messages",
        sa.Column("message_id", sa.String(length=255), nullable=False),
        sa.Column("processed_at", sa.DateTime(), nullable=False),
        sa.Column("sender", sa.String(length=255), nullable=False),
        sa.Column("summary", sa.String(length=255), nullable=False),
        sa.PrimaryKeyConstraint("message_id"),
    )
    op.create_table(
        "users",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("userid", sa.String(length=64), nullable=False),
        sa.Column("password_hash", sa.String(length=255), nullable=False),
        sa.Column("addresses", sa.JSON(), nullable=False),
        sa.Column("signed_off", sa.Boolean(), nullable=False),
        sa.Column("accept_challenges", sa.Boolean(), nullable=False),
        sa.Column("challenge_limit", sa.Integer(), nullable=True),
        sa.Column("seek", sa.Integer(), nullable=False),
        sa.Column("vacation", sa.Boolean(), nullable=False),
        sa.Column("notify_all", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("userid"),
    )
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_users_notify_all"), ["notify_all"], unique=False)

    op.create_table(
        "history",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("game_id", sa.Integer(), nullable=False),
        sa.Column("game_type", sa.String(length=16), nullable=False),
        sa.Column("board_number", sa.Integer(), nullable=False),
        sa.Column("players", sa.JSON(), nullable=False),
        sa.Column("result", sa.String(length=200), nullable=False),
        sa.Column("plies", sa.Integer(), nullable=False),
        sa.Column("finished_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["game_id"], ["games.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("game_id"),
    )
    with op.batch_alter_table("history", schema=None) as batch_op:
        batch_op.create_index("ix_history_type_finished", ["game_type", "finished_at"], unique=False)

    op.create_table(
        "moves",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("game_id", sa.Integer(), nullable=False),
        sa.Column("ply", sa.Integer(), nullable=False),
        sa.Column("seat", sa.Integer(), nullable=False),
        sa.Column("move", sa.String(length=40), nullable=False),
        sa.Column("auto", sa.Boolean(), nullable=False),
        sa.Column("played_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["game_id"], ["games.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("game_id", "ply", name="uq_moves_game_ply"),
    )
    op.create_table(
        "notifiers",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("game_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["game_id"], ["games.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("game_id", "user_id", name="uq_notifiers_game_user"),
    )
    with op.batch_alter_table("notifiers", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_notifiers_user_id"), ["user_id"], unique=False)

    op.create_table(
        "ratings",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("game_type", sa.String(length=16), nullable=False),
        sa.Column("rating", sa.Float(), nullable=False),
        sa.Column("won", sa.Integer(), nullable=False),
        sa.Column("lost", sa.Integer(), nullable=False),
        sa.Column("tied", sa.Integer(), nullable=False),
        sa.Column("games", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("user_id", "game_type", name="uq_ratings_user_type"),
    )
    with op.batch_alter_table("ratings", schema=None) as batch_op:
        batch_op.create_index("ix_ratings_type_rating", ["game_type", "rating"], unique=False)

    op.create_table(
        "seats",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("game_id", sa.Integer(), nullable=False),
        sa.Column("seat", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("resign_pending", sa.Boolean(), nullable=False),
        sa.Column("queued_moves", sa.JSON(), nullable=False),
        sa.Column("submitted_move", sa.String(length=40), nullable=True),
        sa.Column("clock_seconds", sa.Float(), nullable=False),
        sa.Column("nagged_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(["game_id"], ["games.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("game_id", "seat", name="uq_seats_game_seat"),
    )
    with op.batch_alter_table("seats", schema=None) as batch_op:
        batch_op.create_index("ix_seats_user", ["user_id", "game_id"], unique=False)

    op.create_table(
        "subscriptions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("game_type", sa.String(length=16), nullable=False),
        sa.Column("game_id", sa.Integer(), nullable=True),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["game_id"], ["games.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("subscriptions", schema=None) as batch_op:
        batch_op.create_index("ix_subscriptions_type_game", ["game_type", "game_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_subscriptions_user_id"), ["user_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("subscriptions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_subscriptions_user_id"))
        batch_op.drop_index("ix_subscriptions_type_game")

    op.drop_table("subscriptions")
    with op.batch_alter_table("seats", schema=None) as batch_op:
        batch_op.drop_index("ix_seats_user")

    op.drop_table("seats")
    with op.batch_alter_table("ratings", schema=None) as batch_op:
        batch_op.drop_index("ix_ratings_type_rating")

    op.drop_table("ratings")
    with op.batch_alter_table("notifiers", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_notifiers_user_id"))

    op.drop_table("notifiers")
    op.drop_table("moves")
    with op.batch_alter_table("history", schema=None) as batch_op:
        batch_op.drop_index("ix_history_type_finished")

    op.drop_table("history")
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_users_notify_all"))

    op.drop_table("users")
    op.drop_table("processed_messages")
    with op.batch_alter_table("outbox", schema=None) as batch_op:
        batch_op.drop_index("ix_outbox_state_next")

    op.drop_table("outbox")
    with op.batch_alter_table("games", schema=None) as batch_op:
        batch_op.drop_index("ix_games_type_status")
        batch_op.drop_index("ix_games_status_deadline")

    op.drop_table("games")
    op.drop_table("board_counters")
