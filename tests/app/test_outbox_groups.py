"""The outbox's outcomes are group-committed (issue 18): replies that end at about
the same time on several connections are recorded in one transaction, yet no
sender starts its next reply before its previous reply's outcome is committed.
On PostgreSQL a claim leases its rows: other workers never send them, a lease
is renewed while the claim is still being sent, and each recipient's replies go
out in order across workers.  SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import contextlib
import random
from email.message import Message
from typing import Any

import pytest
from sqlalchemy import event, select, text

from pbmserv_terrace.app.outbox import OutboxSenders
from pbmserv_terrace.mail.message import Outgoing
from pbmserv_terrace.store import Database, OutboxMessage, UnitOfWork

from .test_outbox_sending import queue


def message_id(message: Message | Outgoing) -> str:
    return str((message.message if isinstance(message, Outgoing) else message)["Message-ID"])


class OutcomeWrites:
    """Counts the outcome statements the database is sent, with the rows in each."""

    def __init__(self, db: Database) -> None:
        self.rows: list[int] = []
        event.listen(db.engine.sync_engine, "before_cursor_execute", self.seen)

    def seen(self, conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool) -> None:
        if "UPDATE OUTBOX SET STATE" in " ".join(statement.upper().split()):
            # SQLite: one UPDATE, executemany; PostgreSQL: one statement over arrays (the ids first)
            self.rows.append(len(parameters) if executemany else len(parameters[0]))


class Together:
    """``size`` connections whose replies are accepted all at once: each waits
    until every connection has one in flight (or a moment passed)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.sent: list[str] = []
        self._waiting: list[asyncio.Future[None]] = []

    async def deliver(self, message: Message | Outgoing, recipient: str) -> None:
        future = asyncio.get_running_loop().create_future()
        self._waiting.append(future)
        if len(self._waiting) == self.size:
            for f in self._waiting:
                f.set_result(None)
            self._waiting = []
        else:
            await asyncio.wait([future], timeout=0.5)
            if future in self._waiting:
                self._waiting.remove(future)
        self.sent.append(message_id(message))

    async def close(self) -> None:
        return None


def test_outcomes_ending_together_are_committed_in_one_transaction(db_url: str) -> None:
    async def run() -> tuple[list[int], list[str], dict[str, str], int]:
        db, cfg = await queue(db_url, 16, recipients=16)
        writes = OutcomeWrites(db)
        delivery = Together(4)
        senders = OutboxSenders(db, delivery, cfg, batch=4)
        await senders.drain()
        async with UnitOfWork(db) as uow:
            states = {r.message_id: r.state for r in await uow.outbox.by_state("sent")}
        await db.close()
        return writes.rows, delivery.sent, states, senders.groups

    rows, sent, states, groups = asyncio.run(run())
    assert sorted(sent) == [f"<o{i:02d}@srv.test>" for i in range(16)]
    assert len(states) == 16
    assert sum(rows) == 16 and groups == len(rows)
    # four connections finish together: their four outcomes go in one statement,
    # one transaction (the first group may be the first reply alone)
    assert max(rows) == 4 and len(rows) <= 6, rows


class Checking:
    """One connection.  Each reply first checks, from a connection of its own, that
    every reply accepted before it is already recorded as sent; the first one
    also holds the outcome's write back for a while (the database's writer lock
    on SQLite, the row's lock on PostgreSQL)."""

    size = 1

    def __init__(self, db: Database) -> None:
        self.db = db
        self.accepted: list[str] = []
        self.unrecorded: list[tuple[str, list[str]]] = []
        self.holder: asyncio.Task[None] | None = None

    async def deliver(self, message: Message | Outgoing, recipient: str) -> None:
        mid = message_id(message)
        async with self.db.reading() as reader:
            stmt = select(OutboxMessage.message_id).where(OutboxMessage.message_id.in_(self.accepted or ["-"]),
                                                          OutboxMessage.state != "sent")  # fmt: skip
            missing = list((await reader.execute(stmt)).scalars())
        if missing:
            self.unrecorded.append((mid, missing))
        if self.holder is None:
            started = asyncio.Event()
            self.holder = asyncio.create_task(self.hold(mid, started))
            await started.wait()
        self.accepted.append(mid)

    async def hold(self, mid: str, started: asyncio.Event) -> None:
        async with self.db.session() as session:
            await session.begin()
            if not self.db.is_sqlite:
                await session.execute(text("SELECT id FROM outbox WHERE message_id = :m FOR UPDATE"), {"m": mid})
            started.set()
            await asyncio.sleep(0.4)
            await session.commit()

    async def close(self) -> None:
        return None


def test_a_sender_starts_its_next_reply_only_after_its_last_outcome_is_committed(db_url: str) -> None:
    async def run() -> Checking:
        db, cfg = await queue(db_url, 5, recipients=5)
        delivery = Checking(db)
        await OutboxSenders(db, delivery, cfg, batch=8).drain()
        assert delivery.holder is not None
        await delivery.holder
        await db.close()
        return delivery

    delivery = asyncio.run(run())
    assert delivery.accepted == [f"<o{i:02d}@srv.test>" for i in range(5)]
    assert delivery.unrecorded == []


# ------------------------------------------------------------ PostgreSQL leases
class Slow:
    """Accepts each reply after up to ``seconds`` (exactly, with ``fixed``); notes
    what every worker sent, in order."""

    def __init__(self, log: list[tuple[str, str, str]], worker: str, seconds: float, size: int, fixed: bool = False) -> None:
        self.log, self.worker, self.seconds, self.size, self.fixed = log, worker, seconds, size, fixed

    async def deliver(self, message: Message | Outgoing, recipient: str) -> None:
        mid = message_id(message)
        self.log.append(("start", mid, self.worker))
        await asyncio.sleep(self.seconds if self.fixed else self.seconds * random.random())
        self.log.append(("end", mid, self.worker))

    async def close(self) -> None:
        return None


@pytest.mark.postgres
def test_workers_never_send_the_same_reply_and_keep_each_recipients_order(pg_url: str) -> None:
    random.seed(18)

    async def run() -> list[tuple[str, str, str]]:
        db, cfg = await queue(pg_url, 60, recipients=7)
        log: list[tuple[str, str, str]] = []
        workers = []
        for w in range(3):
            wdb = Database(pg_url)
            workers.append((wdb, OutboxSenders(wdb, Slow(log, f"w{w}", 0.02, size=3), cfg, batch=4)))
            async with wdb.reading() as s:  # connected before the race: on a busy machine one worker's
                await s.execute(text("SELECT 1"))  # first connection outlasted all 60 replies of another
        for _ in range(20):  # as serve's senders do: again while replies are left (held back by another's lease)
            await asyncio.gather(*(senders.drain() for _, senders in workers))
            async with UnitOfWork(db) as uow:
                if await uow.outbox.pending_count() == 0:
                    break
        for wdb, _ in workers:
            await wdb.close()
        await db.close()
        return log

    log = asyncio.run(run())
    starts = [mid for kind, mid, _ in log if kind == "start"]
    assert sorted(starts) == [f"<o{i:02d}@srv.test>" for i in range(60)]  # each once, none left
    assert len({w for _, _, w in log}) > 1  # the workers shared the work
    for p in range(7):
        mine = [f"<o{i:02d}@srv.test>" for i in range(60) if i % 7 == p]
        events = [(kind, mid) for kind, mid, _ in log if mid in mine]
        # in order, one at a time: each reply starts after the one before it ended
        assert events == [(kind, mid) for mid in mine for kind in ("start", "end")], p


class Stuck:
    """A connection that takes a reply and never answers (its process is about to die)."""

    size = 1

    def __init__(self) -> None:
        self.tried: list[str] = []
        self.stuck = asyncio.Event()

    async def deliver(self, message: Message | Outgoing, recipient: str) -> None:
        self.tried.append(message_id(message))
        self.stuck.set()
        await asyncio.Event().wait()

    async def close(self) -> None:
        return None


@pytest.mark.postgres
def test_a_dead_workers_replies_are_claimed_again_at_once_and_only_then(pg_url: str) -> None:
    async def run() -> tuple[list[str], list[str], list[tuple[str, str, str]]]:
        db, cfg = await queue(pg_url, 6, recipients=3)
        log: list[tuple[str, str, str]] = []
        dying_db = Database(pg_url)
        stuck = Stuck()
        dying = OutboxSenders(dying_db, stuck, cfg, batch=6)
        sending = asyncio.create_task(dying.step())
        await stuck.stuck.wait()
        other_db = Database(pg_url)
        other = OutboxSenders(other_db, Slow(log, "other", 0.0, size=1), cfg, batch=6)
        await other.drain()  # the dying worker's claim is leased: none of it, none to its recipients
        while_alive = [mid for kind, mid, _ in log if kind == "start"]
        await dying_db.engine.dispose()  # the process dies: its connections end ...
        sending.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sending
        await other.drain()  # ... and with them its leases
        await asyncio.gather(dying_db.close(), other_db.close())
        await db.close()
        return stuck.tried, while_alive, log

    tried, while_alive, log = asyncio.run(run())
    assert tried == ["<o00@srv.test>"]
    assert while_alive == []  # every recipient had a reply leased by the dying worker
    assert [mid for kind, mid, _ in log if kind == "start"] == [f"<o{i:02d}@srv.test>" for i in range(6)]
