"""Delivering the outbox: after commit, each pending reply goes out exactly as
stored (same Message-ID on a retry), over SMTP or into a local Maildir.

Over SMTP a sender does not start its next reply before the outcome of its
previous one is committed, so a crash re-sends at most the one reply that was in
flight on each connection (and with the same Message-ID, which lets clients that
deduplicate do so).  Into Maildirs a whole claim is staged, recorded and then
published, and a crash re-sends nothing twice (:meth:`OutboxSenders._send_staged`).
Between the MTA's ``250`` and the commit of that outcome a sender does nothing
else (it composes its next reply and claims more only afterwards), a claim never
goes before an outcome waiting to be written, and on SQLite the outcome's
transaction goes before ``serve``'s next one (``Database.session(first=True)``):
so the window in which a crash sends a reply again is as short as one commit,
and a restart's first reply is not left in it at the next crash (issue 43).
An outcome that could not be written is kept and written before anything else,
never sent again.  The outcomes already in hand when a transaction starts on
several connections are committed together, in one transaction (a group
commit: :class:`OutboxSenders`).  Temporary failures are retried with exponential
back-off until ``give_up_hours``; permanent rejections are recorded as ``failed``
at once.  A provider that says "slow down" (421/451/452) pauses all sending, and
``smtp.max_per_minute`` holds what is over the limit; either way the held replies
stay queued in their order.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncConnection

from ..config import Config
from ..mail.delivery import (
    Delivery,
    PermanentFailure,
    StagedDelivery,
    StagedFiles,
    Throttled,
    staged_key,
    staged_name,
)
from ..mail.message import Outgoing
from ..service.bounces import bounce_key, record_refusal
from ..service.replykeys import SECRET_NAME
from ..store import Database, OutboxMessage, UnitOfWork, leases, utcnow
from ..store.autocommit import autocommit
from ..store.repos import Outbox, Secrets
from .compose import to_outgoing

log = logging.getLogger("pbmserv.outbound")

THROTTLE_MAX = 900.0
"""seconds: the longest pause after the provider asked us to slow down"""

COMPOSER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="compose")
"""where replies are composed and serialised (:func:`~.compose.to_outgoing`)"""


CLAIM = 8
"""replies a sender claims at a time, unless its delivery says otherwise (a
``claim`` attribute: a Maildir's claim is staged as one, and larger claims cost
less a reply)"""


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

    Each :meth:`step` claims a few due replies and sends them one by one; a
    recipient's replies go out in order (a recipient being sent to is left out of
    other claims).  After each reply its outcome is handed to the group commit
    and the sender waits until it is committed before it does anything else
    (composing its next reply, on the composer thread, comes after): the
    outcomes that are ready while a transaction writes are written by the next
    one, all in one statement (:attr:`groups` counts the transactions), which
    starts at once with what is in hand and never waits for more.  A claim
    waits until no outcome is waiting to be written.

    On SQLite (one process) the claim is a plain read, so mail processing never
    waits for the network; outcomes take the writer lock once per group, not once
    per reply.  On PostgreSQL a worker leases what it claims: a session advisory
    lock per reply (:data:`~pbmserv_terrace.store.leases.LEASE_KEY`) on one connection of its own, which holds no
    transaction open while replies are sent.  Other workers' claims leave out the
    leased replies and their recipients; a group's outcomes are written and their
    leases ended in one statement.  A worker that dies (or loses that connection)
    loses its leases with it, and its replies are claimed again at once; so
    several workers never send the same reply at once, and a crash re-sends only
    the replies that were in flight.

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
        batch: int | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.db, self.delivery, self.config = db, delivery, config
        self.batch = batch or max(1, getattr(delivery, "claim", CLAIM))
        self.size = max(1, getattr(delivery, "size", 1))
        self.result = DrainResult()
        self.clock = clock
        self.groups = 0
        """outcome transactions committed"""
        self._busy: set[str] = set()
        self._claiming = asyncio.Lock()
        self._sent_at: deque[float] = deque()
        self._paused_until = 0.0
        self._throttles = 0
        self._outcomes: list[tuple[list[OutboxMessage], asyncio.Future[None]]] = []
        self._unrecorded: list[OutboxMessage] = []
        """replies tried whose outcome could not be written (the database was away):
        written before anything else is done, never claimed and sent again here"""
        self._recovered = False
        """a Maildir's staged replies were looked at (:meth:`_recover`)"""
        self._writer: asyncio.Task[None] | None = None
        self._conn: AsyncConnection | None = None
        """PostgreSQL: the connection holding this worker's leases (while it holds any)"""
        self._using = asyncio.Lock()
        self._leased: set[int] = set()
        """PostgreSQL: the replies leased on ``_conn``"""
        self.full: Callable[[], None] | None = None
        """called when a claim comes back full (more may be due), before it is sent"""
        self._bounce_key: bytes | None = None
        """the key of the replies' return paths (VERP: :mod:`..service.bounces`),
        read once from the reply-key secret; None until read (or when there is none)"""
        self._key_read = False

    # ------------------------------------------------------------ holding back
    @property
    def recent_sends(self) -> int:
        """The send times kept for ``smtp.max_per_minute``: at most the last
        minute's sends (as of the last :meth:`allowance`), none without a limit;
        what the senders remember must not grow with the replies they send."""
        return len(self._sent_at)

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
            await self._settled()  # an outcome before any claim
            if self._unrecorded:
                await self._record_unrecorded()
            if not self._recovered and isinstance(self.delivery, StagedDelivery):
                await self._recover(self.delivery)
            if not self._key_read:
                await self._read_bounce_key()
            allowed = self.allowance()
            if not allowed:
                return 0, True
            left_out = bool(self._busy) or allowed < self.batch
            rows = await self._claim(now or utcnow(), allowed)
            mine = {row.recipient.lower() for row in rows}
            self._busy.update(mine)
        if len(rows) >= self.batch and self.full is not None:
            self.full()
        tried = 0
        try:
            if rows and isinstance(self.delivery, StagedDelivery):
                tried, rows = await self._send_staged(rows, self.delivery), []
            while rows and self.clock() >= self._paused_until:
                row, rows = rows[0], rows[1:]
                tried += 1
                # composed now, not while the last one's outcome was being committed:
                # from the MTA's 250 to that commit this sender does nothing else
                refused = ""
                try:
                    refused = await _send_one(row, self._compose(row), self.delivery, self.config, self.result)
                except Throttled as exc:
                    self._throttled(exc)
                else:
                    self._count(row)
                try:
                    await self._commit([row])
                except BaseException:
                    if row.attempts:  # tried: kept, to be written before anything else (never sent again)
                        self._unrecorded.append(row)
                    raise
                if refused and await self._bounced(row, refused):  # (after the outcome, in a transaction of its own)
                    # the address is marked bouncing: its replies in this claim are not sent (failed with the others)
                    address = row.recipient.lower()
                    held = [r for r in rows if r.recipient.lower() == address]
                    rows = [r for r in rows if r.recipient.lower() != address]
                    if held and not self.db.is_sqlite:
                        await self._release(held)
            if rows and not self.db.is_sqlite:
                await self._release(rows)  # not tried (a pause began): for any worker again
        except BaseException:
            if not self.db.is_sqlite:
                await self._lost()
            raise
        finally:
            # (an unrecorded reply's recipient stays busy until its outcome is written)
            self._busy.difference_update(mine - {r.recipient.lower() for r in self._unrecorded})
        return tried, left_out

    async def _bounced(self, row: OutboxMessage, status: str) -> bool:
        """The MTA refused the reply's recipient (5xx at ``RCPT``): a hard bounce of
        that address, counted once the refusal's outcome is committed
        (:func:`~..service.bounces.record_refusal`; once per reply).  Whether the
        address is now marked bouncing.  If counting fails the outcome stands and
        the failure is logged."""
        try:
            async with UnitOfWork(self.db) as uow:
                said, marked = await record_refusal(uow, row.id, status, self.config, utcnow())
                await uow.commit()
        except Exception:
            log.exception("counting the refusal of reply %s to %s as a bounce failed", row.message_id, row.recipient)
            return False
        log.info("reply %s refused at send time: %s", row.message_id, said)
        return marked

    def _count(self, row: OutboxMessage) -> None:
        if row.state == "sent":
            self._throttles = 0
            if self.config.smtp.max_per_minute:  # (with no limit nothing is kept per reply)
                self._sent_at.append(self.clock())

    async def _send_staged(self, rows: list[OutboxMessage], maildir: StagedDelivery) -> int:
        """A Maildir's way, a claim at a time: the replies composed and written
        into the staging folder (one hop to the composer thread:
        :func:`_compose_and_write`), made durable (one sync, in a thread: the
        composer goes on with the next claim meanwhile), their outcomes
        committed (the group commit), and only then published into the
        recipients' Maildirs (one more hop to the composer thread).  A crash
        before the commit leaves them pending (they are staged again, under the
        same names); one after it leaves them staged and recorded as sent (the
        next start publishes them: :meth:`_recover`).  So each reply shows up
        once, and the per-reply cost is a file's, not a transaction's."""
        loop = asyncio.get_running_loop()
        names = [staged_name(row.id, row.message_id, row.created_at) for row in rows]
        messages, staged = await loop.run_in_executor(
            COMPOSER, _compose_and_write, rows, names, maildir, self.config, self._bounce_key
        )
        try:
            written = await asyncio.to_thread(staged.sync)
        except BaseException:
            staged.close()
            raise
        problems = _problems(messages, written)
        for row, problem in zip(rows, problems, strict=True):
            _note(row, problem, self.config, self.result)  # (a Maildir never says "slow down")
            self._count(row)
        await self._commit(rows)
        sent = [(names[i], row.recipient) for i, row in enumerate(rows) if row.state == "sent"]
        if sent:
            await loop.run_in_executor(COMPOSER, maildir.publish, sent)
        return len(rows)

    async def _recover(self, maildir: StagedDelivery) -> None:
        """Before the first claim: publish what a stop left staged after its
        outcome was committed, and drop what was staged for a reply that failed
        since.  A pending reply's file is left (it is staged again, under the same
        name, when it is sent); names that are not ours are left alone.  If this
        fails (the database is away), sending goes on and the next step tries again."""
        try:
            await self._recover_staged(maildir)
        except Exception:
            log.exception("publishing the replies a stop left staged failed; trying again at the next claim")
        else:
            self._recovered = True

    async def _recover_staged(self, maildir: StagedDelivery) -> None:
        names = await asyncio.to_thread(maildir.staged)
        keys = {name: key for name in names if (key := staged_key(name)) is not None}
        if not keys:
            return
        async with self.db.reading() as reader:
            found = {row.id: row for row in await Outbox(reader).of_ids(sorted(set(keys.values())))}
            reader.expunge_all()  # kept as read (the read's rollback would expire them)
        publish, drop = [], []
        for name, key in keys.items():
            row = found.get(key)
            if row is None or name != staged_name(row.id, row.message_id, row.created_at):
                continue
            if row.state == "sent":
                publish.append((name, row.recipient))
            elif row.state == "failed":
                drop.append(name)
        if publish:
            log.warning("publishing %d replies a stop left staged after they were recorded as sent", len(publish))
            await asyncio.to_thread(maildir.publish, publish)
        await asyncio.to_thread(maildir.discard, drop)

    async def _read_bounce_key(self) -> None:
        """Read the return paths' key (every worker derives the same one from the
        shared reply-key secret, so any of them counts any bounce).  If the
        database is away, replies go with the plain address until it is back."""
        try:
            async with self.db.reading() as reader:
                secret = await Secrets(reader).get(SECRET_NAME)
        except Exception:
            log.exception("reading the reply-key secret failed; replies go without their own return path meanwhile")
            return
        self._bounce_key = bounce_key(secret) if secret else None
        self._key_read = True

    def _compose(self, row: OutboxMessage) -> asyncio.Future[Outgoing]:
        # composed and serialised on a thread of its own: drawing and encoding the
        # picture (Pillow lets go of the GIL) runs beside the event loop, on another
        # core when there is one; one thread, so one more malloc arena, not one per
        # pool thread
        future = asyncio.get_running_loop().run_in_executor(COMPOSER, to_outgoing, row, self.config, self._bounce_key)
        future.add_done_callback(_quiet)  # a message composed ahead and not sent (a pause) is dropped
        return future

    async def _claim(self, now: datetime, limit: int) -> list[OutboxMessage]:
        if self.db.is_sqlite:
            async with self.db.reading() as reader:
                rows = await Outbox(reader).claim(now, limit, self._busy)
                reader.expunge_all()  # kept as read (the read's rollback would expire them)
            return rows
        async with self._using:
            if self._conn is None:
                self._conn = await autocommit(self.db).connect()
            conn = self._conn
            try:
                rows = await leases.claim(conn, now, limit)
            except BaseException:
                await self._lost()  # a connection in doubt holds no leases
                raise
            self._leased.update(r.id for r in rows)
            await self._let_go()
        return sorted(rows, key=lambda r: (r.next_attempt_at, r.id))

    async def _release(self, rows: Sequence[OutboxMessage]) -> None:
        """End the leases of claimed rows that were not tried."""
        async with self._using:
            ids = [r.id for r in rows if r.id in self._leased]
            if self._conn is not None and ids:  # (none: they went with a lost connection)
                await leases.release(self._conn, ids)
            self._leased.difference_update(ids)
            await self._let_go()

    async def _let_go(self) -> None:
        """Give the leases' connection back to the pool while it holds none."""
        if self._conn is not None and not self._leased:
            conn, self._conn = self._conn, None
            await conn.close()

    async def _lost(self) -> None:
        """After a failure: close the leases' connection (not back to the pool),
        which ends every lease of this worker; its senders' outcomes then fail too,
        and the replies go again."""
        conn, self._conn = self._conn, None
        self._leased.clear()
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.invalidate()
            with contextlib.suppress(Exception):
                await conn.close()

    # ------------------------------------------------------ the group commit
    async def _settled(self) -> None:
        """Until no outcome is waiting to be written (a claim never goes first)."""
        while self._writer is not None and not self._writer.done():
            await asyncio.wait({self._writer})

    async def _record_unrecorded(self) -> None:
        """Write the outcomes that could not be written before (raises while the
        database is still away; they stay kept)."""
        rows, self._unrecorded = self._unrecorded, []
        try:
            await self._commit(rows, held=False)
        except BaseException:
            self._unrecorded = rows + self._unrecorded
            raise
        log.info("recorded the outcome of %d replies that could not be recorded before", len(rows))
        self._busy.difference_update(r.recipient.lower() for r in rows)

    async def _commit(self, rows: list[OutboxMessage], *, held: bool = True) -> None:
        """Hand these rows' outcomes to the group commit and wait until the
        transaction that writes them has committed."""
        if not held:  # (their leases went with a lost connection: written on their own)
            await self._write(rows, held=False)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._outcomes.append((rows, future))
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write_outcomes())
        await future

    async def _write_outcomes(self) -> None:
        """Write what is waiting, one transaction each time, until nothing is."""
        while self._outcomes:
            for _ in range(2):  # outcomes already in hand (ended in the same instant) join: no waiting for more
                await asyncio.sleep(0)
            group, self._outcomes = self._outcomes, []
            try:
                await self._write([row for rows, _ in group for row in rows])
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

    async def _write(self, rows: list[OutboxMessage], *, held: bool = True) -> None:
        if self.db.is_sqlite:
            async with self.db.session(first=True) as session:  # before serve's next transaction
                await Outbox(session).record(rows)
                await session.commit()
            return
        async with self._using:
            if not held and self._conn is None:
                self._conn = await autocommit(self.db).connect()
            if self._conn is None or (held and not self._leased.issuperset(r.id for r in rows)):
                raise ConnectionError("the outbox lost its leases' connection: the replies go again")
            await leases.write_outcomes(self._conn, rows)
            self._leased.difference_update(r.id for r in rows)
            await self._let_go()

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
    db: Database, delivery: Delivery, config: Config, *, batch: int | None = None, now: datetime | None = None
) -> DrainResult:
    """Send every due pending reply once (see :class:`OutboxSenders`), then close
    the delivery's connections."""
    try:
        return await OutboxSenders(db, delivery, config, batch=batch).drain(now)
    finally:
        await delivery.close()


async def _send_one(
    row: OutboxMessage, message: Awaitable[Outgoing], delivery: Delivery, config: Config, result: DrainResult
) -> str:
    """Send one reply (``message``: its composition, under way) and note the
    outcome on ``row`` (:func:`_note`); the status with which the MTA refused its
    recipient for good, else ''."""
    try:
        await delivery.deliver(await message, row.recipient)
    except Exception as exc:
        _note(row, exc, config, result)
        return exc.refused if isinstance(exc, PermanentFailure) else ""
    log.debug("reply %s to %s: taken by the MTA", row.message_id, row.recipient)  # (the crash tests count these)
    _note(row, None, config, result)
    return ""


def _note(row: OutboxMessage, problem: Exception | None, config: Config, result: DrainResult) -> None:
    """Note on ``row`` how its attempt ended (``problem`` None: delivered).
    :class:`Throttled` is raised again after the note: the row keeps its place
    in the queue (its due time is not moved) and the caller pauses all sending."""
    row.attempts += 1
    if problem is None:
        row.state, row.sent_at, row.last_error = "sent", utcnow(), None
        result.sent += 1
    elif isinstance(problem, PermanentFailure):
        row.state, row.last_error = "failed", f"permanent: {problem}"[:2000]
        result.failed += 1
        log.error("reply %s to %s rejected permanently: %s", row.message_id, row.recipient, problem)
    elif isinstance(problem, ValueError):  # an address we refuse to write into a header
        row.state, row.last_error = "failed", f"invalid: {problem}"[:2000]
        result.failed += 1
    else:  # network trouble, 4xx, a full disk: try again later
        row.last_error = f"{type(problem).__name__}: {problem}"[:2000]
        now = utcnow()  # the retry counts from the failure: a slow attempt is not due again at once
        if now - row.created_at > timedelta(hours=config.smtp.give_up_hours):
            row.state = "failed"
            result.failed += 1
            log.error("giving up on reply %s to %s after %d attempts: %s", row.message_id, row.recipient, row.attempts, problem)
        elif isinstance(problem, Throttled):
            result.throttled += 1
            raise problem
        else:
            row.next_attempt_at = now + backoff(row.attempts, config.smtp.retry_base_seconds)
            result.retried += 1
            log.warning(
                "reply %s to %s: temporary failure (%s); retry at %s", row.message_id, row.recipient, problem, row.next_attempt_at
            )


def _compose_and_write(
    rows: Sequence[OutboxMessage], names: Sequence[str], maildir: StagedDelivery, config: Config, bounce_key: bytes | None
) -> tuple[list[Outgoing | Exception], StagedFiles]:
    """Compose each row's message and write it into the staging folder under its
    name (not yet synced).  On the composer thread: the file calls (each lets go
    of the GIL and takes it back) are made by the thread that composes, never
    beside it; only the sync, one call a claim, is left to another thread.  When
    each file was written and fsynced by another thread, each call waited for
    the composing thread to hand the GIL over (Python's switch interval, 5 ms): a
    staged file cost ~20 ms of wall time instead of ~0.5, and the hand-overs
    more CPU than the files (issue 18)."""
    messages = _compose_all(rows, config, bounce_key)
    return messages, maildir.write_staged([(names[i], m.delivered()) for i, m in enumerate(messages) if isinstance(m, Outgoing)])


def _problems(messages: Sequence[Outgoing | Exception], written: Sequence[OSError | None]) -> list[Exception | None]:
    """What went wrong with each reply of a claim: its composition, or else its
    file (``written``: the outcomes of the composed ones, in order)."""
    outcomes = iter(written)
    return [m if isinstance(m, Exception) else next(outcomes) for m in messages]


def _compose_all(rows: Sequence[OutboxMessage], config: Config, bounce_key: bytes | None) -> list[Outgoing | Exception]:
    """Each row's message, or what composing it raised (on the composer thread)."""
    messages: list[Outgoing | Exception] = []
    for row in rows:
        try:
            messages.append(to_outgoing(row, config, bounce_key))
        except Exception as exc:
            messages.append(exc)
    return messages


def _quiet(future: asyncio.Future[Outgoing]) -> None:
    """Take a dropped composition's exception, so that nothing logs it as lost."""
    if not future.cancelled():
        future.exception()
