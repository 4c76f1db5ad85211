"""Analyses on request (issue 42 item 3): one row per ``analyze N[#k]``.

The handler writes a row ('pending') in the mail's transaction; the worker pool
computes the robot's best moves at that ply; the answer mail and the row's
``state`` 'sent' (or 'failed') are written in one transaction of their own, only
while the row is still 'pending', so a request is answered once whatever crashes
(``serve`` looks for 'pending' rows at each start).  The rows of the last hour
per address are its sender's cap: durable, and shared by several workers.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, ForeignKey, Index, Integer, String, func, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped, mapped_column

from .models import Base, Game

PENDING, SENT, FAILED = "pending", "sent", "failed"


class Analysis(Base):
    """One ``analyze`` request: a finished board at a ply, and where the answer goes."""

    __tablename__ = "analyses"
    __table_args__ = (
        Index("ix_analyses_state", "state"),
        Index("ix_analyses_address_at", "address", "requested_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    game_id: Mapped[int] = mapped_column(Integer, ForeignKey("games.id", ondelete="CASCADE"))
    ply: Mapped[int] = mapped_column(Integer)
    """the position analysed is the one after this many plies (0: the start)"""
    address: Mapped[str] = mapped_column(String(320))
    """the sender's address, lower-case: where the answer goes"""
    state: Mapped[str] = mapped_column(String(16), default=PENDING)
    """'pending', 'sent' or 'failed'"""
    requested_at: Mapped[datetime] = mapped_column(DateTime())
    done_at: Mapped[datetime | None] = mapped_column(DateTime(), default=None)


class Analyses:
    """The repository of :class:`Analysis` rows, on a Unit of Work's session."""

    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    def add(self, row: Analysis) -> None:
        self.session.add(row)

    async def get(self, analysis_id: int, *, lock: bool = False) -> Analysis | None:
        """A request by id; with ``lock`` its row stays locked (FOR UPDATE) until the
        transaction ends, so two workers answering it run one after the other."""
        stmt = select(Analysis).where(Analysis.id == analysis_id)
        if lock:
            stmt = stmt.with_for_update()
        return (await self.session.execute(stmt)).scalar_one_or_none()

    async def board(self, row: Analysis) -> Game | None:
        """The board a request is about."""
        return await self.session.get(Game, row.game_id)

    async def since(self, address: str, since: datetime) -> int:
        """How many requests ``address`` made at or after ``since``."""
        await self.session.flush()
        stmt = (
            select(func.count()).select_from(Analysis).where(Analysis.address == address.lower(), Analysis.requested_at >= since)
        )
        return int((await self.session.execute(stmt)).scalar_one())

    async def pending(self, limit: int = 1000) -> list[Analysis]:
        """The requests not yet answered, oldest first."""
        await self.session.flush()
        stmt = select(Analysis).where(Analysis.state == PENDING).order_by(Analysis.id).limit(limit)
        return list((await self.session.execute(stmt)).scalars())

    async def pending_addresses(self) -> list[str]:
        """The sender address of each analysis waiting (one entry per row)."""
        await self.session.flush()
        stmt = select(Analysis.address).where(Analysis.state == PENDING)
        return list((await self.session.execute(stmt)).scalars())


__all__ = ["FAILED", "PENDING", "SENT", "Analyses", "Analysis"]
