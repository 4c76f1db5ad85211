"""The sender loop (app/sender.send_replies): a wake is taken by one free sender,
not by all of them (issue 18: with four senders, each wake cost four claims, three
of which found nothing), and a full claim passes it on at once, so that a backlog
is still claimed and sent on every connection side by side.  SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime

import pytest

from pbmserv_terrace.app import sender
from pbmserv_terrace.app.outbox import OutboxSenders
from pbmserv_terrace.app.sender import send_replies
from pbmserv_terrace.mail.message import Outgoing
from pbmserv_terrace.store import Database, UnitOfWork, utcnow

from .test_outbox_sending import Recording, queue


class Four(Recording):
    """Four connections; each reply takes a moment, as over a network."""

    size = 4

    def __init__(self) -> None:
        super().__init__()
        self.in_flight = self.most_in_flight = 0

    async def deliver(self, message: Outgoing, recipient: str) -> None:  # type: ignore[override]
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await asyncio.sleep(0.01)
            await super().deliver(message, recipient)
        finally:
            self.in_flight -= 1


class Counted(OutboxSenders):
    """Notes how many replies each claim took."""

    claims: list[int]

    async def step(self, now: datetime | None = None) -> tuple[int, bool]:
        tried, left_out = await super().step(now)
        self.claims.append(tried)
        return tried, left_out


async def add(db: Database, first: int, n: int) -> None:
    now = utcnow()
    async with UnitOfWork(db) as uow:
        for i in range(first, first + n):
            uow.outbox.queue(message_id=f"<w{i:03d}@srv.test>", recipient=f"p{i}@x.test", subject=f"reply {i}",
                             body="b\n", next_attempt_at=now, created_at=now)  # fmt: skip
        await uow.commit()


async def until(condition, timeout: float = 20.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.01)


def test_a_wake_costs_one_claim_and_a_backlog_goes_side_by_side(db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # (no look without a wake during the test: on a busy machine one came after 5 s, an extra claim)
    monkeypatch.setattr(sender, "LOOK_AGAIN", 600.0)

    async def run() -> None:
        db, cfg = await queue(db_url, 0)
        delivery = Four()
        senders = Counted(db, delivery, cfg)
        senders.claims = []
        wake, stopping = asyncio.Event(), asyncio.Event()
        loop = asyncio.create_task(send_replies(senders, delivery, wake, stopping, lambda result: None))
        await until(lambda: len(senders.claims) == 4)  # each sender looks once as it starts
        for k in range(5):  # a few replies at a time, as mails are handled: one claim each
            del senders.claims[:]
            await add(db, 10 * k, 2)
            wake.set()
            await until(lambda k=k: len(delivery.accepted) == 2 * (k + 1))
            await until(lambda: sum(senders.claims) == 2)  # (a step ends once its outcomes are committed)
            await asyncio.sleep(0.3)  # (any other claim would come now)
            assert senders.claims == [2], senders.claims
        # a backlog of five claims: every connection at work at once, and all of it sent
        del senders.claims[:]
        await add(db, 100, 5 * senders.batch)
        wake.set()
        await until(lambda: len(delivery.accepted) == 10 + 5 * senders.batch)
        await until(lambda: sum(senders.claims) == 5 * senders.batch)  # (each reply claimed once: accepted once)
        assert delivery.most_in_flight == 4
        assert sorted(m for m, _ in delivery.accepted) == sorted(set(m for m, _ in delivery.accepted))
        assert senders.claims.count(0) <= 2 * senders.claims.count(senders.batch), (
            senders.claims
        )  # (a full claim: its sender and the one it woke look once more)
        stopping.set()
        wake.set()
        await asyncio.wait_for(loop, 10)
        await db.close()

    asyncio.run(run())
