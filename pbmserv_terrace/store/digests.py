"""Digests (issue 40): the board mails held for a player who asked for one or
two mails a day, the digests sent (what boards, at what version, a Reply to one
may move on), and the timers' own clock.

- :class:`DigestEntry`: one held board mail ("ben played d7-d6 on board 101"),
  written instead of the mail in the transaction that made it; ``digest_id``
  stays None until the digest that tells it is queued, in that digest's
  transaction (so each entry is told exactly once).
- :class:`Digest`: one digest sent; ``boards`` the (game, board, version) it
  listed as the player's turn: the digest's reply key names the row.
- :class:`TimerRun`: the last time ``admin timers`` (or ``serve``) ran the timers.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, DateTime, ForeignKey, Index, Integer, String, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped, mapped_column

from .models import Base, User

TIMERS = "timers"
"""the :class:`TimerRun` row of the timers"""


class DigestEntry(Base):
    """A board mail held for a player's next digest."""

    __tablename__ = "digest_entries"
    __table_args__ = (Index("ix_digest_entries_user_digest", "user_id", "digest_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    game_id: Mapped[int] = mapped_column(ForeignKey("games.id", ondelete="CASCADE"), index=True)
    line: Mapped[str] = mapped_column(String(300))
    """what happened, in one line (the board mail's headline)"""
    created_at: Mapped[datetime] = mapped_column(DateTime())
    digest_id: Mapped[int | None] = mapped_column(Integer, default=None)
    """the digest that told it (None: still pending)"""


class Digest(Base):
    """A digest sent to a player."""

    __tablename__ = "digests"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    boards: Mapped[list[Any]] = mapped_column(JSON, default=list)
    """``[[game_type, board_number, version], ...]``: the boards it listed as the
    player's turn, at the version it showed (a Reply's line for a board that has
    moved on since is refused for that board only)"""
    sent_at: Mapped[datetime] = mapped_column(DateTime())


class TimerRun(Base):
    """When the timers last ran (``admin timers --at`` refuses an earlier time)."""

    __tablename__ = "timer_runs"

    name: Mapped[str] = mapped_column(String(32), primary_key=True)
    last_at: Mapped[datetime] = mapped_column(DateTime())


class Digests:
    """The repository of the digest tables, on a Unit of Work's session."""

    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    def hold(self, entry: DigestEntry) -> None:
        self.session.add(entry)

    async def pending(self, user_id: int) -> list[DigestEntry]:
        """The user's held entries not yet told, oldest first."""
        stmt = select(DigestEntry).where(DigestEntry.user_id == user_id, DigestEntry.digest_id.is_(None)).order_by(DigestEntry.id)
        return list((await self.session.execute(stmt)).scalars())

    async def add(self, digest: Digest) -> Digest:
        """A new digest row, flushed (its id goes into the reply key)."""
        self.session.add(digest)
        await self.session.flush()
        return digest

    async def get(self, digest_id: int) -> Digest | None:
        return await self.session.get(Digest, digest_id)

    async def mark_told(self, entries: Sequence[DigestEntry], digest_id: int) -> None:
        if entries:
            ids = [e.id for e in entries]
            stmt = update(DigestEntry).where(DigestEntry.id.in_(ids)).values(digest_id=digest_id)
            await self.session.execute(stmt.execution_options(synchronize_session=False))

    async def users_due(self, now: datetime, *, limit: int, lock: bool) -> list[User]:
        """Users whose digest is due at ``now`` (locked, others' skipped, on PostgreSQL)."""
        stmt = (
            select(User)
            .where(User.digest_next_at.is_not(None), User.digest_next_at <= now)
            .order_by(User.digest_next_at)
            .limit(limit)
        )
        if lock:
            stmt = stmt.with_for_update(skip_locked=True, of=User)
        return list((await self.session.execute(stmt)).scalars())

    async def last_run(self, name: str = TIMERS) -> datetime | None:
        row = await self.session.get(TimerRun, name)
        return row.last_at if row is not None else None

    async def ran(self, at: datetime, name: str = TIMERS) -> None:
        """Record a run at ``at`` (the latest time stays)."""
        # an upsert: two workers' first runs may record at once (a plain INSERT after a
        # SELECT that found nothing failed the second on the primary key)
        dialect = self.session.get_bind().dialect.name
        upsert = pg_insert if dialect == "postgresql" else sqlite_insert
        await self.session.execute(upsert(TimerRun).values(name=name, last_at=at).on_conflict_do_nothing(index_elements=["name"]))
        await self.session.execute(
            update(TimerRun).where(TimerRun.name == name, TimerRun.last_at < at).values(last_at=at)
        )
