"""Guards in front of the commands: the per-sender throttle, the password-guessing
guard, and the dummy hash that makes an unknown userid cost what a known one does.

On SQLite (one process, the embedded default) both guards keep their counts in
the process: nothing else could see them, and a write per mail would take
SQLite's one write lock.  On PostgreSQL, where several ``serve`` processes share
the mailbox, they keep them in tables every worker sees (:mod:`..store.counters`),
so three workers allow what one allows (:func:`throttle_for`, :func:`guess_guard_for`)."""

from __future__ import annotations

import asyncio
import collections
import functools
import logging
import time
from collections.abc import Coroutine, Sequence
from typing import Any

from ..store import Database
from ..store import counters as shared
from .passwords import hash_password

log = logging.getLogger("pbmserv.guards")
FORGET_EVERY = 60.0
"""seconds between clean-ups of old shared counts (per process)"""


class Throttle:
    """Per-sender command counts in a sliding one-minute window (in this process).
    ``check`` says ok, notice (the first mail over the limit) or drop."""

    def __init__(self, per_minute: int) -> None:
        self.per_minute = per_minute
        self._times: dict[str, collections.deque[float]] = {}
        self._noticed: dict[str, float] = {}

    async def check(self, sender: str, message_id: str, now: float) -> str:
        """``now``: time.monotonic()."""
        return self.check_now(sender, now)

    async def check_many(self, mails: Sequence[tuple[str, str]], now: float) -> list[str]:
        """:meth:`check` for several mails (sender, Message-ID), in order."""
        return [await self.check(sender, message_id, now) for sender, message_id in mails]

    def check_now(self, sender: str, now: float) -> str:
        times = self._times.setdefault(sender, collections.deque())
        while times and times[0] <= now - 60:
            times.popleft()
        if len(self._times) > 50_000:  # forget quiet senders
            for key in [k for k, v in self._times.items() if not v or v[-1] <= now - 60][:10_000]:
                self._times.pop(key, None)
                self._noticed.pop(key, None)
        if len(times) >= self.per_minute:
            if self._noticed.get(sender, -1e9) > now - 60:
                return "drop"
            self._noticed[sender] = now
            return "notice"
        times.append(now)
        return "ok"


class GuessGuard:
    """Slows password guessing against one userid (known or not, alike): after
    FREE wrong passwords within WINDOW seconds, every further attempt must wait
    1, 2, 4 … (at most 60) minutes after the last failure."""

    FREE, WINDOW = 5, 900.0

    def __init__(self) -> None:
        self._failures: dict[str, list[float]] = {}

    def _after_failure(self, times: list[float], now: float) -> list[float]:
        return [*(t for t in times if t > now - self.WINDOW), now][-64:]

    def failed(self, userid: str, now: float) -> None:
        self._failures[userid] = self._after_failure(self._failures.get(userid, []), now)
        if len(self._failures) > 100_000:
            self._failures.pop(next(iter(self._failures)))

    def succeeded(self, userid: str) -> None:
        self._failures.pop(userid, None)

    def locked_for(self, userid: str, now: float, pending: Sequence[float | None] = ()) -> int:
        """Minutes still to wait (0 = may try).  ``pending``: outcomes not counted
        yet, in order: the time of a failure, or None for a success."""
        times = self._failures.get(userid, [])
        for when in pending:
            times = [] if when is None else self._after_failure(times, when)
        recent = [t for t in times if t > now - max(self.WINDOW, 3600.0)]
        extra = len(recent) - self.FREE
        if extra < 0:
            return 0
        until = recent[-1] + 60.0 * min(60, 2**extra)
        return 0 if until <= now else int((until - now) // 60) + 1

    async def refresh(self, userids: Sequence[str]) -> None:
        """Learn what other workers counted for these userids (nothing to learn here)."""


class GuardJournal:
    """One mail's password outcomes, told to the guard once the mail's work is
    final (:meth:`apply`, after its commit), so a mail run again (its batch
    undone) is counted once.  Meanwhile :meth:`locked_for` answers from the
    guard's counts plus this mail's own failures, so a mail of many commands is
    held back as it would be by failures counted at once."""

    def __init__(self, guard: GuessGuard) -> None:
        self.guard = guard
        self.events: list[tuple[str, float | None]] = []
        """(userid, time of a failure) or (userid, None) for a success, in order"""

    def locked_for(self, userid: str, now: float) -> int:
        return self.guard.locked_for(userid, now, [when for who, when in self.events if who == userid])

    def failed(self, userid: str, now: float) -> None:
        self.events.append((userid, now))

    def succeeded(self, userid: str) -> None:
        self.events.append((userid, None))

    def apply(self) -> None:
        for who, when in self.events:
            self.guard.succeeded(who) if when is None else self.guard.failed(who, when)
        self.events.clear()


def _wall(monotonic: float) -> float:
    """A time.monotonic() reading as wall-clock seconds (what workers share)."""
    return monotonic + (time.time() - time.monotonic())


class SharedThrottle(Throttle):
    """The throttle with its counts in the database (PostgreSQL, several workers):
    one row per mail let through and one per notice (:func:`..store.counters.throttle_check_many`)."""

    def __init__(self, db: Database, per_minute: int) -> None:
        super().__init__(per_minute)
        self.db = db
        self._forgotten = 0.0

    async def check(self, sender: str, message_id: str, now: float) -> str:
        return (await self.check_many([(sender, message_id)], now))[0]

    async def check_many(self, mails: Sequence[tuple[str, str]], now: float) -> list[str]:
        """One statement for a batch's mails when their senders differ (a batch's
        mails never share a sender in ``serve``), else one at a time."""
        if len({sender for sender, _ in mails}) != len(mails):
            return await super().check_many(mails, now)
        wall = _wall(now)
        if wall - self._forgotten > FORGET_EVERY:
            self._forgotten = wall
            try:
                await shared.forget_old(self.db, wall, keep_failures=2 * 3600.0)
            except Exception:
                log.warning("could not clear old throttle counts", exc_info=True)
        return await shared.throttle_check_many(self.db, mails, wall, self.per_minute)


class SharedGuessGuard(GuessGuard):
    """The guessing guard with its failures in the database (PostgreSQL).  The
    handlers ask it synchronously (:meth:`locked_for`), so it answers from the
    counts of this process, which :meth:`refresh` (run by ``Service.prewarm``
    before a batch of mails) replaces with every worker's; each failure and
    success is written at once, outside the mail's transaction (a wrong password
    counts even when its command is undone)."""

    def __init__(self, db: Database) -> None:
        super().__init__()
        self.db = db
        self._writes: set[asyncio.Task[None]] = set()
        self._order = asyncio.Lock()

    def failed(self, userid: str, now: float) -> None:
        super().failed(userid, now)
        self._write(shared.password_failed(self.db, userid, _wall(now)))

    def succeeded(self, userid: str) -> None:
        # only when there is something to clear (as of the last refresh): not a
        # write per mail; failures another worker counts after that refresh stay
        # until they age out (stricter, never looser)
        if userid in self._failures:
            super().succeeded(userid)
            self._write(shared.password_succeeded(self.db, userid))

    def _write(self, statement: Coroutine[Any, Any, None]) -> None:
        async def write() -> None:
            async with self._order:  # in the order they happened
                try:
                    await statement
                except Exception:
                    log.warning("could not record a password check for the other workers", exc_info=True)

        try:
            task = asyncio.get_running_loop().create_task(write())
        except RuntimeError:  # no event loop: nobody else to tell
            statement.close()
            return
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)

    async def settle(self) -> None:
        """Until the failures and successes noted so far are written."""
        while self._writes:
            await asyncio.gather(*list(self._writes), return_exceptions=True)

    async def refresh(self, userids: Sequence[str]) -> None:
        if not userids:
            return
        await self.settle()  # this worker's own, first
        offset = time.time() - time.monotonic()
        since = time.time() - max(self.WINDOW, 3600.0)
        try:
            counted = await shared.password_failures(self.db, userids, since)
        except Exception:
            log.warning("could not read the other workers' password failures", exc_info=True)
            return
        for userid in userids:
            times = [t - offset for t in counted.get(userid, [])][-64:]
            if times:
                self._failures[userid] = times
            else:
                self._failures.pop(userid, None)


def throttle_for(db: Database, per_minute: int) -> Throttle:
    """The throttle for ``db``: shared by every worker on PostgreSQL, in this process on SQLite."""
    return Throttle(per_minute) if db.is_sqlite else SharedThrottle(db, per_minute)


def guess_guard_for(db: Database) -> GuessGuard:
    """The guessing guard for ``db``: shared on PostgreSQL, in this process on SQLite."""
    return GuessGuard() if db.is_sqlite else SharedGuessGuard(db)


@functools.cache
def dummy_hash() -> str:
    """A hash to verify against for unknown users, so they cost what a user costs."""
    return hash_password("not-a-password")
