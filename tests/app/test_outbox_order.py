"""The outbox senders (app/outbox.OutboxSenders) keep each recipient's replies
in order and send to several recipients at once (was in tests/mail/test_units.py)."""

from __future__ import annotations

import asyncio
from email.message import Message

from pbmserv_terrace.app.outbox import OutboxSenders
from pbmserv_terrace.config import load_config
from pbmserv_terrace.mail.message import Outgoing
from pbmserv_terrace.store import Database, UnitOfWork, utcnow


class SlowDelivery:
    """Records when each reply starts and ends; several may be in flight."""

    size = 3

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []
        self.in_flight = self.peak = 0

    async def deliver(self, message: Message | Outgoing, recipient: str) -> None:
        message = message.message if isinstance(message, Outgoing) else message
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        self.events.append(("start", recipient, str(message["Subject"])))
        await asyncio.sleep(0.01)
        self.events.append(("end", recipient, str(message["Subject"])))
        self.in_flight -= 1

    async def close(self) -> None:
        return None


def test_senders_keep_each_recipients_order_and_send_several_at_once(db_url: str):
    async def run() -> SlowDelivery:
        db = Database(db_url)
        await db.migrate()
        now = utcnow()
        async with UnitOfWork(db) as uow:
            for i in range(24):
                uow.outbox.queue(message_id=f"<o{i}@srv.test>", recipient=f"p{i % 4}@x.test",
                                             subject=f"reply {i:02d}", body="b\n", state="pending", attempts=0,
                                             next_attempt_at=now, created_at=now)  # fmt: skip
            await uow.commit()
        delivery = SlowDelivery()
        cfg = load_config(None, {"PBMSERV_DATABASE_URL": db_url, "PBMSERV_ADDRESS": "pbm@srv.test"})
        result = await OutboxSenders(db, delivery, cfg, batch=2).drain()
        assert result.sent == 24
        async with UnitOfWork(db) as uow:
            assert {r.state for r in await uow.outbox.by_state("sent")} == {"sent"}
            assert await uow.outbox.pending_count() == 0
        await db.close()
        return delivery

    delivery = asyncio.run(run())
    assert 1 < delivery.peak <= 3
    for p in range(4):
        mine = [subject for kind, to, subject in delivery.events if to == f"p{p}@x.test" and kind == "start"]
        assert mine == sorted(mine) and len(mine) == 6
        # never two replies to one recipient at once
        depth = 0
        for kind, to, _ in delivery.events:
            if to == f"p{p}@x.test":
                depth += 1 if kind == "start" else -1
                assert depth <= 1
