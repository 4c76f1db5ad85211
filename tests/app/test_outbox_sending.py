"""The outbox writes each reply's outcome as soon as its SMTP transaction ends
(issue 20, item 5): a crash re-sends at most the reply in flight, with the same
Message-ID.  And it holds replies back, in order, under ``smtp.max_per_minute``
and after a "slow down" (421/451/452) answer.  SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import contextlib
from email.message import Message

from pbmserv_terrace.app.outbox import OutboxSenders
from pbmserv_terrace.config import Config, load_config
from pbmserv_terrace.mail.delivery import Throttled
from pbmserv_terrace.mail.message import Outgoing
from pbmserv_terrace.store import Database, UnitOfWork, utcnow


class Killed(BaseException):
    """Stands for SIGKILL: nothing after it runs (not even ``except Exception``)."""


class Recording:
    """Accepts every reply (as an SMTP server's 250 after DATA) and notes it;
    ``die_on`` = the n-th reply never returns (the process dies while it is in flight)."""

    size = 1

    def __init__(self, die_on: int = 0, throttle_on: frozenset[int] = frozenset()) -> None:
        self.accepted: list[tuple[str, str]] = []
        self.tried: list[str] = []
        self.die_on, self.throttle_on = die_on, throttle_on

    async def deliver(self, message: Message | Outgoing, recipient: str) -> None:
        message = message.message if isinstance(message, Outgoing) else message
        self.tried.append(str(message["Message-ID"]))
        if len(self.tried) == self.die_on:
            raise Killed
        if len(self.tried) in self.throttle_on:
            raise Throttled("451 4.7.1 too many messages, slow down")
        self.accepted.append((str(message["Message-ID"]), str(message["Subject"])))

    async def close(self) -> None:
        return None


async def queue(db_url: str, n: int, recipients: int = 1) -> tuple[Database, Config]:
    db = Database(db_url)
    await db.migrate()
    now = utcnow()
    async with UnitOfWork(db) as uow:
        for i in range(n):
            uow.outbox.queue(message_id=f"<o{i:02d}@srv.test>", recipient=f"p{i % recipients}@x.test",
                                         subject=f"reply {i:02d}", body="b\n", state="pending", attempts=0,
                                         next_attempt_at=now, created_at=now)  # fmt: skip
        await uow.commit()
    return db, load_config(None, {"PBMSERV_DATABASE_URL": db_url, "PBMSERV_ADDRESS": "pbm@srv.test"})


async def states(db: Database) -> dict[str, str]:
    async with UnitOfWork(db) as uow:
        return {r.message_id: r.state for state in ("sent", "pending") for r in await uow.outbox.by_state(state)}


def test_a_crash_resends_only_the_reply_in_flight(db_url: str) -> None:
    async def run() -> tuple[Recording, Recording, dict[str, str]]:
        db, cfg = await queue(db_url, 12)
        first = Recording(die_on=4)  # three accepted, the fourth in flight when the process dies
        with contextlib.suppress(Killed):
            await OutboxSenders(db, first, cfg, batch=8).drain()
        after_kill = await states(db)
        second = Recording()
        await OutboxSenders(db, second, cfg, batch=8).drain()  # PostgreSQL: the dead worker's leases died with it
        await db.close()
        return first, second, after_kill

    first, second, after_kill = asyncio.run(run())
    assert [mid for mid, _ in first.accepted] == ["<o00@srv.test>", "<o01@srv.test>", "<o02@srv.test>"]
    assert [after_kill[f"<o{i:02d}@srv.test>"] for i in range(4)] == ["sent", "sent", "sent", "pending"]
    resent = [mid for mid, _ in second.accepted]
    # the one in flight goes again, with the Message-ID it had; none of the accepted ones
    assert resent == [f"<o{i:02d}@srv.test>" for i in range(3, 12)]
    assert first.tried[-1] == resent[0]
    duplicates = len(first.accepted) + len(resent) - len({*(m for m, _ in first.accepted), *resent})
    assert duplicates == 0


def test_max_per_minute_holds_the_rest_in_order(db_url: str) -> None:
    clock = [1000.0]

    async def run() -> list[list[str]]:
        db, cfg = await queue(db_url, 12, recipients=3)
        cfg.smtp.max_per_minute = 5
        delivery = Recording()
        senders = OutboxSenders(db, delivery, cfg, batch=8, clock=lambda: clock[0])
        rounds = []
        for _ in range(3):
            before = len(delivery.accepted)
            await senders.drain()
            rounds.append([s for _, s in delivery.accepted[before:]])
            clock[0] += 30.0
            await senders.drain()  # half a minute later: still the same minute's budget
            assert len(delivery.accepted) == before + len(rounds[-1])
            clock[0] += 31.0
        await db.close()
        return rounds

    rounds = asyncio.run(run())
    assert [len(r) for r in rounds] == [5, 5, 2]
    assert [s for r in rounds for s in r] == [f"reply {i:02d}" for i in range(12)]


def test_the_senders_keep_no_record_per_reply_without_a_limit_and_a_minute_with_one(db_url: str) -> None:
    """A long-running server sends for months: what the senders remember of the
    replies sent must not grow with them (it did: a time per reply, kept forever)."""
    clock = [1000.0]

    async def run() -> tuple[int, list[int], int]:
        db, cfg = await queue(db_url, 30, recipients=5)
        unlimited = OutboxSenders(db, Recording(), cfg, batch=8, clock=lambda: clock[0])
        assert (await unlimited.drain()).sent == 30
        cfg.smtp.max_per_minute = 10
        limited = OutboxSenders(db, Recording(), cfg, batch=8, clock=lambda: clock[0])
        now = utcnow()
        async with UnitOfWork(db) as uow:
            for i in range(25):
                uow.outbox.queue(message_id=f"<l{i:02d}@srv.test>", recipient=f"p{i % 5}@x.test", subject=f"later {i:02d}",
                                 body="b\n", state="pending", attempts=0, next_attempt_at=now, created_at=now)  # fmt: skip
            await uow.commit()
        kept = []
        for _ in range(3):
            await limited.drain()
            kept.append(limited.recent_sends)
            clock[0] += 61.0
        limited.allowance()  # forgets what is older than a minute
        await db.close()
        return unlimited.recent_sends, kept, limited.recent_sends

    unlimited, kept, after = asyncio.run(run())
    assert unlimited == 0
    assert kept == [10, 10, 5]  # the last minute's sends: never more than the limit
    assert after == 0


def test_slow_down_answer_pauses_everything_and_keeps_the_order(db_url: str) -> None:
    clock = [1000.0]

    async def run() -> tuple[Recording, list[int], dict[str, str]]:
        db, cfg = await queue(db_url, 6, recipients=2)
        cfg.smtp.retry_base_seconds = 10
        delivery = Recording(throttle_on=frozenset({3, 4}))
        senders = OutboxSenders(db, delivery, cfg, batch=8, clock=lambda: clock[0])
        counts = []
        await senders.drain()  # two sent, the third answered 451: pause 10 s
        counts.append(len(delivery.tried))
        clock[0] += 9.0
        await senders.drain()  # still paused: nothing tried
        counts.append(len(delivery.tried))
        clock[0] += 2.0
        await senders.drain()  # tried again, 451 again: pause 20 s
        counts.append(len(delivery.tried))
        clock[0] += 21.0
        await senders.drain()
        counts.append(len(delivery.tried))
        final = await states(db)
        await db.close()
        return delivery, counts, final

    delivery, counts, final = asyncio.run(run())
    assert counts == [3, 3, 4, 8]
    # the throttled reply went again first, and everything in the queue's order
    assert delivery.tried == [f"<o{i:02d}@srv.test>" for i in (0, 1, 2, 2, 2, 3, 4, 5)]
    assert [s for _, s in delivery.accepted] == [f"reply {i:02d}" for i in range(6)]
    assert set(final.values()) == {"sent"}


class SlowFailure(Recording):
    """Every attempt fails with a temporary error after ``seconds`` (a relay that
    stalls, then drops the connection)."""

    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds = seconds

    async def deliver(self, message: Message | Outgoing, recipient: str) -> None:
        message = message.message if isinstance(message, Outgoing) else message
        self.tried.append(str(message["Message-ID"]))
        await asyncio.sleep(self.seconds)
        raise ConnectionResetError("the relay dropped the connection")


def test_the_retry_time_counts_from_the_failure_not_from_the_attempt(db_url: str) -> None:
    async def run() -> tuple[list[str], int, str, float]:
        db, cfg = await queue(db_url, 1)
        cfg.smtp.retry_base_seconds = 1.0
        delivery = SlowFailure(1.5)
        senders = OutboxSenders(db, delivery, cfg, batch=1)
        await senders.drain()
        failed_at = utcnow()
        await senders.drain()  # at once again: the retry is not due yet (1 s after the failure)
        async with UnitOfWork(db) as uow:
            [row] = await uow.outbox.by_state("pending")
            found = row.attempts, row.last_error or "", (row.next_attempt_at - failed_at).total_seconds()
        await db.close()
        return delivery.tried, *found

    tried, attempts, error, ahead = asyncio.run(run())
    assert tried == ["<o00@srv.test>"], tried  # one attempt, not one per drain
    assert attempts == 1 and "dropped the connection" in error
    assert ahead > 0.3, ahead  # due about 1 s after the failure, which ended 1.5 s after the attempt began
