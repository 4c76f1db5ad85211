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
    """Command counts in a sliding one-minute window (in this process), per
    sender, and per (user, sender) for mails over their sender's limit that
    authenticate (issue 36: a flood under a forged From must not silence the
    real player, whose mails carry a password or a reply key a forger lacks).
    ``check`` says ok, notice (the first mail over the limit) or drop."""

    def __init__(self, per_minute: int) -> None:
        self.per_minute = per_minute
        self._times: dict[tuple[str, str], collections.deque[float]] = {}
        self._noticed: dict[tuple[str, str], float] = {}

    async def check(self, sender: str, message_id: str, now: float, *, userid: str = "") -> str:
        """``now``: time.monotonic(); ``userid``: count the mail per (user, sender)."""
        return self.check_now(sender, now, userid=userid)

    async def check_many(self, mails: Sequence[tuple[str, str]], now: float, userids: Sequence[str] | None = None) -> list[str]:
        """:meth:`check` for several mails (sender, Message-ID), in order."""
        users = list(userids) if userids is not None else [""] * len(mails)
        return [
            await self.check(sender, message_id, now, userid=user)
            for (sender, message_id), user in zip(mails, users, strict=True)
        ]

    def check_now(self, sender: str, now: float, *, userid: str = "") -> str:
        key = (sender, userid)
        times = self._times.setdefault(key, collections.deque())
        while times and times[0] <= now - 60:
            times.popleft()
        if len(self._times) > 50_000:  # forget quiet senders
            for quiet in [k for k, v in self._times.items() if not v or v[-1] <= now - 60][:10_000]:
                self._times.pop(quiet, None)
                self._noticed.pop(quiet, None)
        if len(times) >= self.per_minute:
            if self._noticed.get(key, -1e9) > now - 60:
                return "drop"
            self._noticed[key] = now
            return "notice"
        times.append(now)
        return "ok"


Pending = Sequence[tuple[str, str, float | None]]
"""password outcomes not counted yet, in order: (userid, sender, time of a
failure), or (userid, sender, None) for a success"""


def _lock(times: Sequence[float], free: int, now: float, span: float) -> int:
    """Minutes to wait after ``times`` (failures, oldest first) when ``free`` of
    them within ``span`` seconds are free: 1, 2, 4 … (at most 60) minutes after
    the last one for each one more."""
    recent = [t for t in times if t > now - span]
    extra = len(recent) - free
    if extra < 0:
        return 0
    until = recent[-1] + 60.0 * min(60, 2**extra)
    return 0 if until <= now else int((until - now) // 60) + 1


class GuessGuard:
    """Slows password guessing (issue 36: From is not identity).  Wrong passwords
    are counted three ways, and an attempt waits when any of them is over:

    - per (userid, sender): FREE within WINDOW seconds, then 1, 2, 4 … (at most
      60) minutes after the last failure.  A guesser, or a forger writing under
      someone's From, slows only attempts from that address;
    - per sender, over every userid (SENDER_FREE): one address guessing many
      userids.  Not applied to a userid's own (confirmed) address, so mails
      forged under it for other userids cannot lock its owner out;
    - per userid, every sender together (USER_FREE, a high cap): guessing spread
      over many addresses.  Only above it are the owner's own attempts held.

    Unknown userids are counted alike (the same answers as known ones)."""

    FREE, WINDOW = 5, 900.0
    SENDER_FREE = 20
    USER_FREE = 60
    KEEP = 128
    """failures remembered per key (more than any free count)"""
    SPAN = 3600.0
    """seconds a failure can still hold back an attempt"""

    def __init__(self) -> None:
        self._failures: dict[str, dict[str, list[float]]] = {}
        """userid → sender → failure times"""
        self._by_user: dict[str, list[float]] = {}
        self._by_sender: dict[str, list[float]] = {}

    def _after_failure(self, times: list[float], now: float) -> list[float]:
        return [*(t for t in times if t > now - self.WINDOW), now][-self.KEEP :]

    @staticmethod
    def _bounded(table: dict[str, Any]) -> None:
        if len(table) > 100_000:
            table.pop(next(iter(table)))

    def failed(self, userid: str, now: float, *, sender: str = "") -> None:
        mine = self._failures.setdefault(userid, {})
        mine[sender] = self._after_failure(mine.get(sender, []), now)
        if len(mine) > 1000:  # forget the quietest senders of one userid
            mine.pop(next(iter(mine)))
        self._by_user[userid] = self._after_failure(self._by_user.get(userid, []), now)
        if sender:
            self._by_sender[sender] = self._after_failure(self._by_sender.get(sender, []), now)
        for table in (self._failures, self._by_user, self._by_sender):
            self._bounded(table)

    def succeeded(self, userid: str, *, sender: str = "") -> None:
        """The right password from ``sender``: its own failures are forgotten
        (not other senders' nor the per-userid count: a guesser elsewhere gains
        nothing by the owner's success)."""
        mine = self._failures.get(userid)
        if mine is not None:
            mine.pop(sender, None)
            if not mine:
                del self._failures[userid]

    def locked_for(self, userid: str, now: float, pending: Pending = (), *, sender: str | None = None, own: bool = False) -> int:
        """Minutes still to wait (0 = may try) before a password of ``userid``
        from ``sender`` is checked; ``own``: ``sender`` is one of the userid's
        confirmed addresses.  ``sender`` None: the longest wait of any sender
        (for work done ahead, which decides nothing)."""
        pairs = dict(self._failures.get(userid, {}))
        user = self._by_user.get(userid, [])
        from_sender = self._by_sender.get(sender, []) if sender else []
        for who, where, when in pending:
            if when is None:
                if who == userid:
                    pairs.pop(where, None)
                continue
            if who == userid:
                pairs[where] = self._after_failure(pairs.get(where, []), when)
                user = self._after_failure(user, when)
            if sender and where == sender:
                from_sender = self._after_failure(from_sender, when)
        chosen = list(pairs.values()) if sender is None else [pairs.get(sender, [])]
        waits = [_lock(times, self.FREE, now, self.SPAN) for times in chosen]
        waits.append(_lock(user, self.USER_FREE, now, self.SPAN))
        if sender and not own:
            waits.append(_lock(from_sender, self.SENDER_FREE, now, self.SPAN))
        return max(waits)

    async def refresh(self, userids: Sequence[str], senders: Sequence[str] = ()) -> None:
        """Learn what other workers counted for these userids and senders (nothing to learn here)."""


class GuardJournal:
    """One mail's password outcomes, told to the guard once the mail's work is
    final (:meth:`apply`, after its commit), so a mail run again (its batch
    undone) is counted once.  Meanwhile :meth:`locked_for` answers from the
    guard's counts plus this mail's own failures, so a mail of many commands is
    held back as it would be by failures counted at once."""

    def __init__(self, guard: GuessGuard) -> None:
        self.guard = guard
        self.events: list[tuple[str, str, float | None]] = []
        """(userid, sender, time of a failure) or (userid, sender, None) for a success, in order"""

    def locked_for(self, userid: str, now: float, *, sender: str | None = None, own: bool = False) -> int:
        return self.guard.locked_for(userid, now, self.events, sender=sender, own=own)

    def failed(self, userid: str, now: float, *, sender: str = "") -> None:
        self.events.append((userid, sender, now))

    def succeeded(self, userid: str, *, sender: str = "") -> None:
        self.events.append((userid, sender, None))

    def apply(self) -> None:
        for who, where, when in self.events:
            if when is None:
                self.guard.succeeded(who, sender=where)
            else:
                self.guard.failed(who, when, sender=where)
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

    async def check(self, sender: str, message_id: str, now: float, *, userid: str = "") -> str:
        return (await self.check_many([(sender, message_id)], now, [userid]))[0]

    async def check_many(self, mails: Sequence[tuple[str, str]], now: float, userids: Sequence[str] | None = None) -> list[str]:
        """One statement for a batch's mails when their senders differ (a batch's
        mails never share a sender in ``serve``), else one at a time."""
        users = list(userids) if userids is not None else [""] * len(mails)
        if len({(sender, user) for (sender, _), user in zip(mails, users, strict=True)}) != len(mails):
            return [(await self.check_many([mail], now, [user]))[0] for mail, user in zip(mails, users, strict=True)]
        wall = _wall(now)
        if wall - self._forgotten > FORGET_EVERY:
            self._forgotten = wall
            try:
                await shared.forget_old(self.db, wall, keep_failures=2 * 3600.0)
            except Exception:
                log.warning("could not clear old throttle counts", exc_info=True)
        return await shared.throttle_check_many(self.db, mails, wall, self.per_minute, users)


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

    def failed(self, userid: str, now: float, *, sender: str = "") -> None:
        super().failed(userid, now, sender=sender)
        self._write(shared.password_failed(self.db, userid, sender, _wall(now)))

    def succeeded(self, userid: str, *, sender: str = "") -> None:
        # only when there is something to clear (as of the last refresh): not a
        # write per mail; failures another worker counts after that refresh stay
        # until they age out (stricter, never looser)
        if sender in self._failures.get(userid, {}):
            super().succeeded(userid, sender=sender)
            self._write(shared.password_succeeded(self.db, userid, sender))

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

    async def refresh(self, userids: Sequence[str], senders: Sequence[str] = ()) -> None:
        """Every worker's failures of these userids and from these senders, in
        place of this process's own."""
        if not userids and not senders:
            return
        await self.settle()  # this worker's own, first
        offset = time.time() - time.monotonic()
        since = time.time() - self.SPAN
        try:
            rows = await shared.password_failures(self.db, userids, since, senders)
        except Exception:
            log.warning("could not read the other workers' password failures", exc_info=True)
            return
        for userid in userids:
            self._failures.pop(userid, None)
            self._by_user.pop(userid, None)
        for sender in senders:
            self._by_sender.pop(sender, None)
            for mine in self._failures.values():
                mine.pop(sender, None)
        wanted_users, wanted_senders = set(userids), set(senders)
        for userid, sender, at in rows:  # oldest first
            when = at - offset
            mine = self._failures.setdefault(userid, {})
            mine[sender] = [*mine.get(sender, []), when][-self.KEEP :]
            if userid in wanted_users:
                self._by_user[userid] = [*self._by_user.get(userid, []), when][-self.KEEP :]
            if sender in wanted_senders:
                self._by_sender[sender] = [*self._by_sender.get(sender, []), when][-self.KEEP :]
        for userid in [u for u, mine in self._failures.items() if not mine]:
            del self._failures[userid]


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
