"""Game reviews owed and made (issue 42): one :class:`ReviewRecord` per finished
game whose players get a review (migration 0014).

The row is written ``pending`` in the transaction that ends the game; the
engine's review (the JSON of :mod:`pbmserv_terrace.gametypes.review`) and the
review mails are written together with ``state`` ``sent`` in one later
transaction, which first locks the row and checks it is still ``pending``: a
review computed twice (a restart, two workers) is mailed once, and one a crash
interrupted is found again by :meth:`Reviews.pending` at the next start.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, DateTime, ForeignKey, String, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped, mapped_column

from .models import Base, Game

PENDING, SENT, SKIPPED, FAILED = "pending", "sent", "skipped", "failed"
"""a review's states: owed; mailed (``data`` holds it); nobody wanted it any more
when it was made; the engine could not review the game"""


class ReviewRecord(Base):
    """A finished game's review, owed (``pending``) or made."""

    __tablename__ = "reviews"

    game_id: Mapped[int] = mapped_column(ForeignKey("games.id", ondelete="CASCADE"), primary_key=True)
    state: Mapped[str] = mapped_column(String(16), default=PENDING, index=True)
    """pending | sent | skipped | failed"""
    data: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)
    """the review (``gametypes.review.review_to_json``), once made"""
    requested_at: Mapped[datetime] = mapped_column(DateTime())
    done_at: Mapped[datetime | None] = mapped_column(DateTime(), default=None)


class Reviews:
    """The repository of ``reviews``, on a Unit of Work's session."""

    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    def request(self, game: Game, now: datetime) -> None:
        """Owe ``game``'s players a review (in the transaction that ends it)."""
        self.session.add(ReviewRecord(game_id=game.id, state=PENDING, requested_at=now))

    async def get(self, game_id: int, *, lock: bool = False) -> ReviewRecord | None:
        return await self.session.get(ReviewRecord, game_id, with_for_update=lock or None)

    async def pending(self, limit: int = 10_000) -> list[Game]:
        """The finished games whose review is still owed, oldest request first."""
        stmt = (
            select(Game)
            .join(ReviewRecord, ReviewRecord.game_id == Game.id)
            .where(ReviewRecord.state == PENDING)
            .order_by(ReviewRecord.requested_at, ReviewRecord.game_id)
            .limit(limit)
        )
        return list((await self.session.execute(stmt)).scalars())


__all__ = ["FAILED", "PENDING", "SENT", "SKIPPED", "ReviewRecord", "Reviews"]
