"""Delivering the outbox: after commit, each pending reply goes out exactly as
stored (same Message-ID on a retry), over SMTP or into a local Maildir.

Each reply's outcome is written the moment its SMTP transaction ends, so a
crash re-sends at most the one reply that was in flight on each connection (and
with the same Message-ID, which lets clients that deduplicate do so).
Temporary failures are retried with exponential back-off until ``give_up_hours``;
permanent rejections are recorded as ``failed`` at once.  A provider that says
"slow down" (421/451/452) pauses all sending, and ``smtp.max_per_minute`` holds
what is over the limit; either way the held replies stay queued in their order.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from ..config import Config
from ..mail.delivery import Delivery, PermanentFailure, Throttled
from ..store import Database, OutboxMessage, UnitOfWork, utcnow
from ..store.repos import Outbox
from .compose import to_outgoing

log = logging.getLogger("pbmserv.outbound")

THROTTLE_MAX = 900.0
"""seconds: the longest pause after the provider asked us to slow down"""


COMPOSER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="compose")
"""where replies are composed and serialised (:func:`_send_one`)"""


def backoff(attempts: int, base: float = 60.0) -> timedelta:
    """base, 2·base, 4·base, … capped at 1 hour."""
    return timedelta(seconds=min(3600.0, base * 2 ** max(0, attempts - 1)))


@dataclass
class DrainResult:
    sent: int = 0
    retried: int = 0
    failed: int = 0
    throttled: int = 0


class OutboxSenders:
    """Senders of the outbox, as many at once as the delivery has connections.

    Each :meth:`step` claims a few due replies and sends them one by one,
    writing each one's outcome as soon as it is known; a recipient's replies go
    out in order (a recipient being sent to is left out of other claims).  On
    PostgreSQL a claim is a transaction that locks its rows (FOR UPDATE SKIP
    LOCKED); after each reply its outcome is committed and the rest of the claim
    locked again, so several workers never send the same reply and a crash frees
    them at once.  On SQLite (one process) the claim is a plain read and each
    outcome a short write transaction, so mail processing never waits for the
    network.

    Sending is held back (nothing claimed, the queue keeps its order) while the
    provider's "slow down" pause lasts or ``smtp.max_per_minute`` replies went out
    in the last minute.  ``clock`` (seconds, monotonic) is replaceable for tests.
    """

    def __init__(
        self,
        db: Database,
        delivery: Delivery,
        config: Config,
        *,
        batch: int = 8,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.db, self.delivery, self.config, self.batch = db, delivery, config, batch
        self.size = max(1, getattr(delivery, "size", 1))
        self.result = DrainResult()
        self.clock = clock
        self._busy: set[str] = set()
        self._claiming = asyncio.Lock()
        self._sent_at: deque[float] = deque()
        self._paused_until = 0.0
        self._throttles = 0

    # ------------------------------------------------------------ holding back
    def allowance(self) -> int:
        """How many replies may be claimed now (0 = hold everything back)."""
        now = self.clock()
        if now < self._paused_until:
            return 0
        limit = self.config.smtp.max_per_minute
        if not limit:
            return self.batch
        while self._sent_at and self._sent_at[0] <= now - 60.0:
            self._sent_at.popleft()
        return max(0, min(self.batch, limit - len(self._sent_at) - len(self._busy)))

    def _throttled(self, exc: Exception) -> None:
        self._throttles += 1
        pause = min(THROTTLE_MAX, self.config.smtp.retry_base_seconds * 2 ** (self._throttles - 1))
        self._paused_until = max(self._paused_until, self.clock() + pause)
        log.warning("temporary failure (%s): the SMTP server asks us to slow down; sending paused for %.0f s", exc, pause)

    # ---------------------------------------------------------------- sending
    async def step(self, now: datetime | None = None) -> tuple[int, bool]:
        """Claim and send up to ``batch`` replies; (how many were tried, whether
        some were held back: recipients being sent to elsewhere, the rate limit
        or a pause)."""
        async with contextlib.AsyncExitStack() as stack:
            async with self._claiming:
                allowed = self.allowance()
                if not allowed:
                    return 0, True
                left_out = bool(self._busy) or allowed < self.batch
                session: AsyncSession | None = None
                if self.db.is_sqlite:
                    async with self.db.reading() as reader:
                        rows = await Outbox(reader).claim(now or utcnow(), allowed, self._busy)
                        reader.expunge_all()  # kept as read (the read's rollback would expire them)
                else:
                    session = await stack.enter_async_context(self.db.session())
                    await session.begin()
                    rows = await Outbox(session).claim(now or utcnow(), allowed, self._busy)
                    session.expunge_all()  # the outcome is written by Outbox.record
                mine = {row.recipient.lower() for row in rows}
                self._busy.update(mine)
            tried = 0
            try:
                while rows and self.clock() >= self._paused_until:
                    row, rows = rows[0], rows[1:]
                    tried += 1
                    try:
                        await _send_one(row, self.delivery, self.config, self.result)
                    except Throttled as exc:
                        self._throttled(exc)
                    else:
                        if row.state == "sent":
                            self._throttles = 0
                            self._sent_at.append(self.clock())
                    rows = await self._record(row, rows, session, now)
            finally:
                self._busy.difference_update(mine)
        return tried, left_out

    async def _record(
        self, row: OutboxMessage, rest: list[OutboxMessage], session: AsyncSession | None, now: datetime | None
    ) -> list[OutboxMessage]:
        """Commit one reply's outcome now; on PostgreSQL lock the rest of the
        claim again (rows another worker took meanwhile are dropped from it)."""
        if session is None:
            async with UnitOfWork(self.db) as uow:
                await uow.outbox.record([row])
                await uow.commit()
            return rest
        await Outbox(session).record([row])
        await session.commit()
        if not rest:
            return rest
        await session.begin()
        stmt = (
            select(OutboxMessage.id)
            .where(
                OutboxMessage.id.in_([r.id for r in rest]),
                OutboxMessage.state == "pending",
                OutboxMessage.next_attempt_at <= (now or utcnow()),
            )
            .with_for_update(skip_locked=True)
        )
        still = set((await session.execute(stmt)).scalars())
        return [r for r in rest if r.id in still]

    async def drain(self, now: datetime | None = None) -> DrainResult:
        """Send every due reply once (all senders until nothing is left or
        sending is held back)."""
        left_out = True
        while left_out:
            left_out, before = False, self._progress()

            async def sender() -> None:
                nonlocal left_out
                while True:
                    n, skipped = await self.step(now)
                    left_out = left_out or skipped
                    if n == 0 or (n < self.batch and not skipped):
                        return

            await asyncio.gather(*(sender() for _ in range(self.size)))
            if self._progress() == before:
                break
        return self.result

    def _progress(self) -> int:
        r = self.result
        return r.sent + r.failed + r.retried + r.throttled


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
    """Send one reply and note the outcome on ``row``.  :class:`Throttled` is
    raised again after the note: the row keeps its place in the queue (its due
    time is not moved) and the caller pauses all sending."""
    row.attempts += 1
    try:
        # composed and serialised (once, whichever delivery sends it) on a thread of
        # its own: drawing and encoding the picture (Pillow lets go of the GIL) runs
        # beside the event loop, on another core when there is one; one thread, so
        # one more malloc arena, not one per pool thread
        message = await asyncio.get_running_loop().run_in_executor(COMPOSER, to_outgoing, row, config)
        await delivery.deliver(message, row.recipient)
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
        now = utcnow()  # the retry counts from the failure: a slow attempt is not due again at once
        if now - row.created_at > timedelta(hours=config.smtp.give_up_hours):
            row.state = "failed"
            result.failed += 1
            log.error("giving up on reply %s to %s after %d attempts: %s", row.message_id, row.recipient, row.attempts, exc)
        elif isinstance(exc, Throttled):
            result.throttled += 1
            raise
        else:
            row.next_attempt_at = now + backoff(row.attempts, config.smtp.retry_base_seconds)
            result.retried += 1
            log.warning(
                "reply %s to %s: temporary failure (%s); retry at %s", row.message_id, row.recipient, exc, row.next_attempt_at
            )
        return
    row.state, row.sent_at, row.last_error = "sent", utcnow(), None
    result.sent += 1
