"""Confirmations waiting for their Reply (issue 36, "From is not identity"): an
address given at ``signup`` or by ``change address``, or a challenge made without
a password, is only acted on once the mail the server sent to a registered (or
the new) address is answered.  One row per mail sent; the key in that mail's
``Reply-To`` and Subject names the row (``service.confirmations``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, DateTime, ForeignKey, Index, Integer, String, delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped, mapped_column

from .models import Base


class Confirmation(Base):
    """A confirmation mail not yet answered."""

    __tablename__ = "confirmations"
    __table_args__ = (Index("ix_confirmations_address_at", "address", "created_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    kind: Mapped[str] = mapped_column(String(16))
    """``address`` or ``challenge``"""
    address: Mapped[str] = mapped_column(String(320))
    """where the confirmation mail went"""
    payload: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    """what happens when it is confirmed (a challenge's command)"""
    created_at: Mapped[datetime] = mapped_column(DateTime())


class Confirmations:
    """The repository of :class:`Confirmation` rows, on a Unit of Work's session."""

    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    def add(self, row: Confirmation) -> None:
        self.session.add(row)

    async def get(self, row_id: int) -> Confirmation | None:
        return await self.session.get(Confirmation, row_id)

    async def remove(self, row: Confirmation) -> None:
        await self.session.delete(row)

    async def drop_addresses_of(self, user_id: int) -> None:
        """Forget the user's unanswered address confirmations (their list changed)."""
        await self.session.execute(delete(Confirmation).where(Confirmation.user_id == user_id, Confirmation.kind == "address"))

    async def purge(self, before: datetime) -> int:
        """Forget the confirmations made before ``before`` (expired: their keys no
        longer work); how many rows went."""
        result = await self.session.execute(delete(Confirmation).where(Confirmation.created_at < before))
        return int(getattr(result, "rowcount", 0) or 0)

    async def sent_to_since(self, address: str, since: datetime) -> int:
        """How many confirmation mails went to ``address`` after ``since``."""
        stmt = (
            select(func.count()).select_from(Confirmation).where(Confirmation.address == address, Confirmation.created_at > since)
        )
        return int((await self.session.execute(stmt)).scalar_one())
