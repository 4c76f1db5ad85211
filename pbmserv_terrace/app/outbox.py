"""Delivering the outbox: after commit, each pending reply goes out exactly as
stored (same Message-ID on a retry), over SMTP or into a local Maildir.

A sender does not start its next reply before the outcome of its previous one is
committed, so a crash re-sends at most the one reply that was in flight on each
connection (and with the same Message-ID, which lets clients that deduplicate do
so).  The outcomes of replies that end at about the same time on several
connections are committed together, in one transaction (a group commit:
:class:`OutboxSenders`).  Temporary failures are retried with exponential
back-off until ``give_up_hours``; permanent rejections are recorded as ``failed``
at once.  A provider that says "slow down" (421/451/452) pauses all sending, and
``smtp.max_per_minute`` holds what is over the limit; either way the held replies
stay queued in their order.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import Table, bindparam, text, update

from ..config import Config
from ..mail.delivery import Delivery, PermanentFailure, Throttled
from ..mail.message import Outgoing
from ..store import Database, OutboxMessage, utcnow
from ..store.repos import Outbox
from .compose import to_outgoing

log = logging.getLogger("pbmserv.outbound")

THROTTLE_MAX = 900.0
"""seconds: the longest pause after the provider asked us to slow down"""

LEASE_MIN = timedelta(minutes=5)
"""PostgreSQL: how long a claim keeps its rows from other workers, at least
(``10 × smtp.timeout`` when that is longer); renewed before a reply when half of
it is gone, and left to run out by a worker that died"""

COMPOSER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="compose")
"""where replies are composed and serialised (:func:`~.compose.to_outgoing`)"""

_OUTBOX = cast(Table, OutboxMessage.__table__)
_OUTCOME_SET: dict[str, Any] = {
    "state": bindparam("o_state"),
    "attempts": bindparam("o_attempts"),
    "next_attempt_at": bindparam("o_due"),
    "sent_at": bindparam("o_sent_at"),
    "last_error": bindparam("o_error"),
}
_OUTCOME = update(_OUTBOX).where(_OUTBOX.c.id == bindparam("o_id")).values(_OUTCOME_SET)
"""a reply's outcome (SQLite: one process, no leases)"""
_LEASED_OUTCOME = (
    update(_OUTBOX)
    .where(_OUTBOX.c.id == bindparam("o_id"), _OUTBOX.c.next_attempt_at == bindparam("o_lease"))
    .values(_OUTCOME_SET)
)
"""a reply's outcome, written only while this worker's lease on it holds"""

_LEASE = text(
    """
WITH picked AS (
    SELECT o.id, o.next_attempt_at AS due FROM outbox o
    WHERE o.state = 'pending' AND o.next_attempt_at <= :now
      AND lower(o.recipient) <> ALL(CAST(:busy AS varchar[]))
      AND NOT EXISTS (
          SELECT 1 FROM outbox e
          WHERE e.state = 'pending' AND e.next_attempt_at > :now AND e.next_attempt_at <= :lease
            AND e.id < o.id AND lower(e.recipient) = lower(o.recipient))
    ORDER BY o.id
    LIMIT :limit
    FOR UPDATE OF o SKIP LOCKED
)
UPDATE outbox SET next_attempt_at = :lease FROM picked WHERE outbox.id = picked.id
RETURNING outbox.*, picked.due AS lease_due
"""
)
"""PostgreSQL's claim, one statement: due rows, oldest first (by id: a lease that
ran out has moved its rows' due times), leased until ``:lease`` (their
``next_attempt_at``, which other workers' claims skip).  A recipient with an
earlier reply leased (or due within a lease) is left out, so several workers keep
each recipient's order."""
_CLAIM_KEY = int.from_bytes(hashlib.sha256(b"pbmserv outbox claims").digest()[:8], "big", signed=True)
_CLAIM_LOCK = text("SELECT pg_advisory_xact_lock(:key)")
_RENEW = text(
    """
UPDATE outbox SET next_attempt_at = :lease
WHERE id = ANY(CAST(:ids AS integer[])) AND next_attempt_at = :held AND state = 'pending'
RETURNING id
"""
)


def backoff(attempts: int, base: float = 60.0) -> timedelta:
    """base, 2·base, 4·base, … capped at 1 hour."""
    return timedelta(seconds=min(3600.0, base * 2 ** max(0, attempts - 1)))


@dataclass
class DrainResult:
    sent: int = 0
    retried: int = 0
    failed: int = 0
    throttled: int = 0


@dataclass
class _Claim:
    """What :meth:`OutboxSenders.step` claimed: the rows, oldest first, and (on
    PostgreSQL) the lease they are held with, ``None`` on SQLite."""

    rows: list[OutboxMessage]
    lease: datetime | None = None


class OutboxSenders:
    """Senders of the outbox, as many at once as the delivery has connections.

    Each :meth:`step` claims a few due replies and sends them one by one; a
    recipient's replies go out in order (a recipient being sent to is left out of
    other claims).  After each reply its outcome is handed to the group commit
    and the sender waits until it is committed before it starts the next one: the
    outcomes that are ready while a transaction writes are written by the next
    one, all in one statement (:attr:`groups` counts the transactions).  The
    message for the next reply is composed meanwhile, on the composer thread.

    On SQLite (one process) the claim is a plain read, so mail processing never
    waits for the network; outcomes take the writer lock once per group, not once
    per reply.  On PostgreSQL the claim is one short statement that leases its
    rows (``next_attempt_at`` moved a lease ahead, :data:`LEASE_MIN`): other
    workers' claims skip them without a transaction held open while sending, and
    a worker that dies leaves them to be tried again once the lease ran out.  An
    outcome is written only while the lease holds (its ``next_attempt_at`` is the
    lease), and writes back the row's own due time (its place in the queue) unless
    the reply is to be retried later; rows claimed but not tried (a pause began)
    are given back the same way.  So several workers never send the same reply at
    once.

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
        self.lease = max(LEASE_MIN, timedelta(seconds=10 * config.smtp.timeout))
        self.groups = 0
        """outcome transactions committed"""
        self._busy: set[str] = set()
        self._claiming = asyncio.Lock()
        self._sent_at: deque[float] = deque()
        self._paused_until = 0.0
        self._throttles = 0
        self._outcomes: list[tuple[dict[str, Any], asyncio.Future[None]]] = []
        self._writer: asyncio.Task[None] | None = None

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
        async with self._claiming:
            allowed = self.allowance()
            if not allowed:
                return 0, True
            left_out = bool(self._busy) or allowed < self.batch
            claim = await self._claim(now or utcnow(), allowed)
            mine = {row.recipient.lower() for row in claim.rows}
            self._busy.update(mine)
        tried = 0
        ahead: dict[int, asyncio.Future[Outgoing]] = {}
        try:
            rows = claim.rows
            while rows and self.clock() >= self._paused_until:
                if claim.lease is not None and utcnow() > claim.lease - self.lease / 2:
                    rows = await self._renew(claim, rows, now)
                    if not rows:
                        break
                row, rows = rows[0], rows[1:]
                tried += 1
                message = ahead.pop(row.id, None) or self._compose(row)
                if rows:  # the next one is composed while this one is sent and recorded
                    ahead[rows[0].id] = self._compose(rows[0])
                try:
                    await _send_one(row, message, self.delivery, self.config, self.result)
                except Throttled as exc:
                    self._throttled(exc)
                else:
                    if row.state == "sent":
                        self._throttles = 0
                        self._sent_at.append(self.clock())
                await self._commit([row], claim.lease)
            if rows and claim.lease is not None:
                await self._commit(rows, claim.lease)  # not tried (a pause began): given back as they were
        finally:
            self._busy.difference_update(mine)
        return tried, left_out

    def _compose(self, row: OutboxMessage) -> asyncio.Future[Outgoing]:
        # composed and serialised on a thread of its own: drawing and encoding the
        # picture (Pillow lets go of the GIL) runs beside the event loop, on another
        # core when there is one; one thread, so one more malloc arena, not one per
        # pool thread
        future = asyncio.get_running_loop().run_in_executor(COMPOSER, to_outgoing, row, self.config)
        future.add_done_callback(_quiet)  # a message composed ahead and not sent (a pause) is dropped
        return future

    async def _claim(self, now: datetime, limit: int) -> _Claim:
        if self.db.is_sqlite:
            async with self.db.reading() as reader:
                rows = await Outbox(reader).claim(now, limit, self._busy)
                reader.expunge_all()  # kept as read (the read's rollback would expire them)
            return _Claim(rows)
        lease = now + self.lease
        async with self.db.session() as session:
            # claims one at a time across workers: the claim below then sees every
            # lease committed before it (in one statement it would see the rows as
            # they were when it began, and could pass a recipient's earlier reply
            # that another claim is taking that moment)
            await session.execute(_CLAIM_LOCK, {"key": _CLAIM_KEY})
            found = (
                (await session.execute(_LEASE, {"now": now, "lease": lease, "limit": limit, "busy": sorted(self._busy)}))
                .mappings()
                .all()
            )
            await session.commit()
        rows = []
        for found_row in sorted(found, key=lambda r: int(r["id"])):
            values = {c.name: found_row[c.name] for c in _OUTBOX.columns}
            values["next_attempt_at"] = found_row["lease_due"]  # its place in the queue, written back with the outcome
            rows.append(OutboxMessage(**values))
        return _Claim(rows, lease)

    async def _renew(self, claim: _Claim, rows: list[OutboxMessage], now: datetime | None) -> list[OutboxMessage]:
        """Extend the lease of the claim's rows not sent yet (those another worker
        took after the lease ran out are dropped)."""
        assert claim.lease is not None
        lease = (now or utcnow()) + self.lease
        async with self.db.session() as session:
            params = {"ids": [r.id for r in rows], "held": claim.lease, "lease": lease}
            kept = set((await session.execute(_RENEW, params)).scalars())
            await session.commit()
        claim.lease = lease
        return [r for r in rows if r.id in kept]

    # ------------------------------------------------------ the group commit
    async def _commit(self, rows: Sequence[OutboxMessage], lease: datetime | None) -> None:
        """Hand these rows' outcomes to the group commit and wait until the
        transaction that writes them has committed."""
        loop = asyncio.get_running_loop()
        waits = []
        for row in rows:
            future: asyncio.Future[None] = loop.create_future()
            values = {"o_id": row.id, "o_state": row.state, "o_attempts": row.attempts, "o_due": row.next_attempt_at,
                      "o_sent_at": row.sent_at, "o_error": row.last_error, "o_lease": lease}  # fmt: skip
            self._outcomes.append((values, future))
            waits.append(future)
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write_outcomes())
        for future in waits:
            await future

    async def _write_outcomes(self) -> None:
        """Write what is waiting, one transaction each time, until nothing is."""
        while self._outcomes:
            for _ in range(2):  # senders whose replies ended in the same instant add theirs first
                await asyncio.sleep(0)
            group, self._outcomes = self._outcomes, []
            try:
                await self._write([values for values, _ in group])
            except asyncio.CancelledError:
                for _, future in group:
                    future.cancel()
                raise
            except Exception as exc:  # each waiting sender raises it (the database is unreachable…)
                for _, future in group:
                    if not future.done():
                        future.set_exception(exc)
                continue
            self.groups += 1
            for _, future in group:
                if not future.done():
                    future.set_result(None)

    async def _write(self, outcomes: list[dict[str, Any]]) -> None:
        leased = [o for o in outcomes if o["o_lease"] is not None]
        plain = [o for o in outcomes if o["o_lease"] is None]
        async with self.db.session() as session:
            await session.begin()
            if plain:
                await session.execute(_OUTCOME, plain)
            if leased:
                await session.execute(_LEASED_OUTCOME, leased)
            await session.commit()

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


async def _send_one(
    row: OutboxMessage, message: Awaitable[Outgoing], delivery: Delivery, config: Config, result: DrainResult
) -> None:
    """Send one reply (``message``: its composition, under way) and note the
    outcome on ``row``.  :class:`Throttled` is raised again after the note: the
    row keeps its place in the queue (its due time is not moved) and the caller
    pauses all sending."""
    row.attempts += 1
    try:
        await delivery.deliver(await message, row.recipient)
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


def _quiet(future: asyncio.Future[Outgoing]) -> None:
    """Take a dropped composition's exception, so that nothing logs it as lost."""
    if not future.cancelled():
        future.exception()
