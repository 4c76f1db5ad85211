"""Inbound over IMAP (aioimaplib): every message in the inbox is a mail to process.

Messages are taken in delivery order: by INTERNALDATE, then UID.  UID order
alone is not enough: Dovecot with Maildir can number a burst of deliveries in
another order than they arrived (it scans the ``new/`` directory), and moves
on one board applied out of order are refused ("not your turn").  Only after a mail's transaction has committed is
it flagged ``\\Seen`` and moved to the ``processed`` folder; a mail whose handler
crashed goes to ``failed``.  A crash between commit and move leaves the message
in the inbox: the next pass sees its Message-ID as processed (a no-op) and moves
it then.  Between passes the loop waits in IDLE (re-issued before RFC 2177's 29
minutes), or polls where the server has no IDLE; a dropped connection is
re-opened with exponential back-off.

On PostgreSQL the inbox is shared through the database's inbound queue
(:mod:`..store.queue`): the worker holding the mailbox's advisory lock is the
reader.  It queues new messages (raw bytes, Message-ID, conflict keys) in
delivery order, at most IN_FLIGHT unfinished at a time, and files each message
once some worker (itself included) has marked its row finished; every worker
claims the rows.  SQLite (one process) hands the mails to the server directly.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections.abc import Awaitable, Iterable
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

import aioimaplib

from ..config import Config
from ..store import Database, InboundQueue
from ..store.queue import DONE, FAILED, READY, NewMail, Row
from .imapconn import ImapError, connect, ensure_folder, ok, renew_in

__all__ = ["ImapError", "ImapMailbox", "connect", "internaldates", "searched_uids", "until_lost"]

log = logging.getLogger("pbmserv.imap")

_FETCH_UID = re.compile(rb"UID (\d+)")
_INTERNALDATE = re.compile(rb'INTERNALDATE "\s*(\d{1,2})-([A-Za-z]{3})-(\d{4}) (\d\d):(\d\d):(\d\d) ([+-])(\d\d)(\d\d)"')
_MONTHS = {m: i for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), 1)}
BATCH = 25
IN_FLIGHT = 100
"""mails fetched and handed to the server but not yet filed, at most"""
FILE_EVERY = 0.1
"""seconds: how often finished mails are filed (and new mail looked for) while busy"""
STANDBY_POLL = 2.0
LINGER_EVERY = 0.05
"""seconds between NOOPs while lingering after mail was handled"""


FAR = datetime.max.replace(tzinfo=UTC)


def _fetched_uids(lines: Iterable[bytes | bytearray]) -> list[int]:
    """The UIDs of the untagged FETCH lines of a response."""
    out = []
    for line in lines:
        if isinstance(line, bytes) and line.split(b" ", 2)[1:2] == [b"FETCH"]:
            m = _FETCH_UID.search(line)
            if m:
                out.append(int(m.group(1)))
    return out


def fetched_messages(lines: Iterable[bytes | bytearray]) -> dict[int, bytes]:
    """UID → message from the lines of a ``UID FETCH … (UID BODY.PEEK[])``:
    ``N FETCH (UID u BODY[] {size}``, then the message (aioimaplib's bytearray),
    then ``)``."""
    out: dict[int, bytes] = {}
    pending: int | None = None
    for line in lines:
        if isinstance(line, bytearray):
            if pending is not None:
                out[pending] = bytes(line)
            pending = None
            continue
        m = _FETCH_UID.search(line)
        if m and b"FETCH" in line:
            pending = int(m.group(1))
    return out


def internaldates(lines: Iterable[bytes | bytearray]) -> dict[int, datetime]:
    """UID → INTERNALDATE from the untagged lines of a ``UID FETCH (UID INTERNALDATE)``
    (the month names are IMAP's English ones, whatever the locale)."""
    out: dict[int, datetime] = {}
    for line in lines:
        uid, date = _FETCH_UID.search(line), _INTERNALDATE.search(line)
        if uid is None or date is None or bytes(line).split(b" ", 2)[1:2] != [b"FETCH"]:
            continue
        day, month, year, hh, mm, ss, sign, zh, zm = date.groups()
        month_no = _MONTHS.get(month.decode().lower())
        if month_no is None:
            continue
        offset = timedelta(hours=int(zh), minutes=int(zm)) * (1 if sign == b"+" else -1)
        local = datetime(int(year), month_no, int(day), int(hh), int(mm), int(ss), tzinfo=UTC)
        out[int(uid.group(1))] = local - offset
    return out


def searched_uids(lines: Iterable[bytes | bytearray]) -> list[int]:
    """The UIDs of a ``UID SEARCH`` response's lines (the last one, the tagged
    completion, left out), sorted, each once.  Only the SEARCH line counts
    (aioimaplib drops its "SEARCH"): untagged news such as "57 EXISTS" or
    "3 EXPUNGE" come along in the same response."""
    uids: list[int] = []
    for line in list(lines)[:-1]:
        words = bytes(line).split()
        if words and words[0].upper() == b"SEARCH":
            words = words[1:]
        if all(w.isdigit() for w in words):
            uids += [int(w) for w in words]
    return sorted(set(uids))


async def until_lost(command: Awaitable[aioimaplib.Response], what: str, lost: asyncio.Event) -> aioimaplib.Response:
    """Run an IMAP command; fail at once (not after the command timeout) if the
    server drops the connection meanwhile (``lost`` is set): aioimaplib leaves
    the command waiting, which is then cancelled.  A response that is not OK
    raises :class:`ImapError` naming ``what``."""
    task = asyncio.ensure_future(command)
    waiting = asyncio.ensure_future(lost.wait())
    try:
        await asyncio.wait({task, waiting}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiting.cancel()
    if not task.done():
        task.cancel()
        raise ImapError(f"the IMAP server closed the connection during {what}")
    return ok(task.result(), what)


class Outcome(Protocol):
    """What the sink says of a mail: ``deferred`` leaves it in the inbox,
    ``failed`` files it in the failed folder, anything else in processed."""

    @property
    def status(self) -> str: ...


class MailSink(Protocol):
    """Where the IMAP loop hands the mails it fetched (the running server)."""

    stopping: asyncio.Event
    db: Database

    def set_inbound_connected(self, up: bool) -> None: ...

    async def prepare(self, raws: list[bytes]) -> Any: ...

    def submit(self, raws: list[bytes], prepared: Any) -> list[asyncio.Task[Any]]: ...

    async def describe(self, raw: bytes) -> tuple[str, frozenset[str] | None]:
        """(Message-ID, conflict keys) of a raw mail, for the inbound queue."""
        ...

    async def claims_finished(self) -> None:
        """Until this process's queue claims have ended (after shutdown began)."""
        ...


class ImapMailbox:
    """Reads the inbox and hands each mail to ``server`` (a :class:`MailSink`)."""

    def __init__(self, config: Config, server: MailSink, queue: InboundQueue | None = None) -> None:
        self.config = config
        self.server = server
        self.queue = queue
        """the shared inbound queue (PostgreSQL): this worker reads into it when it holds the lock"""
        self.uidvalidity: int | None = None
        self.lost = asyncio.Event()
        self.deferred = 0
        self.retry_delay = 1.0
        self.dates: dict[int, datetime] = {}
        """INTERNALDATE by UID of the messages in this session's inbox, as far as
        known (:meth:`_inbox`); FAR for a message whose date the server did not give"""
        self.next_uid = 1
        """the messages in the inbox below this UID are all in ``dates``"""

    async def run(self) -> None:
        self.delay = 1.0
        while not self.server.stopping.is_set():
            client: aioimaplib.IMAP4 | None = None
            self.lost = asyncio.Event()
            try:
                client = await connect(self.config, self.lost)
                if await self._session(client):
                    continue  # the session's OAuth2 token is due for renewal: log in again at once
            except (TimeoutError, ImapError, OSError, aioimaplib.Abort, aioimaplib.CommandTimeout) as exc:
                log.warning("IMAP connection problem (%s: %s); reconnecting in %.0f s", type(exc).__name__, exc, self.delay)
            except Exception:
                log.exception("IMAP loop error; reconnecting in %.0f s", self.delay)
            finally:
                self.server.set_inbound_connected(False)
                if client is not None and not self.lost.is_set():  # (a closed connection would wait 5 s)
                    with contextlib.suppress(Exception):
                        await asyncio.wait_for(client.logout(), 5)
            if self.server.stopping.is_set():
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.server.stopping.wait(), timeout=self.delay)
            self.delay = min(self.delay * 2, 300.0)

    async def _session(self, client: aioimaplib.IMAP4) -> bool:
        """Work the inbox until shutdown (False) or until this session's OAuth2
        access token is due for renewal (True: log in again with a new one)."""
        cfg = self.config.imap
        self.dates, self.next_uid = {}, 1
        for folder in (cfg.processed_folder, cfg.failed_folder):
            await ensure_folder(client, folder)
        resp = await self._do(client.select(cfg.inbox), f"select {cfg.inbox}")
        for line in resp.lines:
            m = re.search(rb"UIDVALIDITY (\d+)", line)
            if m:
                value = int(m.group(1))
                if self.uidvalidity is not None and value != self.uidvalidity:
                    log.warning(
                        "UIDVALIDITY of %s changed (%s -> %s): rescanning the whole inbox", cfg.inbox, self.uidvalidity, value
                    )
                self.uidvalidity = value
        self.server.set_inbound_connected(True)
        log.info("IMAP: %s selected (UIDVALIDITY %s)", cfg.inbox, self.uidvalidity)
        idle = client.has_capability("IDLE") and not cfg.fast_poll
        if cfg.fast_poll:
            log.info("IMAP: checking for new mail every %.2f s (fast_poll)", cfg.fast_poll)
        elif not idle:
            log.info("IMAP server has no IDLE: polling every %.0f s", self.config.server.poll_interval)
        while not self.server.stopping.is_set():
            drained = await self._drain(client)
            self.delay = 1.0  # the session works: after a drop, reconnect soon
            if renew_in(client) <= 0:
                log.info("IMAP: the access token of this session is due for renewal; logging in again")
                return True
            if not drained:
                # another worker is draining; stand by and look again soon (it may die)
                try:
                    await asyncio.wait_for(self.server.stopping.wait(), timeout=STANDBY_POLL)
                except TimeoutError:
                    await self._do(client.noop(), "NOOP")
                continue
            if self.server.stopping.is_set():
                return False
            if cfg.fast_poll:
                await self._poll(client, cfg.fast_poll, self.config.server.poll_interval)
            elif idle:
                if cfg.linger and await self._poll(client, LINGER_EVERY, cfg.linger):
                    continue  # more mail came while lingering
                await self._idle(client)
            else:
                try:
                    await asyncio.wait_for(self.server.stopping.wait(), timeout=self.config.server.poll_interval)
                except TimeoutError:
                    await self._do(client.noop(), "NOOP")
        return False

    async def _poll(self, client: aioimaplib.IMAP4, every: float, seconds: float) -> bool:
        """NOOP every ``every`` seconds until the server reports mail (True) or
        ``seconds`` passed (False: fast_poll's safety net, or the end of a linger)."""
        deadline = time.monotonic() + seconds
        while not self.server.stopping.is_set() and time.monotonic() < deadline:
            try:
                await asyncio.wait_for(self.server.stopping.wait(), timeout=every)
                return False
            except TimeoutError:
                pass
            resp = await self._do(client.noop(), "NOOP")
            if any(bytes(line).endswith(b"EXISTS") and not bytes(line).startswith(b"0 ") for line in resp.lines[:-1]):
                return True
        return False

    async def _do(self, command: Awaitable[aioimaplib.Response], what: str) -> aioimaplib.Response:
        """Run an IMAP command on this session (:func:`until_lost`)."""
        return await until_lost(command, what, self.lost)

    async def _idle(self, client: aioimaplib.IMAP4) -> None:
        timeout = min(self.config.imap.idle_timeout, 28 * 60, max(1.0, renew_in(client)))
        idle_task = await client.idle_start(timeout=timeout)
        push = asyncio.create_task(client.wait_server_push(timeout=timeout))
        stop = asyncio.create_task(self.server.stopping.wait())
        lost = asyncio.create_task(self.lost.wait())
        try:
            await asyncio.wait({push, stop, lost}, return_when=asyncio.FIRST_COMPLETED, timeout=timeout + 5)
        finally:
            for task in (push, stop, lost):
                if not task.done():
                    task.cancel()
                elif not task.cancelled():
                    task.exception()  # a push wait that timed out: seen here, not "never retrieved" in the log
            if self.lost.is_set():
                idle_task.cancel()  # never to end: not "destroyed but pending" in the log
                raise ImapError("the IMAP server closed the connection")
            client.idle_done()
            try:
                # (a server that ends the session in IDLE, e.g. Microsoft 365's "* BYE Session
                # invalidated - AccessTokenExpired", never answers DONE: don't wait 30 s for it)
                await asyncio.wait_for(self._do(idle_task, "IDLE"), 30)
            except TimeoutError as exc:
                raise ImapError("server did not end IDLE") from exc

    async def _uids(self, client: aioimaplib.IMAP4) -> list[int]:
        resp = await self._do(client.uid_search("ALL"), "UID SEARCH")
        return searched_uids(resp.lines)

    async def _drain(self, client: aioimaplib.IMAP4) -> bool:
        """Process the inbox in UID order, fetching and filing up to BATCH at a time.
        A batch's messages are filed only after each of them committed.  With
        several workers on PostgreSQL one drains at a time (an advisory lock on the
        mailbox): mails are applied in delivery order, the others stand by."""
        async with self.server.db.mailbox_lock(
            f"{self.config.imap.host}/{self.config.imap.user}/{self.config.imap.inbox}"
        ) as mine:
            if mine and self.queue is not None:
                await self._read_locked(client, self.queue)
            elif mine:
                await self._drain_locked(client)
            return mine

    async def _read_locked(self, client: aioimaplib.IMAP4, queue: InboundQueue) -> None:
        """The reader of the shared queue: until none of this mailbox's rows is left,
        queue what is new (in delivery order, BATCH per fetch, at most IN_FLIGHT
        unfinished rows), and file what the workers finished, every FILE_EVERY
        seconds.  At shutdown it queues nothing more, waits for this process's
        claims to end, files what is finished and leaves the rest to the workers
        and the next reader."""
        assert self.uidvalidity is not None
        uidvalidity = self.uidvalidity
        full = True  # another worker may have read (and filed) since this one last did
        filed: list[int] = []
        """rows whose messages were filed: deleted with the next look at the rows"""
        try:
            while True:
                rows = await queue.rows(forget=filed)
                filed = []
                stopping = self.server.stopping.is_set()
                if stopping:
                    await self.server.claims_finished()
                    rows = await queue.rows()
                left, filed = await self._file_finished(client, rows, uidvalidity)
                added = 0
                room = IN_FLIGHT - left
                if not stopping and room > 0 and renew_in(client) > 0:
                    queued = {r.uid for r in rows if r.uidvalidity == uidvalidity}
                    new = [uid for uid in await self._inbox(client, full=full) if uid not in queued][:room]
                    full = False
                    for start in range(0, len(new), BATCH):
                        chunk = new[start : start + BATCH]
                        fetched = await self._fetch(client, chunk)
                        mails = [
                            NewMail(uid, *(await self.server.describe(fetched[uid])), fetched[uid])
                            for uid in chunk
                            if uid in fetched
                        ]
                        await queue.add(uidvalidity, mails)
                        added += len(mails)
                if stopping or not (added or left):
                    return
                if not added:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self.server.stopping.wait(), timeout=FILE_EVERY)
        finally:
            if filed:
                # (if this fails, the rows stay finished: the next reader files them
                # again, which moves nothing, and deletes them)
                with contextlib.suppress(Exception):
                    await queue.forget(filed)

    async def _file_finished(self, client: aioimaplib.IMAP4, rows: list[Row], uidvalidity: int) -> tuple[int, list[int]]:
        """File the finished rows' messages; how many of this mailbox's rows are
        still unfinished, and the rows to delete now (rows of an older UIDVALIDITY
        are deleted unfiled: their UIDs mean nothing now)."""
        folders = {DONE: self.config.imap.processed_folder, FAILED: self.config.imap.failed_folder}
        stale = [r.id for r in rows if r.state != READY and r.uidvalidity != uidvalidity]
        for state, folder in folders.items():
            these = [r for r in rows if r.state == state and r.uidvalidity == uidvalidity]
            if these:
                await self.file(client, [r.uid for r in these], folder)
                stale += [r.id for r in these]
        return sum(1 for r in rows if r.state == READY), stale

    async def _drain_locked(self, client: aioimaplib.IMAP4) -> None:
        """Until the inbox is empty: fetch what is new (BATCH at a time, at most
        IN_FLIGHT mails taken and not yet filed), hand it to the server, which
        runs it in order where order matters (:mod:`..ordering`), and file each
        mail once its transaction has committed.  Mail that arrives meanwhile is
        seen by the next UID SEARCH, every FILE_EVERY seconds at the latest."""
        cfg = self.config.imap
        taken: dict[int, asyncio.Task[Any]] = {}
        full = True
        try:
            while True:
                new: list[int] = []
                if not self.server.stopping.is_set() and len(taken) < IN_FLIGHT and renew_in(client) > 0:
                    new = [uid for uid in await self._inbox(client, full=full) if uid not in taken][:BATCH]
                    full = False
                if new:
                    fetched = await self._fetch(client, new)
                    new = [uid for uid in new if uid in fetched]
                    raws = [fetched[uid] for uid in new]
                    prepared = await self.server.prepare(raws)
                    taken.update(zip(new, self.server.submit(raws, prepared), strict=True))
                if not taken:
                    return
                if not new or len(taken) >= IN_FLIGHT:
                    await asyncio.wait(set(taken.values()), timeout=FILE_EVERY)
                self.deferred = 0
                await self._file_done(client, taken, cfg.processed_folder, cfg.failed_folder)
                if self.deferred and not self.server.stopping.is_set():
                    # mails put back (the database is unreachable): look again later
                    log.warning("%d mails left in the inbox; trying again in %.0f s", self.deferred, self.retry_delay)
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self.server.stopping.wait(), timeout=self.retry_delay)
                    self.retry_delay = min(self.retry_delay * 2, 60.0)
                else:
                    self.retry_delay = 1.0
        finally:
            # leaving (shutdown, or the connection failed): let what was begun finish
            # and file it if the connection still works; the rest stays in the inbox
            if taken:
                await asyncio.wait(set(taken.values()))
                with contextlib.suppress(Exception):
                    await self._file_done(client, taken, cfg.processed_folder, cfg.failed_folder)

    async def _file_done(
        self, client: aioimaplib.IMAP4, taken: dict[int, asyncio.Task[Any]], processed: str, failed: str
    ) -> None:
        done: dict[str, list[int]] = {processed: [], failed: []}
        for uid, task in list(taken.items()):
            if not task.done():
                continue
            # a task not run to the end is left in the inbox (a rerun is a no-op if it had committed)
            broken = task.cancelled() or task.exception() is not None
            status = "deferred" if broken else task.result().status
            if status == "deferred":
                del taken[uid]  # stays in the inbox, for the next pass or the next start
                self.deferred += 1
            else:
                done[failed if status == "failed" else processed].append(uid)
        for folder, uids in done.items():
            if uids:
                await self.file(client, uids, folder)
                for uid in uids:
                    del taken[uid]

    async def _inbox(self, client: aioimaplib.IMAP4, *, full: bool) -> list[int]:
        """The messages in the inbox, sorted by INTERNALDATE (when the server received
        the mail), then UID.  ``full``: list them all (UID SEARCH), as at the start of
        a pass; else only ask for those after the last seen UID (new messages get
        higher UIDs, RFC 3501 2.3.1.1) with their dates, in one command.  Dates are
        asked for once per message and session.  INTERNALDATE has whole seconds:
        within one second the UID decides."""
        if full:
            uids = await self._uids(client)
            present = set(uids)
            self.dates = {uid: date for uid, date in self.dates.items() if uid in present}
            unknown = [uid for uid in uids if uid not in self.dates]
            for start in range(0, len(unknown), 500):
                chunk = unknown[start : start + 500]
                resp = await self._do(
                    client.uid("fetch", ",".join(map(str, chunk)), "(UID INTERNALDATE)"), "UID FETCH INTERNALDATE"
                )
                self._learn_dates(resp.lines, chunk)
            self.next_uid = max(self.next_uid, max(uids, default=0) + 1)
        else:
            resp = await self._do(client.uid("fetch", f"{self.next_uid}:*", "(UID INTERNALDATE)"), "UID FETCH INTERNALDATE")
            # (n:* names the last message even when its UID is below n)
            uids = [uid for uid in _fetched_uids(resp.lines) if uid >= self.next_uid]
            self._learn_dates(resp.lines, uids)
            self.next_uid = max(self.next_uid, max(uids, default=0) + 1)
        return sorted(self.dates, key=lambda uid: (self.dates[uid], uid))

    def _learn_dates(self, lines: Iterable[bytes | bytearray], uids: Iterable[int]) -> None:
        got = internaldates(lines)
        for uid in uids:
            self.dates[uid] = got.get(uid, FAR)  # a date the server did not give: after the dated ones

    async def _fetch(self, client: aioimaplib.IMAP4, uids: list[int]) -> dict[int, bytes]:
        resp = await self._do(client.uid("fetch", ",".join(map(str, uids)), "(UID BODY.PEEK[])"), "UID FETCH")
        out = fetched_messages(resp.lines)
        missing = set(uids) - set(out)
        if missing:
            log.warning("UIDs %s vanished before they could be fetched", sorted(missing))
            for uid in missing:
                self.dates.pop(uid, None)
        return out

    async def file(self, client: aioimaplib.IMAP4, uids: list[int], folder: str) -> None:
        """Flag these messages ``\\Seen`` and move them to ``folder``: MOVE where
        the server has it, else COPY, ``\\Deleted`` and UID EXPUNGE of just these
        (UIDPLUS), else a plain EXPUNGE."""
        uid_set = ",".join(map(str, uids))
        for uid in uids:
            self.dates.pop(uid, None)
        await self._do(client.uid("store", uid_set, "+FLAGS.SILENT", r"(\Seen)"), f"flag {uid_set} seen")
        if client.has_capability("MOVE"):
            await self._do(client.uid("move", uid_set, folder), f"move {uid_set} to {folder}")
            return
        # no MOVE (RFC 6851): copy, mark deleted, and expunge just these (UIDPLUS);
        # a plain EXPUNGE would also remove what other clients marked \Deleted
        await self._do(client.uid("copy", uid_set, folder), f"copy {uid_set} to {folder}")
        await self._do(client.uid("store", uid_set, "+FLAGS.SILENT", r"(\Deleted)"), f"delete {uid_set}")
        if client.has_capability("UIDPLUS"):
            await self._do(client.uid("expunge", uid_set), f"UID EXPUNGE {uid_set}")
        else:
            await self._do(client.expunge(), "EXPUNGE")
