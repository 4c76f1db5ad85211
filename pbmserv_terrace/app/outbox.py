"""Delivering the outbox: after commit, each pending reply goes out exactly as
stored (same Message-ID on a retry), over SMTP or into a local Maildir.

Temporary failures are retried with exponential back-off until ``give_up_hours``;
permanent rejections are recorded as ``failed`` at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from ..config import Config
from ..mail.delivery import Delivery, PermanentFailure
from ..store import Database, OutboxMessage, UnitOfWork, utcnow
from ..store.repos import Outbox
from .compose import to_email

log = logging.getLogger("pbmserv.outbound")


def backoff(attempts: int, base: float = 60.0) -> timedelta:
    """base, 2·base, 4·base, … capped at 1 hour."""
    return timedelta(seconds=min(3600.0, base * 2 ** max(0, attempts - 1)))


@dataclass
class DrainResult:
    sent: int = 0
    retried: int = 0
    failed: int = 0


class OutboxSenders:
    """Senders of the outbox, as many at once as the delivery has connections.

    Each :meth:`step` claims a few due replies and sends them; a recipient's
    replies go out in order (a recipient being sent to is left out of other
    claims).  On PostgreSQL a claim is a transaction that locks its rows (FOR
    UPDATE SKIP LOCKED) until their outcome is written, so several workers never
    send the same reply and a crash frees them at once.  On SQLite (one process)
    the claim is a plain read and the outcome a short write transaction, so mail
    processing never waits for the network.  A crash after a send and before
    its outcome is written sends that reply again on the next start.
    """

    def __init__(self, db: Database, delivery: Delivery, config: Config, *, batch: int = 8) -> None:
        self.db, self.delivery, self.config, self.batch = db, delivery, config, batch
        self.size = max(1, getattr(delivery, "size", 1))
        self.result = DrainResult()
        self._busy: set[str] = set()
        self._claiming = asyncio.Lock()

    async def step(self, now: datetime | None = None) -> tuple[int, bool]:
        """Claim and send up to ``batch`` replies; (how many, whether recipients
        being sent to elsewhere were left out of the claim)."""
        async with contextlib.AsyncExitStack() as stack:
            async with self._claiming:
                left_out = bool(self._busy)
                if self.db.is_sqlite:
                    async with self.db.reading() as session:
                        rows = await Outbox(session).claim(now or utcnow(), self.batch, self._busy)
                        session.expunge_all()  # kept as read (the read's rollback would expire them)
                else:
                    session = await stack.enter_async_context(self.db.session())
                    await session.begin()
                    rows = await Outbox(session).claim(now or utcnow(), self.batch, self._busy)
                    session.expunge_all()  # the outcome is written by Outbox.record
                mine = {row.recipient.lower() for row in rows}
                self._busy.update(mine)
            try:
                for row in rows:
                    await _send_one(row, self.delivery, self.config, self.result)
                if self.db.is_sqlite:
                    async with UnitOfWork(self.db) as uow:
                        await uow.outbox.record(rows)
                        await uow.commit()
                elif rows:
                    await Outbox(session).record(rows)
                    await session.commit()
            finally:
                self._busy.difference_update(mine)
        return len(rows), left_out

    async def drain(self, now: datetime | None = None) -> DrainResult:
        """Send every due reply once (all senders until nothing is left)."""
        left_out = True
        while left_out:
            left_out, before = False, self.result.sent + self.result.failed + self.result.retried

            async def sender() -> None:
                nonlocal left_out
                while True:
                    n, skipped = await self.step(now)
                    left_out = left_out or skipped
                    if n < self.batch:
                        return

            await asyncio.gather(*(sender() for _ in range(self.size)))
            if self.result.sent + self.result.failed + self.result.retried == before:
                break
        return self.result


async def drain_outbox(
    db: Database, delivery: Delivery, config: Config, *, batch: int = 8, now: datetime | None = None
) -> DrainResult:
    """Send every due pending reply once (see :class:`OutboxSenders`), then close
    the delivery's connections."""
    try:
        return await OutboxSenders(db, delivery, config, batch=batch).drain(now)
    finally:
        await delivery.close()


async def _send_one(row: OutboxMessage, delivery: Delivery, config: Config, result: DrainResult) -> None:
    now = utcnow()
    row.attempts += 1
    try:
        await delivery.deliver(to_email(row, config), row.recipient)
    except PermanentFailure as exc:
        row.state, row.last_error = "failed", f"permanent: {exc}"[:2000]
        result.failed += 1
        log.error("reply %s to %s rejected permanently: %s", row.message_id, row.recipient, exc)
        return
    except ValueError as exc:  # an address we refuse to write into a header
        row.state, row.last_error = "failed", f"invalid: {exc}"[:2000]
        result.failed += 1
        return
    except Exception as exc:  # network trouble, 4xx: try again later
        row.last_error = f"{type(exc).__name__}: {exc}"[:2000]
        if now - row.created_at > timedelta(hours=config.smtp.give_up_hours):
            row.state = "failed"
            result.failed += 1
            log.error("giving up on reply %s to %s after %d attempts: %s", row.message_id, row.recipient, row.attempts, exc)
        else:
            row.next_attempt_at = now + backoff(row.attempts, config.smtp.retry_base_seconds)
            result.retried += 1
            log.warning(
                "reply %s to %s: temporary failure (%s); retry at %s", row.message_id, row.recipient, exc, row.next_attempt_at
            )
        return
    row.state, row.sent_at, row.last_error = "sent", now, None
    result.sent += 1
