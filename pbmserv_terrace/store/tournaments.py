"""Tournaments (issue 41): the tournament, its entrants, and one row per game of
each round (with its board, and its result once the board ends).

A round's pairing is written in one transaction with its boards; the unique
(tournament, round, board) constraint refuses a second pairing of the same round,
so a crash or a race can never pair a round twice.  Tournament numbers are a
series of their own (the ``board_counters`` row :data:`TOURNAMENT_COUNTER`,
shown as ``T7``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, DateTime, Float, ForeignKey, Index, Integer, String, UniqueConstraint, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped, mapped_column

from .models import Base, BoardCounter, Game, User

NOTES_KEY = "tournament_notes"
"""``session.info`` key: board id → (number, name, round, rounds), what a round's pairing knows"""
TOURNAMENT_COUNTER = "#tournament"
"""the ``board_counters`` row of tournament numbers (a board game's name never
starts with #)"""


class Tournament(Base):
    """One tournament: its system, its boards' setup and options, where it stands."""

    __tablename__ = "tournaments"
    __table_args__ = (Index("ix_tournaments_status_start", "status", "start_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    number: Mapped[int] = mapped_column(Integer, unique=True)
    """shown as ``T7``"""
    game_type: Mapped[str] = mapped_column(String(16))
    name: Mapped[str] = mapped_column(String(64))
    system: Mapped[str] = mapped_column(String(16))
    """roundrobin | double | swiss | knockout"""
    swiss_rounds: Mapped[int] = mapped_column(Integer, default=0)
    rounds: Mapped[int] = mapped_column(Integer, default=0)
    """how many rounds it plays (known at the start)"""
    min_players: Mapped[int] = mapped_column(Integer)
    max_players: Mapped[int] = mapped_column(Integer)
    start_at: Mapped[datetime | None] = mapped_column(DateTime(), default=None)
    """when it starts by itself (once ``min_players`` have joined)"""
    setup: Mapped[str] = mapped_column(String(16), default="")
    """the boards' setup (``long`` …; '' the game's default)"""
    options: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    """the boards' options (timers), as a challenge's"""
    option_text: Mapped[str] = mapped_column(String(300), default="")
    """the setup and clock options as the organizer wrote them"""
    organizer_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    status: Mapped[str] = mapped_column(String(16), default="open")
    """open | running | finished"""
    round: Mapped[int] = mapped_column(Integer, default=0)
    """the round in play (0 before the start)"""
    created_at: Mapped[datetime] = mapped_column(DateTime())
    started_at: Mapped[datetime | None] = mapped_column(DateTime(), default=None)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(), default=None)
    winner_id: Mapped[int | None] = mapped_column(ForeignKey("users.id"), default=None)

    @property
    def label(self) -> str:
        return f"T{self.number}"


class TournamentEntrant(Base):
    """A player of a tournament: seeded at the start by rating."""

    __tablename__ = "tournament_entrants"
    __table_args__ = (UniqueConstraint("tournament_id", "user_id", name="uq_tournament_entrants_user"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    tournament_id: Mapped[int] = mapped_column(ForeignKey("tournaments.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    seed: Mapped[int | None] = mapped_column(Integer, default=None)
    """1 = the highest rated at the start"""
    rating: Mapped[float] = mapped_column(Float, default=1600.0)
    joined_at: Mapped[datetime] = mapped_column(DateTime())
    withdrawn_round: Mapped[int | None] = mapped_column(Integer, default=None)
    """the round in which the player withdrew (None: still playing)"""


class TournamentGame(Base):
    """One game (or bye) of a round: who sits first and second, its board, and the
    first seat's score once it ended (a bye: the points it gives)."""

    __tablename__ = "tournament_games"
    __table_args__ = (
        UniqueConstraint("tournament_id", "round", "board", name="uq_tournament_games_round_board"),
        Index("ix_tournament_games_game", "game_id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    tournament_id: Mapped[int] = mapped_column(ForeignKey("tournaments.id", ondelete="CASCADE"))
    round: Mapped[int] = mapped_column(Integer)
    board: Mapped[int] = mapped_column(Integer)
    """the game's place in its round (1, 2, …)"""
    white_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    black_id: Mapped[int | None] = mapped_column(ForeignKey("users.id"), default=None)
    """None: a bye"""
    game_id: Mapped[int | None] = mapped_column(ForeignKey("games.id", ondelete="SET NULL"), default=None)
    score: Mapped[float | None] = mapped_column(Float, default=None)
    """the first seat's points (1, 0.5, 0); None while the game is in play"""


class Tournaments:
    """The repository of tournaments, on a Unit of Work's session."""

    def __init__(self, session: AsyncSession) -> None:
        self.s = session

    async def next_number(self) -> int:
        """The next tournament number (1, 2, …), under the counter row's lock."""
        stmt = (
            update(BoardCounter)
            .where(BoardCounter.game_type == TOURNAMENT_COUNTER)
            .values(next_number=BoardCounter.next_number + 1)
            .returning(BoardCounter.next_number)
            .execution_options(synchronize_session=False)
        )
        new = (await self.s.execute(stmt)).scalar_one_or_none()
        if new is None:
            issued = (await self.s.execute(select(func.max(Tournament.number)))).scalar()
            first = int(issued or 0) + 1
            try:
                async with self.s.begin_nested():
                    self.s.add(BoardCounter(game_type=TOURNAMENT_COUNTER, next_number=first + 1))
                return first
            except IntegrityError:
                new = (await self.s.execute(stmt)).scalar_one()
        return int(new) - 1

    def add(self, row: Tournament | TournamentEntrant | TournamentGame) -> None:
        self.s.add(row)

    async def get(self, number: int, *, lock: bool = False) -> Tournament | None:
        """A tournament by number; with ``lock`` its row stays locked until commit
        (every change of a tournament takes it first, so they run one at a time)."""
        stmt = select(Tournament).where(Tournament.number == number)
        if lock:
            stmt = stmt.with_for_update().execution_options(populate_existing=True)
        return (await self.s.execute(stmt)).scalar_one_or_none()

    async def by_id(self, tournament_id: int, *, lock: bool = False) -> Tournament | None:
        stmt = select(Tournament).where(Tournament.id == tournament_id)
        if lock:
            stmt = stmt.with_for_update().execution_options(populate_existing=True)
        return (await self.s.execute(stmt)).scalar_one_or_none()

    async def listing(self, limit: int = 200) -> list[Tournament]:
        """The newest tournaments first."""
        stmt = select(Tournament).order_by(Tournament.number.desc()).limit(limit)
        return list((await self.s.execute(stmt)).scalars())

    async def due_to_start(self, now: datetime) -> list[Tournament]:
        stmt = select(Tournament).where(Tournament.status == "open", Tournament.start_at <= now).order_by(Tournament.id)
        return list((await self.s.execute(stmt)).scalars())

    async def running(self) -> list[Tournament]:
        stmt = select(Tournament).where(Tournament.status == "running").order_by(Tournament.id)
        return list((await self.s.execute(stmt)).scalars())

    async def entrants(self, tournament_id: int) -> list[tuple[TournamentEntrant, User]]:
        """The entrants with their users, in seed order (join order before the start)."""
        stmt = (
            select(TournamentEntrant, User)
            .join(User, User.id == TournamentEntrant.user_id)
            .where(TournamentEntrant.tournament_id == tournament_id)
            .order_by(TournamentEntrant.seed, TournamentEntrant.joined_at, TournamentEntrant.id)
        )
        return [(e, u) for e, u in (await self.s.execute(stmt)).all()]

    async def remove_entrant(self, entrant: TournamentEntrant) -> None:
        await self.s.delete(entrant)

    async def games(self, tournament_id: int) -> list[TournamentGame]:
        """Every game and bye of every round, in round and board order."""
        stmt = (
            select(TournamentGame)
            .where(TournamentGame.tournament_id == tournament_id)
            .order_by(TournamentGame.round, TournamentGame.board)
            .execution_options(populate_existing=True)
        )
        return list((await self.s.execute(stmt)).scalars())

    async def game_of_board(self, game_id: int) -> TournamentGame | None:
        stmt = select(TournamentGame).where(TournamentGame.game_id == game_id)
        return (await self.s.execute(stmt)).scalar_one_or_none()

    async def boards(self, game_ids: Sequence[int]) -> dict[int, Game]:
        """The boards of ``game_ids`` (read fresh: another transaction may have ended one)."""
        if not game_ids:
            return {}
        stmt = select(Game).where(Game.id.in_(list(game_ids))).execution_options(populate_existing=True)
        return {g.id: g for g in (await self.s.execute(stmt)).scalars()}

    async def note_of(self, game_id: int) -> tuple[int, str, int, int] | None:
        """(number, name, round, rounds) of the tournament game on board ``game_id``
        (a round's pairing leaves those of its new boards in ``session.info``)."""
        known = self.s.info.get(NOTES_KEY, {}).get(game_id)
        if known is not None:
            return known  # type: ignore[no-any-return]
        stmt = (
            select(Tournament.number, Tournament.name, TournamentGame.round, Tournament.rounds)
            .join(Tournament, Tournament.id == TournamentGame.tournament_id)
            .where(TournamentGame.game_id == game_id)
        )
        row = (await self.s.execute(stmt)).first()
        return (int(row[0]), str(row[1]), int(row[2]), int(row[3])) if row is not None else None

    async def of_user(self, user_id: int) -> list[Tournament]:
        stmt = (
            select(Tournament)
            .join(TournamentEntrant, TournamentEntrant.tournament_id == Tournament.id)
            .where(TournamentEntrant.user_id == user_id)
            .order_by(Tournament.number)
        )
        return list((await self.s.execute(stmt)).scalars())


__all__ = ["NOTES_KEY", "TOURNAMENT_COUNTER", "Tournament", "TournamentEntrant", "TournamentGame", "Tournaments"]
