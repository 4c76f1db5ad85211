"""The inbound queue: how several ``serve`` processes on one PostgreSQL database
share one mailbox (issue 18 item 5).

The worker that holds the mailbox's reader role (:meth:`Database.mailbox_lock`)
records each new message here, in delivery order (the serial ``id``), with its
raw bytes and its conflict keys (sender, boards, users; ``None``: it may touch
anything).  Every worker claims ready rows with ``SELECT … FOR UPDATE SKIP
LOCKED`` in a transaction it keeps open while it handles them, and marks them
``done`` or ``failed`` in that same transaction.  A row may be claimed only when
no earlier unfinished row shares a key with it (a ``None`` row only when it is
the first unfinished row, and nothing after it before it is finished): the rule
of :mod:`pbmserv_terrace.app.ordering`, across processes.  An unfinished row is a
``ready`` one, claimed or not: a claim changes nothing visible until its
transaction commits.

Exactly once: a mail's effects commit in its own transaction (the processed
Message-ID refuses a second one).  A worker killed mid-mail loses its
connection, so its claim transaction is rolled back and the row is ``ready`` and
unlocked again; the next claimer runs it once more, which is a no-op if the
mail had committed.  The reader files the message on the IMAP server (moves it
to ``processed``/``failed``) once its row is finished, and only then deletes the
row.

Round trips: the reader queues a fetch in one statement (:data:`_ADD`) and looks
at the rows in one (:data:`_ROWS`, deleting the rows it filed since); a claim is
``BEGIN``, one statement that picks and locks its rows (:data:`_CLAIM`, the rule
of :func:`claimable` in SQL), one that marks them finished and wakes the workers
if a later row waited for them (:data:`_FINISH`), and ``COMMIT``.

SQLite has one process and never uses this table.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, Index, Integer, LargeBinary, String, UniqueConstraint, text
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.orm import Mapped, mapped_column

from .autocommit import autocommit
from .db import Database, utcnow
from .models import Base

log = logging.getLogger("pbmserv.queue")

CHANNEL = "pbmserv_inbound"
"""PostgreSQL NOTIFY channel: rows were queued, or finished while later ones waited"""
READY, DONE, FAILED = "ready", "done", "failed"


class QueuedMail(Base):
    """A message of the mailbox, seen by the reader and waiting to be (or already)
    handled by some worker; deleted once filed on the IMAP server."""

    __tablename__ = "inbound_queue"
    __table_args__ = (
        UniqueConstraint("mailbox", "uidvalidity", "uid", name="uq_inbound_queue_uid"),
        Index("ix_inbound_queue_state", "state", "id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    """delivery order (INTERNALDATE, then UID, as the reader saw it)"""
    mailbox: Mapped[str] = mapped_column(String(255))
    """host/user/folder"""
    uidvalidity: Mapped[int] = mapped_column(BigInteger)
    uid: Mapped[int] = mapped_column(BigInteger)
    message_id: Mapped[str] = mapped_column(String(255), default="")
    keys: Mapped[list[str] | None] = mapped_column(JSON(none_as_null=True), default=None)
    """what the mail may touch (``Service.conflict_keys``); None: anything"""
    raw: Mapped[bytes] = mapped_column(LargeBinary)
    state: Mapped[str] = mapped_column(String(16), default=READY)
    """ready (unfinished, claimed or not) | done | failed (its handler crashed)"""
    queued_at: Mapped[datetime]


@dataclass
class NewMail:
    uid: int
    message_id: str
    keys: frozenset[str] | None
    raw: bytes


@dataclass
class Row:
    id: int
    uidvalidity: int
    uid: int
    state: str


@dataclass
class Claim:
    """Rows claimed in one transaction: ``rows`` is (id, raw) in delivery order;
    :meth:`finish` each one (rows left unfinished stay ``ready``)."""

    rows: list[tuple[int, bytes]]
    outcome: dict[int, str] = field(default_factory=dict)

    def finish(self, row_id: int, state: str) -> None:
        self.outcome[row_id] = state


def claimable(rows: Sequence[tuple[int, list[str] | None]]) -> list[int]:
    """Of the unfinished rows (id, keys) in delivery order, those no earlier one
    holds back: none shares a key with them, and no ``None`` row comes first (a
    ``None`` row itself only when it is the first).  The rule a claim applies in
    SQL (``_CLAIM``); tests hold the two to each other."""
    out: list[int] = []
    taken: set[str] = set()
    for n, (row_id, keys) in enumerate(rows):
        if keys is None:
            if n == 0:
                out.append(row_id)
            break  # nothing after an unfinished "anything" mail
        if taken.isdisjoint(keys):
            out.append(row_id)
        taken.update(keys)
    return out


def mailbox_key(name: str) -> int:
    """A PostgreSQL advisory lock number for a mailbox name."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


_ADD = text(
    f"""WITH lock AS MATERIALIZED (SELECT pg_advisory_xact_lock(:lock) AS held),
added AS (
    INSERT INTO inbound_queue (mailbox, uidvalidity, uid, message_id, keys, raw, state, queued_at)
    SELECT :mailbox, :uidvalidity, m.uid, m.message_id, CAST(m.keys AS json), m.raw, '{READY}', :now
    FROM lock, unnest(CAST(:uids AS bigint[]), CAST(:message_ids AS varchar[]), CAST(:keys AS text[]),
                      CAST(:raws AS bytea[])) WITH ORDINALITY AS m(uid, message_id, keys, raw, n)
    WHERE lock.held IS NOT NULL
    ORDER BY m.n
    ON CONFLICT (mailbox, uidvalidity, uid) DO NOTHING
    RETURNING id
)
SELECT (SELECT count(*) FROM added), pg_notify('{CHANNEL}', '')
"""
)
"""the reader's one statement: queue mails in order after every row committed
before (the transaction lock on the mailbox), and wake the workers"""
_ROWS = text(
    f"""WITH filed AS (DELETE FROM inbound_queue WHERE id = ANY(CAST(:forget AS integer[])) AND state <> '{READY}')
SELECT id, uidvalidity, uid, state FROM inbound_queue
WHERE mailbox = :mailbox AND id <> ALL(CAST(:forget AS integer[])) ORDER BY id"""
)
"""the reader's look at the rows, deleting those it filed since the last look"""
_FORGET = text(f"DELETE FROM inbound_queue WHERE id = ANY(CAST(:ids AS integer[])) AND state <> '{READY}'")
_CLAIM = text(
    f"""WITH ready AS (SELECT id, keys FROM inbound_queue WHERE state = '{READY}'),
lists AS (SELECT id, keys FROM ready WHERE json_typeof(keys) = 'array'),
keyed AS (SELECT lists.id, k.key FROM lists, json_array_elements_text(lists.keys) AS k(key)),
held AS (
    SELECT keyed.id FROM keyed JOIN (SELECT key, min(id) AS first FROM keyed GROUP BY key) f USING (key)
    WHERE keyed.id > f.first
),
edge AS (SELECT min(id) AS first, min(id) FILTER (WHERE keys IS NULL OR json_typeof(keys) <> 'array') AS anything FROM ready)
SELECT q.id, q.raw FROM inbound_queue q, edge
WHERE q.state = '{READY}' AND q.id NOT IN (SELECT id FROM held)
  AND (edge.anything IS NULL OR q.id < edge.anything OR q.id = edge.first)
ORDER BY q.id LIMIT :limit FOR UPDATE OF q SKIP LOCKED"""
)
"""the ready rows no earlier ready row holds back (:func:`claimable`, in SQL: a
row none of whose keys an earlier row has, before any row that may touch
anything, or that row when it is the first), locked; a row locked by another
claimer is skipped, and one finished meanwhile too (FOR UPDATE re-reads its state)"""
_FINISH = text(
    f"""WITH finished AS (
    UPDATE inbound_queue SET state = CASE WHEN id = ANY(CAST(:failed AS integer[])) THEN '{FAILED}' ELSE '{DONE}' END
    WHERE id = ANY(CAST(:ids AS integer[]))
    RETURNING id, keys
), waiting AS (
    SELECT 1 FROM inbound_queue q, finished f
    WHERE q.state = '{READY}' AND q.id > f.id AND q.id <> ALL(CAST(:ids AS integer[]))
      AND (q.keys IS NULL OR f.keys IS NULL OR CAST(q.keys AS jsonb) ?| ARRAY(SELECT json_array_elements_text(f.keys)))
    LIMIT 1
)
SELECT (SELECT count(*) FROM finished), CASE WHEN EXISTS (SELECT 1 FROM waiting) THEN pg_notify('{CHANNEL}', '') END
"""
)
"""a claim's last statement before its commit: mark its rows finished and, when
a later ready row waits for one of them (shares a key, or one of the two may
touch anything), wake the workers at the commit: the rows are free then"""


class InboundQueue:
    """The queue's statements (PostgreSQL)."""

    def __init__(self, db: Database, mailbox: str = "") -> None:
        self.db = db
        self.mailbox = mailbox

    # ------------------------------------------------------------- the reader
    async def add(self, uidvalidity: int, mails: Sequence[NewMail]) -> None:
        """Queue these mails, in this order, after every row queued before (a
        transaction lock on the mailbox keeps ids in commit order); a UID already
        queued is left as it is.  Wakes the workers.  One statement."""
        if not mails:
            return
        params = {
            "lock": mailbox_key("queue:" + self.mailbox), "mailbox": self.mailbox, "uidvalidity": uidvalidity,
            "now": utcnow(), "uids": [m.uid for m in mails], "message_ids": [m.message_id[:255] for m in mails],
            "keys": [None if m.keys is None else json.dumps(sorted(m.keys)) for m in mails], "raws": [m.raw for m in mails],
        }  # fmt: skip
        async with autocommit(self.db).connect() as conn:
            await conn.execute(_ADD, params)

    async def rows(self, forget: Sequence[int] = ()) -> list[Row]:
        """This mailbox's rows (without their mails), in queue order; first the
        finished rows ``forget`` are deleted (filed), in the same statement."""
        async with autocommit(self.db).connect() as conn:
            rows = await conn.execute(_ROWS, {"mailbox": self.mailbox, "forget": list(forget)})
            return [Row(int(r[0]), int(r[1]), int(r[2]), str(r[3])) for r in rows]

    async def forget(self, ids: Sequence[int]) -> None:
        """Delete filed rows."""
        if ids:
            async with autocommit(self.db).connect() as conn:
                await conn.execute(_FORGET, {"ids": list(ids)})

    # ------------------------------------------------------------ the workers
    @contextlib.asynccontextmanager
    async def claim(self, limit: int) -> AsyncIterator[Claim]:
        """Claim up to ``limit`` ready rows that nothing earlier holds back, and keep
        them locked until the block ends; then mark the finished ones and commit.
        An exception (or a lost connection, or a killed process) leaves every
        claimed row ready for the next claimer."""
        async with self.db.engine.connect() as conn:
            await conn.begin()
            # every worker reads the same small table (the reader keeps at most its
            # IN_FLIGHT unfinished rows in it)
            claim = Claim([(int(r[0]), bytes(r[1])) for r in await conn.execute(_CLAIM, {"limit": limit})])
            try:
                yield claim
            except BaseException:
                with contextlib.suppress(Exception):
                    await conn.rollback()
                raise
            await self._close(conn, claim)

    @staticmethod
    async def _close(conn: AsyncConnection, claim: Claim) -> None:
        ids = [row_id for row_id, state in claim.outcome.items() if state in (DONE, FAILED)]
        if ids:
            failed = [row_id for row_id in ids if claim.outcome[row_id] == FAILED]
            await conn.execute(_FINISH, {"ids": ids, "failed": failed})
        await conn.commit()


class QueueListener:
    """LISTEN for the queue's NOTIFY on a connection of its own; calls ``wake``
    on each, and once after (re)connecting.  Reconnects with back-off."""

    def __init__(self, db: Database, wake: Callable[[], None]) -> None:
        self.db = db
        self.wake = wake
        self.connected = asyncio.Event()

    async def run(self, stop: asyncio.Event) -> None:
        delay = 1.0
        while not stop.is_set():
            try:
                async with self.db.engine.connect() as conn:
                    raw: Any = (await conn.get_raw_connection()).driver_connection
                    lost = asyncio.Event()

                    def notified(*_: object) -> None:
                        self.wake()

                    await raw.add_listener(CHANNEL, notified)
                    raw.add_termination_listener(lambda *_, lost=lost: lost.set())
                    self.connected.set()
                    self.wake()  # whatever was queued while not listening
                    delay = 1.0
                    stopped = asyncio.ensure_future(stop.wait())
                    gone = asyncio.ensure_future(lost.wait())
                    try:
                        await asyncio.wait({stopped, gone}, return_when=asyncio.FIRST_COMPLETED)
                    finally:
                        stopped.cancel()
                        gone.cancel()
                    if not lost.is_set():
                        with contextlib.suppress(Exception):
                            await raw.remove_listener(CHANNEL, notified)
                    if stop.is_set():
                        return
            except Exception as exc:
                log.warning("queue listener: %s: %s; listening again in %.0f s", type(exc).__name__, exc, delay)
            finally:
                self.connected.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=delay)
            delay = min(delay * 2, 30.0)
