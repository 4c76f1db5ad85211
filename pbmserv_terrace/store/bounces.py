"""Bounces (issue 43 part 3): one row per hard bounce of a reply, per address.

The service counts an address's bounces in a window (``[server] bounce_window_days``)
and marks the address bouncing in ``users.bouncing`` at ``bounce_threshold``
(``service.bounces``).  A reply (an outbox row) counts once: ``outbox_id`` is
unique, so a second report about the same reply adds nothing.  When the player
writes again the address's bounces are cleared (``cleared_at``), never deleted: a
late report about a reply queued before that clear counts no more.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import DateTime, Index, Integer, String, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped, mapped_column

from .models import Base, OutboxMessage


class BounceEvent(Base):
    """A reply that bounced for good (a 5.x.x status), or a failure with no status."""

    __tablename__ = "bounces"
    __table_args__ = (Index("ix_bounces_address_at", "address", "bounced_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    address: Mapped[str] = mapped_column(String(320))
    """the recipient that bounced, lower-case"""
    outbox_id: Mapped[int | None] = mapped_column(Integer, unique=True, default=None)
    """the reply that bounced (one report per reply counts); None when unknown"""
    status: Mapped[str] = mapped_column(String(16), default="")
    """the DSN status (``5.1.1``), '' when the report gave none"""
    bounced_at: Mapped[datetime] = mapped_column(DateTime())
    cleared_at: Mapped[datetime | None] = mapped_column(DateTime(), default=None)
    """when the player wrote again (the address gets mail again): no longer counted"""


class Bounces:
    """The repository of :class:`BounceEvent` rows, on a Unit of Work's session."""

    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def counted(self, outbox_id: int) -> bool:
        """A bounce of this reply was recorded already."""
        stmt = select(BounceEvent.id).where(BounceEvent.outbox_id == outbox_id).limit(1)
        return (await self.session.execute(stmt)).scalar_one_or_none() is not None

    async def last_cleared(self, address: str) -> datetime | None:
        """When the address's bounces were last cleared (None: never)."""
        stmt = select(func.max(BounceEvent.cleared_at)).where(BounceEvent.address == address.lower())
        value = (await self.session.execute(stmt)).scalar_one_or_none()
        return value if isinstance(value, datetime) else None

    def add(self, row: BounceEvent) -> None:
        self.session.add(row)

    async def recent(self, address: str, since: datetime) -> list[BounceEvent]:
        """The address's bounces at or after ``since`` that were not cleared, oldest first."""
        await self.session.flush()
        stmt = (
            select(BounceEvent)
            .where(BounceEvent.address == address.lower(), BounceEvent.bounced_at >= since, BounceEvent.cleared_at.is_(None))
            .order_by(BounceEvent.bounced_at, BounceEvent.id)
        )
        return list((await self.session.execute(stmt)).scalars())

    async def clear(self, addresses: Sequence[str], now: datetime) -> list[BounceEvent]:
        """Clear the addresses' bounces (the player wrote again); the rows cleared."""
        wanted = [a.lower() for a in addresses]
        stmt = select(BounceEvent).where(BounceEvent.address.in_(wanted), BounceEvent.cleared_at.is_(None))
        rows = list((await self.session.execute(stmt)).scalars())
        for row in rows:
            row.cleared_at = now
        return rows

    async def replies(self, message_ids: Sequence[str]) -> list[OutboxMessage]:
        """Our replies among these Message-IDs (a report's returned mail, its References)."""
        wanted = list(dict.fromkeys(message_ids))[:20]
        if not wanted:
            return []
        stmt = select(OutboxMessage).where(OutboxMessage.message_id.in_(wanted)).order_by(OutboxMessage.id)
        return list((await self.session.execute(stmt)).scalars())

    async def hold_replies(self, address: str, reason: str) -> int:
        """Fail the pending replies to ``address`` (marked bouncing after they were
        queued): the outbox sends them nowhere.  How many."""
        stmt = (
            update(OutboxMessage)
            .where(OutboxMessage.state == "pending", func.lower(OutboxMessage.recipient) == address.lower())
            .values(state="failed", last_error=reason[:2000])
        )
        result = await self.session.execute(stmt)
        return int(getattr(result, "rowcount", 0) or 0)
