"""Everything the server remembers, as SQLAlchemy 2 typed ORM models.

The schema is made only by the Alembic migrations in ``migrations/``; a test
checks that these models and the migrations agree.  Every query a command runs
has an index behind it (see the ``Index`` entries and unique constraints).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy import JSON, Boolean, DateTime, Float, ForeignKey, Index, Integer, String, Text, UniqueConstraint, true
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


class Base(DeclarativeBase):
    type_annotation_map: ClassVar[dict[Any, Any]] = {dict[str, Any]: JSON, list[str]: JSON, list[int]: JSON, datetime: DateTime()}
    """All times are naive UTC (see :func:`pbmserv_terrace.store.db.utcnow`)."""


DELETED_HASH_PREFIX = "!"
"""A password hash starting with this marks a deleted account: the row stays (seats
and history refer to it), no password can ever match it."""

ROBOTS: dict[str, int] = {"robot1": 1, "robot2": 2, "robot3": 3}
"""The server's robot players (issue 17): userid → engine level.  Their rows are
made by migration 0004 with :data:`ROBOT_HASH` and a ``robot_level``."""
ROBOT_HASH = DELETED_HASH_PREFIX + "robot"
"""A robot's password hash: no password matches it, so nobody logs in as a robot."""


class User(Base):
    """A player account (COMMANDS.md §2)."""

    __tablename__ = "users"

    id: Mapped[int] = mapped_column(primary_key=True)
    userid: Mapped[str] = mapped_column(String(64), unique=True)
    """lower-case login name"""
    password_hash: Mapped[str] = mapped_column(String(255))
    """scrypt hash with its parameters and salt, never the password"""
    addresses: Mapped[list[str]] = mapped_column(default=list)
    signed_off: Mapped[bool] = mapped_column(Boolean, default=False)
    accept_challenges: Mapped[bool] = mapped_column(Boolean, default=True)
    challenge_limit: Mapped[int | None] = mapped_column(Integer, default=None)
    """most active games the user may be challenged into; None = no limit"""
    seek: Mapped[int] = mapped_column(Integer, default=0)
    vacation: Mapped[bool] = mapped_column(Boolean, default=False)
    notify_all: Mapped[bool] = mapped_column(Boolean, default=False, index=True)
    created_at: Mapped[datetime]
    public_comments: Mapped[bool] = mapped_column(Boolean, default=True, server_default=true())
    """False: the web archive shows this user's comments as "(hidden)" (migration 0002)"""
    key_generation: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    """bumped by a password change or ``change keys``: older reply keys stop verifying"""
    pictures: Mapped[bool] = mapped_column(Boolean, default=True, server_default=true())
    """board mails with the board picture (HTML part); False: plain text only"""
    robot_level: Mapped[int | None] = mapped_column(Integer, default=None)
    """the engine level of a robot player (1-3, migration 0004); None for people"""
    pending_addresses: Mapped[list[str]] = mapped_column(default=list, server_default="[]")
    """addresses given at signup or by ``change address`` that have not answered
    their confirmation mail yet (migration 0008): they get no mail but that one;
    ``addresses`` holds only confirmed ones (issue 36)"""
    bouncing: Mapped[list[str]] = mapped_column(default=list, server_default="[]")
    """confirmed addresses marked bouncing (lower-case; migration 0012): they get
    no mail until the player writes again (``service.bounces``)"""
    digest: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)
    """``change digest`` (issue 40, migration 0011): ``{"times": ["08:00", ...],
    "zone": "Europe/Paris"}``; None = one mail per event, as pbmserv"""
    digest_next_at: Mapped[datetime | None] = mapped_column(default=None, index=True)
    """when the next digest is due (naive UTC); None without a digest"""
    remind_hours: Mapped[float | None] = mapped_column(Float, default=None)
    """``change remind``: a reminder when less than this many hours are left before
    a forfeit; None = the board's nag settings, 0 = no reminders"""
    vacation_since: Mapped[datetime | None] = mapped_column(default=None)
    """when the running vacation began (migration 0013); None when not on vacation"""
    vacation_until: Mapped[datetime | None] = mapped_column(default=None)
    """when the running vacation ends by itself (``vacation U P on DAYS``); None = at
    ``vacation off`` or when the year's allowance is used up"""
    vacation_year: Mapped[int | None] = mapped_column(Integer, default=None)
    """the calendar year ``vacation_used_seconds`` counts for"""
    vacation_used_seconds: Mapped[float] = mapped_column(Float, default=0.0, server_default="0")
    """vacation time used in ``vacation_year`` (ended vacations; the running one is
    counted from ``vacation_since``)"""
    review: Mapped[bool] = mapped_column(Boolean, default=True, server_default=true())
    """``change review``: a review mail after each finished game (migration 0014)"""

    @property
    def is_robot(self) -> bool:
        return self.robot_level is not None

    @property
    def is_deleted(self) -> bool:
        # a robot's hash has the deleted marker (no login) but the robot plays on
        return self.password_hash.startswith(DELETED_HASH_PREFIX) and self.robot_level is None

    def mark_deleted(self) -> None:
        """Delete the account: the login and the mail go, the row stays."""
        self.password_hash = DELETED_HASH_PREFIX + "deleted"
        self.signed_off = True
        self.addresses = []
        self.pending_addresses = []
        self.bouncing = []


class Game(Base):
    """One board (COMMANDS.md §3): its setup, position, state and pending votes."""

    __tablename__ = "games"
    __table_args__ = (
        UniqueConstraint("game_type", "board_number", name="uq_games_type_board"),
        Index("ix_games_status_deadline", "status", "deadline_at"),
        Index("ix_games_type_status", "game_type", "status", "board_number"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    game_type: Mapped[str] = mapped_column(String(16))
    board_number: Mapped[int] = mapped_column(Integer)
    variant: Mapped[str] = mapped_column(String(16))
    options: Mapped[dict[str, Any]] = mapped_column(default=dict)
    """timer settings (nagtime, forfeittime, totaltime in days) and other options"""
    position: Mapped[str] = mapped_column(String(200))
    """current position string (RULES.md §8)"""
    start_position: Mapped[str] = mapped_column(String(200))
    ply: Mapped[int] = mapped_column(Integer, default=0)
    taken_back: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    """plies ever taken back (undo, a player leaving in the first round): with
    ``ply`` the board's version, which only grows (reply keys name it)"""
    status: Mapped[str] = mapped_column(String(16), default="active")
    """active | won | draw | removed"""
    winner_seat: Mapped[int | None] = mapped_column(Integer, default=None)
    result: Mapped[str | None] = mapped_column(String(200), default=None)
    rated: Mapped[bool] = mapped_column(Boolean, default=True)
    draw_votes: Mapped[list[int]] = mapped_column(default=list)
    """seats that accepted a pending draw offer (empty = no offer)"""
    undo_votes: Mapped[list[int]] = mapped_column(default=list)
    comment: Mapped[str | None] = mapped_column(Text, default=None)
    created_at: Mapped[datetime]
    last_move_at: Mapped[datetime]
    deadline_at: Mapped[datetime | None] = mapped_column(default=None)
    """next time the scheduler must look at this game (nag or forfeit)"""
    clock_from: Mapped[datetime | None] = mapped_column(default=None)
    """since when the clock of the player to move runs (migration 0013): the last ply,
    or the end of that player's vacation; None = ``last_move_at``"""
    finished_at: Mapped[datetime | None] = mapped_column(default=None)
    tournament_id: Mapped[int | None] = mapped_column(ForeignKey("tournaments.id"), default=None)
    """the tournament this board is a game of (issue 41, migration 0010; its round is in
    ``tournament_games``)"""

    seats: Mapped[list[Seat]] = relationship(
        back_populates="game", order_by="Seat.seat", lazy="selectin", cascade="all, delete-orphan"
    )


class Seat(Base):
    """A player's place at a board: army, clocks, queued and submitted moves."""

    __tablename__ = "seats"
    __table_args__ = (
        UniqueConstraint("game_id", "seat", name="uq_seats_game_seat"),
        Index("ix_seats_user", "user_id", "game_id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    game_id: Mapped[int] = mapped_column(ForeignKey("games.id", ondelete="CASCADE"))
    seat: Mapped[int] = mapped_column(Integer)
    """1-based; seat k plays army k"""
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    """False once the seat resigned, forfeited or lost its T"""
    resign_pending: Mapped[bool] = mapped_column(Boolean, default=False)
    queued_moves: Mapped[list[str]] = mapped_column(default=list)
    submitted_move: Mapped[str | None] = mapped_column(String(40), default=None)
    clock_seconds: Mapped[float] = mapped_column(Float, default=0.0)
    """thinking time used so far (for --totaltime)"""
    nagged_at: Mapped[datetime | None] = mapped_column(default=None)
    turn_seconds: Mapped[float] = mapped_column(Float, default=0.0, server_default="0")
    """time charged in the current turn before ``Game.clock_from`` (migration 0013)"""
    bank_seconds: Mapped[float | None] = mapped_column(Float, default=None)
    """time left in the bank of a ``--clock`` board; None without a bank clock"""
    flagged_at: Mapped[datetime | None] = mapped_column(default=None)
    """when this seat's bank ran out on its turn (the opponent may ``claim``)"""

    game: Mapped[Game] = relationship(back_populates="seats")
    user: Mapped[User] = relationship(lazy="joined")


class MoveRecord(Base):
    """One ply of a game's move list.  (game_id, ply) is unique: never two moves at one ply."""

    __tablename__ = "moves"
    __table_args__ = (UniqueConstraint("game_id", "ply", name="uq_moves_game_ply"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    game_id: Mapped[int] = mapped_column(ForeignKey("games.id", ondelete="CASCADE"))
    ply: Mapped[int] = mapped_column(Integer)
    seat: Mapped[int] = mapped_column(Integer)
    move: Mapped[str] = mapped_column(String(40))
    auto: Mapped[bool] = mapped_column(Boolean, default=False)
    played_at: Mapped[datetime]


class Subscription(Base):
    """A user watching one board, or (game_id NULL) every future board of a game type."""

    __tablename__ = "subscriptions"
    __table_args__ = (
        Index("ix_subscriptions_type_game", "game_type", "game_id"),
        Index("ix_subscriptions_game_id", "game_id"),  # a board's subscribers (every board mail)
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    game_type: Mapped[str] = mapped_column(String(16))
    game_id: Mapped[int | None] = mapped_column(ForeignKey("games.id", ondelete="CASCADE"), default=None)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)


class Notifier(Base):
    """A user asking to be told when this board ends (``notify U P N``)."""

    __tablename__ = "notifiers"
    __table_args__ = (UniqueConstraint("game_id", "user_id", name="uq_notifiers_game_user"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    game_id: Mapped[int] = mapped_column(ForeignKey("games.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)


class Rating(Base):
    """A user's Elo rating and record for one game type (COMMANDS.md §4)."""

    __tablename__ = "ratings"
    __table_args__ = (
        UniqueConstraint("user_id", "game_type", name="uq_ratings_user_type"),
        Index("ix_ratings_type_rating", "game_type", "rating"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    game_type: Mapped[str] = mapped_column(String(16))
    rating: Mapped[float] = mapped_column(Float, default=1600.0)
    won: Mapped[int] = mapped_column(Integer, default=0)
    lost: Mapped[int] = mapped_column(Integer, default=0)
    tied: Mapped[int] = mapped_column(Integer, default=0)
    games: Mapped[int] = mapped_column(Integer, default=0)

    @property
    def provisional(self) -> bool:
        return self.games < 20


class FinishedGame(Base):
    """The history line of a game that ended (``history``), written when it ends."""

    __tablename__ = "history"
    __table_args__ = (Index("ix_history_type_finished", "game_type", "finished_at"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    game_id: Mapped[int] = mapped_column(ForeignKey("games.id", ondelete="CASCADE"), unique=True)
    game_type: Mapped[str] = mapped_column(String(16))
    board_number: Mapped[int] = mapped_column(Integer)
    players: Mapped[list[str]] = mapped_column()
    result: Mapped[str] = mapped_column(String(200))
    plies: Mapped[int] = mapped_column(Integer)
    finished_at: Mapped[datetime]


class BoardCounter(Base):
    """The next board number per game type; incremented under a row lock, so two
    concurrent challenges never get the same number."""

    __tablename__ = "board_counters"

    game_type: Mapped[str] = mapped_column(String(16), primary_key=True)
    next_number: Mapped[int] = mapped_column(Integer)


class ProcessedMessage(Base):
    """An inbound Message-ID already handled: a second delivery is a no-op."""

    __tablename__ = "processed_messages"

    message_id: Mapped[str] = mapped_column(String(255), primary_key=True)
    processed_at: Mapped[datetime]
    sender: Mapped[str] = mapped_column(String(255), default="")
    summary: Mapped[str] = mapped_column(String(255), default="")


class OutboxMessage(Base):
    """A reply waiting to be sent (or sent): written in the command's transaction,
    delivered only after commit."""

    __tablename__ = "outbox"
    __table_args__ = (Index("ix_outbox_state_next", "state", "next_attempt_at"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    message_id: Mapped[str] = mapped_column(String(255), unique=True)
    recipient: Mapped[str] = mapped_column(String(320))
    subject: Mapped[str] = mapped_column(String(998))
    body: Mapped[str] = mapped_column(Text)
    in_reply_to: Mapped[str | None] = mapped_column(String(255), default=None)
    state: Mapped[str] = mapped_column(String(16), default="pending")
    """pending | sent | failed"""
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime]
    created_at: Mapped[datetime]
    sent_at: Mapped[datetime | None] = mapped_column(default=None)
    last_error: Mapped[str | None] = mapped_column(Text, default=None)
    reply_to: Mapped[str | None] = mapped_column(String(320), default=None)
    """Reply-To of a board mail to a player: the server address with ``+KEY``"""
    reply_key: Mapped[str | None] = mapped_column(String(64), default=None)
    """that key, for a reply matched by In-Reply-To after the ``+KEY`` was lost"""
    html: Mapped[str | None] = mapped_column(Text, default=None)
    """the HTML part of a board mail (None: plain text only)"""
    picture: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)
    """what the board picture shows (position, last move, marks), drawn at sending"""


class ServerSecret(Base):
    """A secret every worker shares (the reply-key HMAC key), kept in the database
    rather than the config so that all workers agree and an operator can rotate it."""

    __tablename__ = "server_secrets"

    name: Mapped[str] = mapped_column(String(32), primary_key=True)
    value: Mapped[str] = mapped_column(String(128))
