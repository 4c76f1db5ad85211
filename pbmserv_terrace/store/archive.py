"""Read-only queries of the web archive (issue 19): the only place the web's SQL lives.

Every method reads, none writes, and none returns an address or a password hash:
users come back as userids (and the ``public_comments`` flag), so a page cannot
leak what it never received.  Results are frozen plain rows, not ORM objects: they
stay valid after the read-only session has ended (and expired its objects).  Each query has an index behind it: games by
(game_type, board_number) and (game_type, status, board_number), seats by
(user_id, game_id), history by (game_type, finished_at) and its primary key,
ratings by (user_id, game_type) and (game_type, rating).

:class:`CommitMarker` is the one global question the archive asks: has anything been
committed since it last asked (SQLite ``PRAGMA data_version`` on a connection of its
own, PostgreSQL the current snapshot), so that pages need not ask each its own.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any
from urllib.parse import quote

from sqlalchemy import Float, bindparam, cast, func, null, select, text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql import Executable

from .db import Database
from .models import FinishedGame, Game, MoveRecord, Rating, Seat, User
from .reviews import ReviewRecord

log = logging.getLogger("pbmserv.web")


@dataclass(frozen=True, slots=True)
class SeatRow:
    """A seat as the web shows it: the player's userid, never the User row."""

    seat: int
    userid: str
    active: bool
    resign_pending: bool
    public_comments: bool


@dataclass(frozen=True, slots=True)
class SeatClock:
    """What the time left of a seat's player depends on (issue 40): the seat's clock
    columns and its player's vacation and time zone, never their address or digest
    times.  The vacation's dates only feed the arithmetic (``clocks``); pages say
    "on vacation" and nothing more."""

    seat: int
    turn_seconds: float
    clock_seconds: float
    bank_seconds: float | None
    flagged_at: datetime | None
    vacation_since: datetime | None
    vacation_until: datetime | None
    vacation_year: int | None
    vacation_used_seconds: float
    zone: str | None
    """the player's time zone (their digest's), None = UTC"""


@dataclass(frozen=True, slots=True)
class GameRow:
    """A board without its ORM object, so templates cannot reach a user's addresses."""

    id: int
    game_type: str
    board_number: int
    variant: str
    options: dict[str, Any]
    """the board's options (timers; a solitaire's deal and counters), as stored"""
    rated: bool
    status: str
    ply: int
    position: str
    start_position: str
    winner_seat: int | None
    result: str | None
    draw_votes: tuple[int, ...]
    undo_votes: tuple[int, ...]
    comment: str | None
    created_at: datetime
    last_move_at: datetime
    finished_at: datetime | None
    seats: tuple[SeatRow, ...]
    clock_from: datetime | None = None
    """since when the clock of the player to move runs (None: ``last_move_at``)"""
    clocks: tuple[SeatClock, ...] = ()
    """each seat's clock, in seat order (boards read with their clocks)"""
    review: dict[str, Any] | None = None
    """the engine's review of a finished board (issue 42; ``reviews.data``), read by
    :meth:`Archive.game` only once the board is over: None while it runs"""


@dataclass(frozen=True, slots=True)
class ListedGame:
    """A board as a list shows it (a player's games, the front page): the columns a row
    needs and nothing else, since reading and decoding the rest (votes, comment, start
    position, dates) for hundreds of rows was most of a player page's time."""

    id: int
    game_type: str
    board_number: int
    variant: str
    options: dict[str, Any]
    status: str
    ply: int
    position: str
    winner_seat: int | None
    result: str | None
    last_move_at: datetime
    seats: tuple[SeatRow, ...]


@dataclass(frozen=True, slots=True)
class PlayerRow:
    """A user as their page shows them: no address, no password hash."""

    id: int
    userid: str
    created_at: datetime
    ratings: tuple[tuple[str, StandingRow], ...]
    """(game type, their rating row) for each game type they are rated in, by type"""


@dataclass(frozen=True, slots=True)
class MoveRow:
    ply: int
    seat: int
    move: str
    auto: bool
    played_at: datetime


@dataclass(frozen=True, slots=True)
class FinishedRow:
    game_type: str
    board_number: int
    players: tuple[str, ...]
    result: str
    plies: int
    finished_at: datetime


@dataclass(frozen=True, slots=True)
class StandingRow:
    userid: str
    rating: float
    won: int
    lost: int
    tied: int
    games: int


@dataclass(frozen=True, slots=True)
class EndedRow:
    """An ended one-player board (a solitaire) as its standings need it."""

    board_number: int
    userid: str
    variant: str
    options: dict[str, Any]
    ply: int
    status: str
    finished_at: datetime | None
    created_at: datetime


@dataclass(frozen=True, slots=True)
class RatedResult:
    """One finished game for the Elo replay: players in seat order and the winner seat."""

    history_id: int
    game_type: str
    players: tuple[str, ...]
    winner_seat: int | None
    rated: bool
    finished_at: datetime
    board_number: int


LISTED_COLUMNS: tuple[Any, ...] = (Game.id, Game.game_type, Game.board_number, Game.variant, Game.options, Game.status, Game.ply,
                  Game.position, Game.winner_seat, Game.result, Game.last_move_at)  # fmt: skip
"""the columns of a :class:`ListedGame`, in its field order"""
GAME_COLUMNS: tuple[Any, ...] = (Game.id, Game.game_type, Game.board_number, Game.variant, Game.options, Game.rated,
                Game.status, Game.ply, Game.position, Game.start_position, Game.winner_seat, Game.result,
                Game.draw_votes, Game.undo_votes, Game.comment, Game.created_at, Game.last_move_at,
                Game.finished_at)  # fmt: skip
"""the columns of a :class:`GameRow` but its seats, in its field order"""

CLOCK_COLUMNS: tuple[Any, ...] = (Seat.turn_seconds, Seat.clock_seconds, Seat.bank_seconds, Seat.flagged_at,
                 User.vacation_since, User.vacation_until, User.vacation_year, User.vacation_used_seconds,
                 User.digest)  # fmt: skip
"""a seat's :class:`SeatClock` but its number (the digest only for its zone), in its field order"""


def zone_of(digest: object) -> str | None:
    """The time zone of a stored digest setting (None: UTC)."""
    zone = digest.get("zone") if isinstance(digest, dict) else None
    return str(zone) if zone else None


# The statements of the pages asked for most, built once with bound parameters and
# run on the session's connection: columns, not ORM objects, and no statement built,
# coerced and loaded into objects again on each request (most of a board page's time).
SEAT_COLUMNS: tuple[Any, ...] = (Seat.seat, Seat.active, Seat.resign_pending, User.userid, User.public_comments)
"""a board's seat as GAME_STATEMENT reads it (then the rating, the clock's start and CLOCK_COLUMNS)"""
GAME_STATEMENT = (
    select(*GAME_COLUMNS, *SEAT_COLUMNS, Rating.rating, Game.clock_from, *CLOCK_COLUMNS)
    .join(Seat, Seat.game_id == Game.id)
    .join(User, User.id == Seat.user_id)
    .outerjoin(Rating, (Rating.user_id == User.id) & (Rating.game_type == Game.game_type))
    .where(Game.game_type == bindparam("game_type"), Game.board_number == bindparam("board_number"))
    .order_by(Seat.seat)
)
MOVES_STATEMENT = (
    select(MoveRecord.ply, MoveRecord.seat, MoveRecord.move, MoveRecord.auto, MoveRecord.played_at)
    .where(MoveRecord.game_id == bindparam("game_id"))
    .order_by(MoveRecord.ply)
)
PLAYER_STATEMENT = (
    select(User.id, User.userid, User.created_at, Rating.game_type, Rating.rating, Rating.won, Rating.lost, Rating.tied,
           Rating.games)
    .outerjoin(Rating, Rating.user_id == User.id)
    .where(User.userid == bindparam("userid"))
    .order_by(Rating.game_type)
)  # fmt: skip
GAMES_OF_USER_STATEMENT = (
    select(*LISTED_COLUMNS)
    .where(Game.id.in_(select(Seat.game_id).where(Seat.user_id == bindparam("user_id"))))
    .order_by(Game.last_move_at.desc(), Game.id.desc())
    .limit(bindparam("limit"))
)
WAITING_STATEMENT = (
    select(*GAME_COLUMNS, *SEAT_COLUMNS, cast(null(), Float), Game.clock_from, *CLOCK_COLUMNS)
    .join(Seat, Seat.game_id == Game.id)
    .join(User, User.id == Seat.user_id)
    .where(
        Game.id.in_(
            select(Seat.game_id)
            .join(Game, Game.id == Seat.game_id)
            .where(Seat.user_id == bindparam("user_id"), Seat.active, Game.status == "active")
            .order_by(Seat.game_id.desc())
            .limit(bindparam("limit"))
            .correlate(None)
        )
    )
    .order_by(Game.id, Seat.seat)
)
"""the active boards where a user still plays, with every seat and its clock (no ratings)"""
SEATS_STATEMENT = (
    select(Seat.game_id, Seat.seat, Seat.active, Seat.resign_pending, User.userid, User.public_comments)
    .join(User, User.id == Seat.user_id)
    .where(Seat.game_id.in_(bindparam("game_ids", expanding=True)))
    .order_by(Seat.game_id, Seat.seat)
)


def _game_row(rows: Sequence[Any]) -> GameRow:
    """One board of GAME_STATEMENT's shape (one row per seat, in seat order)."""
    k = len(GAME_COLUMNS)
    seats = tuple(SeatRow(seat, userid, active, pending, public) for seat, active, pending, userid, public in
                  (row[k : k + 5] for row in rows))  # fmt: skip
    clocks = tuple(
        SeatClock(row[k], turn, total, bank, flagged, since, until, year, used, zone_of(digest))
        for row in rows
        for turn, total, bank, flagged, since, until, year, used, digest in (row[k + 7 : k + 16],)
    )
    (gid, gtype, number, variant, options, rated, status, ply, position, start, winner, result, draw_votes, undo_votes,
     comment, created, last, finished) = rows[0][:k]  # fmt: skip
    return GameRow(gid, gtype, number, variant, dict(options or {}), rated, status, ply, position, start, winner, result,
                   tuple(draw_votes or ()), tuple(undo_votes or ()), comment, created, last, finished, seats,
                   rows[0][k + 6], clocks)  # fmt: skip


class Archive:
    """The web's read-only repository over one :meth:`Database.reading` session."""

    def __init__(self, session: AsyncSession) -> None:
        self.s = session

    async def ping(self) -> bool:
        return (await self.s.execute(select(func.count()).select_from(Game).where(Game.id == 0))).scalar_one() == 0

    async def _rows(self, stmt: Executable, params: dict[str, Any]) -> Sequence[Any]:
        """The rows of a prebuilt Core statement, run on the session's connection."""
        return (await (await self.s.connection()).execute(stmt, params)).all()

    async def game(self, game_type: str, board_number: int) -> tuple[GameRow, dict[str, float]] | None:
        """A board, its seats' userids and clocks and those players' ratings in this game
        type, in one statement (one row per seat: the unique board key, then seats by game)."""
        rows = await self._rows(GAME_STATEMENT, {"game_type": game_type, "board_number": board_number})
        if not rows:
            return None
        k = len(GAME_COLUMNS)
        ratings = {row[k + 3]: row[k + 5] for row in rows if row[k + 5] is not None}
        game = _game_row(rows)
        if game.status != "active":  # a review exists only once the game is over; never read while it runs
            game = replace(game, review=await self.review(game.id))
        return game, ratings

    async def playing(self, user_id: int, limit: int) -> list[GameRow]:
        """The active boards where the user still plays (the newest ``limit``), each with
        all its seats and their clocks: what the player's waiting list and deadline feed
        are computed from.  Two index reads (ix_seats_user, then seats by game)."""
        rows = await self._rows(WAITING_STATEMENT, {"user_id": user_id, "limit": limit})
        by_game: dict[int, list[Any]] = {}
        for row in rows:
            by_game.setdefault(row[0], []).append(row)
        return [_game_row(game_rows) for game_rows in by_game.values()]

    async def moves(self, game_id: int) -> list[MoveRow]:
        return [MoveRow(*row) for row in await self._rows(MOVES_STATEMENT, {"game_id": game_id})]

    async def review(self, game_id: int) -> dict[str, Any] | None:
        """The engine's review of a finished board (``reviews.data``: the JSON of
        :mod:`pbmserv_terrace.gametypes.review`), None while it is not made."""
        stmt = select(ReviewRecord.data).where(ReviewRecord.game_id == game_id)
        data = (await self.s.execute(stmt)).scalar_one_or_none()
        return data if isinstance(data, dict) else None

    async def count_active(self, game_type: str) -> int:
        stmt = select(func.count()).select_from(Game).where(Game.game_type == game_type, Game.status == "active")
        return int((await self.s.execute(stmt)).scalar_one())

    async def newest_active(self, game_type: str, limit: int) -> list[ListedGame]:
        """The newest active boards (highest numbers): a backward walk of ix_games_type_status."""
        return await self._listed(
            select(*LISTED_COLUMNS)
            .where(Game.game_type == game_type, Game.status == "active")
            .order_by(Game.board_number.desc())
            .limit(limit)
        )

    async def recent_finished(self, game_type: str, limit: int) -> list[FinishedRow]:
        stmt = (
            select(
                FinishedGame.game_type,
                FinishedGame.board_number,
                FinishedGame.players,
                FinishedGame.result,
                FinishedGame.plies,
                FinishedGame.finished_at,
            )
            .where(FinishedGame.game_type == game_type)
            .order_by(FinishedGame.finished_at.desc(), FinishedGame.id.desc())
            .limit(limit)
        )
        return [FinishedRow(t, n, tuple(p), r, k, w) for t, n, p, r, k, w in (await self.s.execute(stmt)).all()]

    async def user(self, userid: str) -> tuple[int, str, datetime] | None:
        """(id, userid, created_at) of a user, or None."""
        stmt = select(User.id, User.userid, User.created_at).where(User.userid == userid.lower())
        row = (await self.s.execute(stmt)).first()
        return (row[0], row[1], row[2]) if row is not None else None

    async def player(self, userid: str) -> PlayerRow | None:
        """A user and their ratings in one statement (the user outer-joined to ratings)."""
        rows = await self._rows(PLAYER_STATEMENT, {"userid": userid.lower()})
        if not rows:
            return None
        user_id, name, created = rows[0][:3]
        ratings = tuple(
            (game_type, StandingRow(name, rating, won, lost, tied, games))
            for _, _, _, game_type, rating, won, lost, tied, games in rows
            if game_type is not None
        )
        return PlayerRow(user_id, name, created, ratings)

    async def games_of_user(self, user_id: int, limit: int) -> list[ListedGame]:
        """The user's boards, the most recently moved first (ix_seats_user, then games by key)."""
        return await self._listed(GAMES_OF_USER_STATEMENT, {"user_id": user_id, "limit": limit})

    async def _listed(self, stmt: Executable, params: dict[str, Any] | None = None) -> list[ListedGame]:
        """Games selected by ``stmt`` (the LISTED_COLUMNS) with their seats: two column
        reads and no ORM objects, since a list page shows hundreds of boards."""
        games = await self._rows(stmt, params or {})
        if not games:
            return []
        seats: dict[int, list[SeatRow]] = {}
        for game_id, seat, active, pending, userid, public in await self._rows(
            SEATS_STATEMENT, {"game_ids": [g[0] for g in games]}
        ):
            seats.setdefault(game_id, []).append(SeatRow(seat, userid, active, pending, public))
        return [
            ListedGame(gid, game_type, number, variant, dict(options or {}), status, ply, position, winner, result, last,
                       tuple(seats.get(gid, ())))
            for gid, game_type, number, variant, options, status, ply, position, winner, result, last in games
        ]  # fmt: skip

    async def ratings_version(self) -> tuple[int, int, float]:
        """(rows, games, rating sum) of the ratings table: changes whenever any rating
        changes, a user is rated for the first time or a rated user is deleted."""
        stmt = select(func.count(), func.coalesce(func.sum(Rating.games), 0), func.coalesce(func.sum(Rating.rating), 0.0))
        count, games, total = (await self.s.execute(stmt)).one()
        return int(count), int(games), float(total)

    async def standings(self, game_type: str) -> list[StandingRow]:
        stmt = (
            select(User.userid, Rating.rating, Rating.won, Rating.lost, Rating.tied, Rating.games)
            .join(User, User.id == Rating.user_id)
            .where(Rating.game_type == game_type)
            .order_by(Rating.rating.desc(), User.userid)
        )
        return [StandingRow(*row) for row in (await self.s.execute(stmt)).all()]

    async def ended_one_player(self, game_type: str, limit: int = 5000) -> list[EndedRow]:
        """The ended boards of ``game_type`` with their (first) seat's player, the most
        recently ended first (a solitaire's standings)."""
        stmt = (
            select(Game.board_number, User.userid, Game.variant, Game.options, Game.ply, Game.status, Game.finished_at,
                   Game.created_at)
            .join(Seat, (Seat.game_id == Game.id) & (Seat.seat == 1))
            .join(User, User.id == Seat.user_id)
            .where(Game.game_type == game_type, Game.status != "active")
            .order_by(Game.finished_at.desc(), Game.id.desc())
            .limit(limit)
        )  # fmt: skip
        return [
            EndedRow(number, userid, variant, dict(options or {}), ply, status, finished, created)
            for number, userid, variant, options, ply, status, finished, created in (await self.s.execute(stmt)).all()
        ]

    async def ended_version(self, game_type: str) -> tuple[int, int, int, datetime | None]:
        """Changes whenever the set of ended boards of ``game_type`` changes: its boards and
        its active boards counted (a board ends, is closed without a history line, or is
        taken back into play), and its history lines counted with the latest (a board
        ends again).  Index reads only (ix_games_type_status, ix_history_type_finished):
        a ``status != 'active'`` filter would scan every board of every type."""
        boards = select(func.count()).select_from(Game).where(Game.game_type == game_type)
        active = boards.where(Game.status == "active")
        stmt = select(boards.scalar_subquery(), active.scalar_subquery(), func.count(), func.max(FinishedGame.finished_at)).where(
            FinishedGame.game_type == game_type
        )
        total, playing, ended, latest = (await self.s.execute(stmt)).one()
        return int(total), int(playing), int(ended), latest

    async def history_ids_after(self, history_id: int, limit: int = 50_000) -> list[int]:
        """Ids of finished games above ``history_id`` (the primary key alone): how the
        rating replay learns, at the cost of a few integers, whether anything is new."""
        stmt = select(FinishedGame.id).where(FinishedGame.id > history_id).order_by(FinishedGame.id).limit(limit)
        return list((await self.s.execute(stmt)).scalars().all())

    async def finished_after(self, history_id: int, limit: int = 50_000) -> list[RatedResult]:
        """Finished games with a history id above ``history_id``, in id order: what the
        rating chart's incremental Elo replay has not seen yet (primary-key range)."""
        stmt = (
            select(
                FinishedGame.id,
                FinishedGame.game_type,
                FinishedGame.players,
                Game.winner_seat,
                Game.rated,
                FinishedGame.finished_at,
                FinishedGame.board_number,
            )
            .join(Game, Game.id == FinishedGame.game_id)
            .where(FinishedGame.id > history_id)
            .order_by(FinishedGame.id)
            .limit(limit)
        )
        return [
            RatedResult(hid, gt, tuple(players), winner, rated, when, number)
            for hid, gt, players, winner, rated, when, number in (await self.s.execute(stmt)).all()
        ]


class CommitMarker:
    """A value that changes whenever anything is committed to the database by anyone
    (and sometimes when nothing was): two equal readings mean that nothing was
    committed between them, so what was read after the first is still what the
    database holds at the second.  One tiny statement a reading.

    - SQLite: ``PRAGMA data_version`` on a (read-only) connection of its own, which
      changes when any other connection commits.  The archive's own connections only
      read, and a commit is atomic in SQLite (one header of the WAL index).
    - PostgreSQL: ``pg_current_snapshot()``, which changes when any transaction that
      wrote becomes visible (it leaves the in-progress list) and when one starts
      writing (it takes a transaction id).  Not the WAL position: a commit's record
      is written (the position moves) before the transaction becomes visible (after
      its flush, and a synchronous standby's answer), so a page read between the two
      would be marked with the position that already counts a change it does not show.
    - An in-memory SQLite database (no second connection can see it), or a reading
      that fails: ``None``, which equals no marker (the pages then ask for themselves).
    """

    def __init__(self, db: Database) -> None:
        self.db = db
        self._sqlite: sqlite3.Connection | None = None
        self._warned = False
        self._opened = 0
        database = make_url(db.url).database if db.is_sqlite else None
        self._path = database if database and database != ":memory:" and not database.startswith("file:") else None

    async def read(self) -> object | None:
        try:
            if not self.db.is_sqlite:
                async with self.db.reading() as session:
                    return str((await session.execute(text("SELECT pg_current_snapshot()"))).scalar_one())
            if self._path is None:
                return None
            if self._sqlite is None:
                uri = f"file:{quote(self._path)}?mode=rw"  # (never creates the file)
                self._sqlite = sqlite3.connect(uri, uri=True, timeout=0.1, isolation_level=None, check_same_thread=False)
                self._sqlite.execute("PRAGMA query_only=ON")
                self._opened += 1
            # (a connection's data_version means nothing to another: which connection goes with it)
            return self._opened, int(self._sqlite.execute("PRAGMA data_version").fetchone()[0])
        except Exception as exc:  # no marker: every page asks the database itself, as without one
            if not self._warned:
                self._warned = True
                log.warning(
                    "web archive: the database's commit marker cannot be read (%s: %s); each page asks for itself",
                    type(exc).__name__,
                    exc,
                )
            self.close()
            return None

    def close(self) -> None:
        if self._sqlite is not None:
            self._sqlite.close()
            self._sqlite = None
