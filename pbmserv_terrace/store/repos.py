"""Repositories: the only code that builds SQL.  Each method is one indexed query."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Integer, String, Table, and_, bindparam, cast, delete, func, insert, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import joinedload, selectinload

from .models import (
    Base,
    BoardCounter,
    FinishedGame,
    Game,
    MoveRecord,
    Notifier,
    OutboxMessage,
    ProcessedMessage,
    Rating,
    Seat,
    ServerSecret,
    Subscription,
    User,
)


def table_of(model: type[Base]) -> Table:
    table = model.__table__
    assert isinstance(table, Table)
    return table


# The statements every board mail runs, built once: building a statement (its
# clauses, coercions and cache key) cost more than running it on SQLite.
_USER = select(User).where(User.userid == bindparam("userid"))
_USERS = select(User).where(User.userid.in_(bindparam("userids", expanding=True)))
_GAME = (
    select(Game)
    .where(Game.game_type == bindparam("game_type"), Game.board_number == bindparam("number"))
    .options(joinedload(Game.seats))  # one round trip: the game, its seats and their users
)
_GAME_LOCKED = _GAME.with_for_update(of=Game).execution_options(populate_existing=True)
_GAMES_OF_TYPE = (
    # (type = ? AND number IN …): SQLite uses the board index for that, not for a
    # row-value IN over both columns (a scan of every game)
    select(Game)
    .where(Game.game_type == bindparam("game_type"), Game.board_number.in_(bindparam("numbers", expanding=True)))
    .options(joinedload(Game.seats))
    .order_by(Game.id)
    .execution_options(populate_existing=True)
)
_GAMES_OF_TYPE_LOCKED = _GAMES_OF_TYPE.with_for_update(of=Game)
_PLY_COLUMNS = (MoveRecord.game_id, MoveRecord.ply, MoveRecord.seat, MoveRecord.move, MoveRecord.auto)
_LAST_PLIES = (
    select(*_PLY_COLUMNS)
    .where(MoveRecord.game_id == bindparam("game_id"))
    .order_by(MoveRecord.ply.desc())
    .limit(bindparam("last", type_=Integer))
)
_PLIES = select(MoveRecord).where(MoveRecord.game_id == bindparam("game_id")).order_by(MoveRecord.ply)
_RECENT_PLIES = (
    select(*_PLY_COLUMNS)
    .join(Game, Game.id == MoveRecord.game_id)
    .where(
        MoveRecord.game_id.in_(bindparam("game_ids", expanding=True)),
        MoveRecord.ply > Game.ply - bindparam("depth", type_=Integer),
    )
    .order_by(MoveRecord.game_id, MoveRecord.ply)
)
_SUBSCRIBERS = (
    select(User)
    .join(Subscription, Subscription.user_id == User.id)
    .where(Subscription.game_id == bindparam("game_id"))
    .order_by(User.userid)
)
_SUBSCRIBERS_OF = (
    select(Subscription.game_id, User)
    .join(User, Subscription.user_id == User.id)
    .where(Subscription.game_id.in_(bindparam("game_ids", expanding=True)))
    .order_by(User.userid)
)
# queued rows are written with Core INSERTs on the tables: the ORM's bulk insert
# costs some 300 us a call even for one row
_INSERT_PLIES = insert(table_of(MoveRecord))
_INSERT_PROCESSED = insert(table_of(ProcessedMessage))
_INSERT_REPLIES = insert(table_of(OutboxMessage))
_OUTCOME = (
    update(table_of(OutboxMessage))
    .where(table_of(OutboxMessage).c.id == bindparam("o_id"))
    .values(state=bindparam("o_state"), attempts=bindparam("o_attempts"), next_attempt_at=bindparam("o_due"),
            sent_at=bindparam("o_sent_at"), last_error=bindparam("o_error"))
)  # fmt: skip


_CLAIM = (
    select(OutboxMessage)
    .where(OutboxMessage.state == "pending", OutboxMessage.next_attempt_at <= bindparam("now"))
    .order_by(OutboxMessage.next_attempt_at, OutboxMessage.id)
    .limit(bindparam("limit"))
    .with_for_update(skip_locked=True)
)
"""the outbox's claim (built once: building it was most of a claim's time)"""
_CLAIM_SKIPPING = _CLAIM.where(func.lower(OutboxMessage.recipient).not_in(bindparam("skip", expanding=True)))
"""the claim leaving out the (lower-case) recipients in ``skip``"""


def outcome_of(row: OutboxMessage) -> dict[str, Any]:
    return {"o_id": row.id, "o_state": row.state, "o_attempts": row.attempts, "o_due": row.next_attempt_at,
            "o_sent_at": row.sent_at, "o_error": row.last_error}  # fmt: skip


_NOTIFIERS = (
    select(User).join(Notifier, Notifier.user_id == User.id).where(Notifier.game_id == bindparam("game_id")).order_by(User.userid)
)


class Users:
    def __init__(self, session: AsyncSession) -> None:
        self.s = session
        self.loaded: dict[str, User] = {}
        """users a batch read ahead (:meth:`preload`), by userid"""

    async def get(self, userid: str) -> User | None:
        found = self.loaded.get(userid.lower())
        if found is not None:
            return found
        return (await self.s.execute(_USER, {"userid": userid.lower()})).scalar_one_or_none()

    async def preload(self, userids: Iterable[str]) -> None:
        """Read these users in one query; :meth:`get` then answers from memory."""
        wanted = sorted({u.lower() for u in userids} - self.loaded.keys())
        if wanted:
            for user in (await self.s.execute(_USERS, {"userids": wanted})).scalars():
                self.loaded[user.userid] = user

    def remember(self, users: Iterable[User]) -> None:
        for user in users:
            self.loaded[user.userid] = user

    async def seeking(self) -> list[User]:
        """Users who said (``seek``) they want more games, in userid order."""
        rows = await self.s.execute(select(User).where(User.seek > 0, User.signed_off.is_(False)).order_by(User.userid))
        return list(rows.scalars())

    async def with_address(self, address: str) -> list[User]:
        """The users whose mail goes to ``address`` ('games next' without a userid;
        addresses are a JSON list, matched as text first, then exactly)."""
        wanted = address.lower()
        escaped = wanted.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        stmt = select(User).where(func.lower(cast(User.addresses, String)).like(f'%"{escaped}"%', escape="\\"))
        rows = (await self.s.execute(stmt)).scalars()
        return [u for u in rows if wanted in {a.lower() for a in u.addresses}]

    async def by_pk(self, user_id: int) -> User | None:
        return await self.s.get(User, user_id)

    async def get_many(self, userids: Sequence[str]) -> dict[str, User]:
        wanted = [u.lower() for u in userids]
        rows = (await self.s.execute(select(User).where(User.userid.in_(wanted)))).scalars()
        return {u.userid: u for u in rows}

    async def password_hashes(self, userids: Sequence[str]) -> dict[str, str]:
        """userid → stored password hash, for the given (lower-case) userids."""
        rows = await self.s.execute(select(User.userid, User.password_hash).where(User.userid.in_(list(userids))))
        return {userid: stored for userid, stored in rows}

    def add(self, user: User) -> None:
        self.s.add(user)

    async def delete(self, user: User) -> None:
        self.loaded.pop(user.userid, None)
        await self.s.delete(user)

    async def all_active(self) -> list[User]:
        """Every user not signed off (for ``broadcast``), in userid order."""
        rows = await self.s.execute(select(User).where(User.signed_off.is_(False)).order_by(User.userid))
        return list(rows.scalars())

    async def on_vacation(self) -> list[User]:
        """Users with a vacation begun and not yet closed (issue 40: the timers end
        those whose time is up)."""
        rows = await self.s.execute(select(User).where(User.vacation_since.is_not(None)).order_by(User.id))
        return list(rows.scalars())

    async def notify_all_users(self) -> list[User]:
        rows = await self.s.execute(select(User).where(User.notify_all.is_(True)).order_by(User.userid))
        return list(rows.scalars())


FIRST_BOARD = 101
ALL_GAMES = "*"
"""the ``board_counters`` row every game's boards are numbered from"""
"""board numbers start at 101 for every game type (COMMANDS.md §3)"""


class Games:
    def __init__(self, session: AsyncSession) -> None:
        self.s = session
        self.loaded: dict[tuple[str, int], Game] = {}
        """boards a batch read (and on PostgreSQL locked) ahead, by (type, number)"""

    async def next_board_number(self, game_type: str) -> int:
        """Allocate the next board number (101, 102, …): one series for every game
        (issue 38: one inbox never holds two "Board 101"s), so ``game_type`` only
        names the game the board is for.  The UPDATE locks the counter row until
        commit, so concurrent challenges serialise here.  The counter is the row
        :data:`ALL_GAMES` (made by migration 0009 after every number issued); a
        database without it makes it the same way, and of two first boards at
        once, one insert waits for the other and fails, and takes the next number."""
        stmt = (
            update(BoardCounter)
            .where(BoardCounter.game_type == ALL_GAMES)
            .values(next_number=BoardCounter.next_number + 1)
            .returning(BoardCounter.next_number)
            .execution_options(synchronize_session=False)
        )
        new = (await self.s.execute(stmt)).scalar_one_or_none()
        if new is None:
            counted = (await self.s.execute(select(func.max(BoardCounter.next_number)))).scalar()
            issued = (await self.s.execute(select(func.max(Game.board_number)))).scalar()
            first = max(FIRST_BOARD, int(counted or 0), int(issued or 0) + 1)
            try:
                async with self.s.begin_nested():
                    self.s.add(BoardCounter(game_type=ALL_GAMES, next_number=first + 1))
                return first
            except IntegrityError:
                new = (await self.s.execute(stmt)).scalar_one()
        return int(new) - 1

    def add(self, game: Game) -> None:
        self.s.add(game)

    async def get(self, game_type: str, board_number: int, *, lock: bool = False) -> Game | None:
        """A board by number; with ``lock`` the row stays locked (FOR UPDATE) until the
        transaction ends, so two commands on one game run one after the other."""
        found = self.loaded.get((game_type, board_number))
        if found is not None:
            return found
        params = {"game_type": game_type, "number": board_number}
        return (await self.s.execute(_GAME_LOCKED if lock else _GAME, params)).unique().scalar_one_or_none()

    async def preload(self, boards: Iterable[tuple[str, int]], *, lock: bool) -> list[Game]:
        """Read these boards with their seats and players in one query (with
        ``lock``, FOR UPDATE in id order, so batches never deadlock on each
        other); :meth:`get` then answers from memory until :meth:`forget`."""
        wanted = sorted(set(boards) - self.loaded.keys())
        if not wanted:
            return []
        by_type: dict[str, list[int]] = {}
        for game_type, number in wanted:
            by_type.setdefault(game_type, []).append(number)
        if len(by_type) == 1:
            ((game_type, numbers),) = by_type.items()
            stmt = _GAMES_OF_TYPE_LOCKED if lock else _GAMES_OF_TYPE
            result = await self.s.execute(stmt, {"game_type": game_type, "numbers": numbers})
        else:  # boards of several game types: (type = ? AND number IN …) OR …
            clauses = (and_(Game.game_type == t, Game.board_number.in_(ns)) for t, ns in by_type.items())
            stmt = (
                select(Game).where(or_(*clauses)).options(joinedload(Game.seats)).order_by(Game.id)
                .execution_options(populate_existing=True)
            )  # fmt: skip
            result = await self.s.execute(stmt.with_for_update(of=Game) if lock else stmt)
        games = list(result.unique().scalars())
        for game in games:
            self.loaded[(game.game_type, game.board_number)] = game
        return games

    async def for_users(self, user_ids: Sequence[int], game_type: str | None = None) -> list[Game]:
        # (a sub-select, not DISTINCT: PostgreSQL has no equality for the json columns)
        stmt = select(Game).where(Game.id.in_(select(Seat.game_id).where(Seat.user_id.in_(list(user_ids)))))
        if game_type:
            stmt = stmt.where(Game.game_type == game_type)
        rows = await self.s.execute(stmt.order_by(Game.game_type, Game.board_number))
        return list(rows.scalars())

    async def active_for_users(self, user_ids: Sequence[int], game_ids: Sequence[int] | None = None) -> list[Game]:
        """Active games where one of ``user_ids`` sits (among ``game_ids``, if given),
        with their seats: the robots' work list (seats by ``ix_seats_user``)."""
        stmt = (
            select(Game)
            .where(Game.id.in_(select(Seat.game_id).where(Seat.user_id.in_(list(user_ids)))), Game.status == "active")
            .order_by(Game.last_move_at, Game.id)
        )
        if game_ids is not None:
            stmt = stmt.where(Game.id.in_(list(game_ids)))
        return list((await self.s.execute(stmt)).scalars())

    async def active_of_type(self, game_type: str, limit: int = 1000) -> list[Game]:
        stmt = select(Game).where(Game.game_type == game_type, Game.status == "active").order_by(Game.board_number).limit(limit)
        return list((await self.s.execute(stmt)).scalars())

    async def ended_of_type(self, game_type: str, limit: int = 5000) -> list[Game]:
        """Games of ``game_type`` that have ended, newest first, with their seats."""
        stmt = (
            select(Game)
            .where(Game.game_type == game_type, Game.status != "active")
            .options(selectinload(Game.seats))
            .order_by(Game.finished_at.desc(), Game.id.desc())
            .limit(limit)
        )
        return list((await self.s.execute(stmt)).scalars())

    async def count_active(self, game_type: str) -> int:
        stmt = select(func.count()).select_from(Game).where(Game.game_type == game_type, Game.status == "active")
        return int((await self.s.execute(stmt)).scalar_one())

    async def count_active_for_user(self, user_id: int, game_type: str | None = None) -> int:
        """Active boards of a user: of every game type, or of ``game_type``."""
        stmt = (
            select(func.count())
            .select_from(Seat)
            .join(Game, Game.id == Seat.game_id)
            .where(Seat.user_id == user_id, Game.status == "active")
        )
        if game_type is not None:
            stmt = stmt.where(Game.game_type == game_type)
        return int((await self.s.execute(stmt)).scalar_one())

    async def due(self, now: datetime, limit: int = 100) -> list[Game]:
        """Active games whose timer deadline has passed (the scheduler's work list)."""
        stmt = (
            select(Game)
            .where(Game.status == "active", Game.deadline_at <= now)
            .order_by(Game.deadline_at)
            .limit(limit)
            .with_for_update(skip_locked=True, of=Game)
        )
        return list((await self.s.execute(stmt)).scalars())

    async def delete(self, game: Game) -> None:
        self.loaded.pop((game.game_type, game.board_number), None)
        await self.s.delete(game)


@dataclass(frozen=True, slots=True)
class Ply:
    """A ply as a board mail's move table shows it: read as plain rows, not ORM
    objects (a batch reads ahead several per board)."""

    game_id: int
    ply: int
    seat: int
    move: str
    auto: bool


class Moves:
    """The plies of games.  A new ply is queued and written with the rest of its
    transaction's rows at :meth:`write` (the Unit of Work's flush or commit), in one
    INSERT for a whole batch; every read of the table here writes what is queued first."""

    def __init__(self, session: AsyncSession) -> None:
        self.s = session
        self.recent: dict[int, list[Ply]] = {}
        """game id → its latest plies, in order, read ahead by a batch (:meth:`preload`)
        and kept up to date by :meth:`add` and :meth:`delete_from`"""
        self.queued: list[dict[str, Any]] = []

    def add(self, record: MoveRecord) -> None:
        """A new ply of a board already written (it has its id): ``record`` stays
        out of the session, its row is queued."""
        self.queued.append(
            {"game_id": record.game_id, "ply": record.ply, "seat": record.seat, "move": record.move,
             "auto": bool(record.auto), "played_at": record.played_at}
        )  # fmt: skip
        recent = self.recent.get(record.game_id)
        if recent is not None:
            if recent and recent[-1].ply != record.ply - 1:
                del self.recent[record.game_id]  # not the next ply: read from the table again
            else:
                recent.append(Ply(record.game_id, record.ply, record.seat, record.move, bool(record.auto)))

    async def write(self) -> None:
        if self.queued:
            rows, self.queued = self.queued, []
            await self.s.execute(_INSERT_PLIES, rows)

    async def preload(self, games: Sequence[Game], depth: int) -> None:
        """The last ``depth`` plies of each of ``games`` in one query."""
        plies = {g.id: g.ply for g in games if g.id not in self.recent}
        if not plies:
            return
        await self.write()
        found: dict[int, list[Ply]] = {game_id: [] for game_id in plies}
        for row in await self.s.execute(_RECENT_PLIES, {"game_ids": list(plies), "depth": depth}):
            found[row[0]].append(Ply(*row))
        for game_id, records in found.items():
            # kept only when they are the game's plies up to its current one
            if (records[-1].ply if records else 0) == plies[game_id]:
                self.recent[game_id] = records

    async def last_plies(self, game_id: int, last: int) -> list[Ply]:
        """The final ``last`` plies, in ply order."""
        recent = self.recent.get(game_id)
        if recent is not None and (len(recent) >= last or (recent and recent[0].ply == 1)):
            return recent[-last:] if last else []
        await self.write()
        rows = await self.s.execute(_LAST_PLIES, {"game_id": game_id, "last": last})
        return sorted((Ply(*row) for row in rows), key=lambda p: p.ply)

    async def of_game(self, game_id: int) -> list[MoveRecord]:
        """The move list in ply order."""
        await self.write()
        return list((await self.s.execute(_PLIES, {"game_id": game_id})).scalars())

    async def delete_from(self, game_id: int, ply: int) -> None:
        """Remove plies ``ply`` and later (undo)."""
        self.recent.pop(game_id, None)
        await self.write()
        await self.s.execute(delete(MoveRecord).where(MoveRecord.game_id == game_id, MoveRecord.ply >= ply))


class Watchers:
    """Subscribers and notifiers of boards."""

    def __init__(self, session: AsyncSession) -> None:
        self.s = session
        self.loaded: dict[int, list[User]] = {}
        """game id → its subscribers, read ahead by a batch (:meth:`preload`)"""

    async def preload(self, game_ids: Iterable[int]) -> None:
        """The subscribers of these boards in one query."""
        wanted = sorted(set(game_ids) - self.loaded.keys())
        if not wanted:
            return
        found: dict[int, list[User]] = {game_id: [] for game_id in wanted}
        for game_id, user in (await self.s.execute(_SUBSCRIBERS_OF, {"game_ids": wanted})).all():
            if game_id is not None:
                found[game_id].append(user)
        self.loaded.update(found)

    async def subscribers(self, game_id: int) -> list[User]:
        if game_id in self.loaded:
            return list(self.loaded[game_id])
        return list((await self.s.execute(_SUBSCRIBERS, {"game_id": game_id})).scalars())

    async def subscription(self, game_type: str, game_id: int | None, user_id: int) -> Subscription | None:
        """A user's subscription to one board, or with ``game_id`` None to all future boards."""
        stmt = select(Subscription).where(
            Subscription.game_type == game_type,
            Subscription.game_id.is_(None) if game_id is None else Subscription.game_id == game_id,
            Subscription.user_id == user_id,
        )
        return (await self.s.execute(stmt)).scalars().first()

    async def subscribers_of_all(self, game_type: str) -> list[User]:
        """Users watching every new board of ``game_type``."""
        stmt = (
            select(User)
            .join(Subscription, Subscription.user_id == User.id)
            .where(Subscription.game_type == game_type, Subscription.game_id.is_(None))
        )
        return list((await self.s.execute(stmt.order_by(User.userid))).scalars())

    async def notifiers(self, game_id: int) -> list[User]:
        return list((await self.s.execute(_NOTIFIERS, {"game_id": game_id})).scalars())

    async def notifier(self, game_id: int, user_id: int) -> Notifier | None:
        stmt = select(Notifier).where(Notifier.game_id == game_id, Notifier.user_id == user_id)
        return (await self.s.execute(stmt)).scalar_one_or_none()

    def add(self, row: Subscription | Notifier) -> None:
        self.loaded.clear()
        self.s.add(row)

    async def remove(self, row: Subscription | Notifier) -> None:
        self.loaded.clear()
        await self.s.delete(row)


class Ratings:
    def __init__(self, session: AsyncSession) -> None:
        self.s = session

    async def get(self, user_id: int, game_type: str) -> Rating | None:
        stmt = select(Rating).where(Rating.user_id == user_id, Rating.game_type == game_type)
        return (await self.s.execute(stmt)).scalar_one_or_none()

    async def for_update(self, user_ids: Sequence[int], game_type: str) -> list[Rating]:
        """The rating rows of these users (new rows for those without one), locked
        in user-id order, so games ending at once never lose an update nor deadlock."""
        stmt = (
            select(Rating)
            .where(Rating.user_id.in_(list(user_ids)), Rating.game_type == game_type)
            .order_by(Rating.user_id)
            .with_for_update()
        )
        found = {r.user_id: r for r in (await self.s.execute(stmt)).scalars()}
        rows = []
        for user_id in user_ids:
            row = found.get(user_id)
            if row is None:
                row = Rating(user_id=user_id, game_type=game_type, rating=1600.0, won=0, lost=0, tied=0, games=0)
                self.s.add(row)
                found[user_id] = row
            rows.append(row)
        return rows

    async def pin(self, game_type: str, user_id: int, rating: float) -> int:
        """Set a robot's rating row to its pinned value (issue 42) when it differs; rows changed."""
        stmt = (
            update(Rating)
            .where(Rating.user_id == user_id, Rating.game_type == game_type, Rating.rating != rating)
            .values(rating=rating)
        )
        result = await self.s.execute(stmt)
        return int(getattr(result, "rowcount", 0) or 0)

    async def table(self, game_type: str) -> list[tuple[Rating, User]]:
        stmt = (
            select(Rating, User)
            .join(User, User.id == Rating.user_id)
            .where(Rating.game_type == game_type)
            .order_by(Rating.rating.desc(), User.userid)
        )
        return [(r, u) for r, u in (await self.s.execute(stmt)).all()]


class History:
    def __init__(self, session: AsyncSession) -> None:
        self.s = session

    def add(self, row: FinishedGame) -> None:
        self.s.add(row)

    async def recent(self, game_type: str, limit: int = 100) -> list[FinishedGame]:
        stmt = (
            select(FinishedGame)
            .where(FinishedGame.game_type == game_type)
            .order_by(FinishedGame.finished_at.desc(), FinishedGame.id.desc())
            .limit(limit)
        )
        return list((await self.s.execute(stmt)).scalars())

    async def delete_of_game(self, game_id: int) -> None:
        """Forget a game's history line (a solitaire taken back into play by undo)."""
        await self.s.execute(delete(FinishedGame).where(FinishedGame.game_id == game_id))


class ProcessedMails:
    """Processed inbound Message-IDs.  A mail's row is written with the rest of its
    transaction's rows at :meth:`write` (the Unit of Work's flush or commit), in
    one statement for a whole batch."""

    def __init__(self, session: AsyncSession) -> None:
        self.s = session
        self.queued: list[dict[str, Any]] = []

    async def seen(self, message_id: str) -> bool:
        if any(row["message_id"] == message_id for row in self.queued):
            return True
        return await self.s.get(ProcessedMessage, message_id) is not None

    def record(self, message_id: str, when: datetime, sender: str = "", summary: str = "") -> None:
        self.queued.append({"message_id": message_id, "processed_at": when, "sender": sender[:255], "summary": summary[:255]})

    async def write(self) -> None:
        if self.queued:
            rows, self.queued = self.queued, []
            await self.s.execute(_INSERT_PROCESSED, rows)


class Outbox:
    """The replies.  A command's replies are :meth:`queue`-d and written with the
    rest of its transaction's rows at :meth:`write` (the Unit of Work's flush or
    commit): one INSERT for a whole batch, with no ORM object per reply."""

    def __init__(self, session: AsyncSession) -> None:
        self.s = session
        self.queued: list[dict[str, Any]] = []

    def queue(self, **row: Any) -> None:
        """A new pending reply: the columns of :class:`OutboxMessage` (``message_id``,
        ``recipient``, ``subject``, ``body``, ``next_attempt_at``, ``created_at``; the
        others have their defaults)."""
        self.queued.append(
            {"in_reply_to": None, "reply_to": None, "reply_key": None, "html": None, "picture": None,
             "state": "pending", "attempts": 0, "sent_at": None, "last_error": None, **row}
        )  # fmt: skip

    async def write(self) -> None:
        if self.queued:
            rows, self.queued = self.queued, []
            await self.s.execute(_INSERT_REPLIES, rows)

    async def claim(self, now: datetime, limit: int = 20, skip_recipients: Iterable[str] = ()) -> list[OutboxMessage]:
        """Pending replies due now, oldest first, locked until this transaction ends
        (other workers skip them); none for the (lower-case) ``skip_recipients``."""
        await self.write()
        skip = sorted(skip_recipients)
        params: dict[str, Any] = {"now": now, "limit": limit}
        if skip:
            params["skip"] = skip
        return list((await self.s.execute(_CLAIM_SKIPPING if skip else _CLAIM, params)).scalars())

    async def record(self, rows: Sequence[OutboxMessage]) -> None:
        """Write the delivery outcome (state, attempts, times, error) of these rows
        (one executemany)."""
        if rows:
            await self.s.execute(_OUTCOME, [outcome_of(r) for r in rows])

    async def of_ids(self, ids: Sequence[int]) -> list[OutboxMessage]:
        """These replies (those that exist), by id."""
        await self.write()
        if not ids:
            return []
        stmt = select(OutboxMessage).where(OutboxMessage.id.in_(list(ids))).order_by(OutboxMessage.id)
        return list((await self.s.execute(stmt)).scalars())

    async def pending_summary(self) -> tuple[int, datetime | None]:
        """(replies pending, the earliest due time among them): /healthz's one read
        (the oldest due reply tells an outbox that is stuck)."""
        await self.write()
        stmt = select(func.count(), func.min(OutboxMessage.next_attempt_at)).where(OutboxMessage.state == "pending")
        count, oldest = (await self.s.execute(stmt)).one()
        return int(count), oldest

    async def pending_count(self) -> int:
        await self.write()
        stmt = select(func.count()).select_from(OutboxMessage).where(OutboxMessage.state == "pending")
        return int((await self.s.execute(stmt)).scalar_one())

    async def by_state(self, state: str, limit: int = 1000) -> list[OutboxMessage]:
        await self.write()
        stmt = (
            select(OutboxMessage)
            .where(OutboxMessage.state == state)
            .order_by(OutboxMessage.next_attempt_at, OutboxMessage.id)
            .limit(limit)
        )
        return list((await self.s.execute(stmt)).scalars())

    async def reply_key_of(self, message_ids: Sequence[str]) -> str | None:
        """The reply key of the newest of our mails among ``message_ids`` (a reply's
        In-Reply-To and References) that carried one."""
        if not message_ids:
            return None
        await self.write()
        stmt = (
            select(OutboxMessage.reply_key)
            .where(OutboxMessage.message_id.in_(list(message_ids)[:50]), OutboxMessage.reply_key.is_not(None))
            .order_by(OutboxMessage.id.desc())
            .limit(1)
        )
        key = (await self.s.execute(stmt)).scalar_one_or_none()
        return str(key) if key is not None else None


class Secrets:
    """Named secrets shared by every worker (:class:`ServerSecret`)."""

    def __init__(self, session: AsyncSession) -> None:
        self.session = session
        self.loaded: dict[str, str] = {}
        """secrets read in this transaction (a batch's mails read them once)"""

    async def get(self, name: str) -> str | None:
        if name in self.loaded:
            return self.loaded[name]
        row = await self.session.get(ServerSecret, name)
        if row is not None:
            self.loaded[name] = row.value
        return row.value if row is not None else None

    async def put(self, name: str, value: str) -> None:
        self.loaded.pop(name, None)
        row = await self.session.get(ServerSecret, name)
        if row is None:
            self.session.add(ServerSecret(name=name, value=value))
        else:
            row.value = value
