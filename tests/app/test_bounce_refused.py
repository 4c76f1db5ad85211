"""A recipient the MTA refuses for good when we submit the reply (``RCPT TO``
answered ``550 5.1.1``) is a hard bounce of that address (issue 43 part 3): counted
once per reply, like a report that comes back later, and three mark the address
bouncing.  The replies go out through the outbox's real SMTP sender to a real SMTP
server (aiosmtpd) that refuses ann's address; the players are the harness's."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from sqlalchemy import select

from pbmserv_terrace.app.outbox import drain_outbox
from pbmserv_terrace.config import load_config
from pbmserv_terrace.mail.delivery import SmtpDelivery
from pbmserv_terrace.service.bounces import record_refusal
from pbmserv_terrace.store import BounceEvent, OutboxMessage, UnitOfWork, utcnow
from pbmserv_terrace.testing.postgres import free_port

from ..service.harness import SERVER, Harness

ANN, BEN = "ann@players.test", "ben@players.test"


class Mta:
    """An SMTP server that refuses the recipients in ``refuse`` (address -> answer) at RCPT."""

    def __init__(self) -> None:
        self.refuse: dict[str, str] = {}
        self.data = ""
        self.accepted: list[str] = []
        self.rcpts = 0

    async def handle_RCPT(self, server: object, session: object, envelope: Any, address: str, options: list[str]) -> str:
        self.rcpts += 1
        if address.lower() in self.refuse:
            return self.refuse[address.lower()]
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: object, session: object, envelope: Any) -> str:
        if self.data:
            return self.data
        self.accepted += envelope.rcpt_tos
        return "250 OK"


@pytest.fixture
def setup(db_url: str):  # SQLite, and PostgreSQL outside the fast tier (the outbox's leases)
    h = Harness(db_url)
    h.signup("ann", "ben")
    mta = Mta()
    port = free_port()
    controller = Controller(mta, hostname="127.0.0.1", port=port)
    controller.start()
    env = {"PBMSERV_DATABASE_URL": h.config.server.database_url, "PBMSERV_ADDRESS": SERVER,
           "PBMSERV_SMTP_HOST": "127.0.0.1", "PBMSERV_SMTP_PORT": str(port), "PBMSERV_SMTP_TLS": "none"}  # fmt: skip
    config = load_config(None, env)
    try:
        yield h, mta, config
    finally:
        controller.stop()
        h.close()


def queue(h: Harness, *recipients: str) -> list[str]:
    """Replies waiting in the outbox, one to each recipient; their Message-IDs."""
    ids = [f"<{uuid.uuid4().hex}@terrace.test>" for _ in recipients]

    async def run() -> None:
        async with UnitOfWork(h.db) as uow:
            now = utcnow()
            for message_id, to in zip(ids, recipients, strict=True):
                uow.outbox.queue(message_id=message_id, recipient=to, subject="Terrace Board 101", body="the board\n",
                                 next_attempt_at=now, created_at=now)  # fmt: skip
            await uow.commit()

    h.loop.run_until_complete(run())
    return ids


def send(h: Harness, config: Any) -> None:
    h.loop.run_until_complete(drain_outbox(h.db, SmtpDelivery(config), config))


def bounces(h: Harness) -> list[tuple[str, str, str]]:
    """(address, status, the reply's Message-ID) of every bounce counted."""

    async def run() -> list[tuple[str, str, str]]:
        async with h.db.session() as s:
            stmt = select(BounceEvent.address, BounceEvent.status, OutboxMessage.message_id).join(
                OutboxMessage, OutboxMessage.id == BounceEvent.outbox_id
            )
            return [tuple(r) for r in (await s.execute(stmt.order_by(BounceEvent.id))).all()]  # type: ignore[misc]

    return h.loop.run_until_complete(run())


def states(h: Harness, ids: list[str]) -> list[str]:
    async def run() -> list[str]:
        async with h.db.session() as s:
            rows = (await s.execute(select(OutboxMessage).where(OutboxMessage.message_id.in_(ids)))).scalars().all()
            by_id = {r.message_id: r.state for r in rows}
            return [by_id[i] for i in ids]

    return h.loop.run_until_complete(run())


def bouncing(h: Harness, userid: str) -> list[str]:
    async def run() -> list[str]:
        async with UnitOfWork(h.db) as uow:
            user = await uow.users.get(userid)
            assert user is not None
            return list(user.bouncing)

    return h.loop.run_until_complete(run())


def test_a_recipient_refused_at_rcpt_counts_as_a_hard_bounce_once_per_reply(setup) -> None:
    h, mta, config = setup
    mta.refuse[ANN] = "550 5.1.1 <ann@players.test>: Recipient address rejected: User unknown"
    first = queue(h, ANN, BEN)
    send(h, config)
    assert states(h, first) == ["failed", "sent"]
    assert mta.accepted == [BEN]
    assert bounces(h) == [(ANN, "5.1.1", first[0])]  # ben's delivered reply counts nothing

    # the same reply counts once: a second refusal of it (were it sent again) adds nothing
    async def again() -> str:
        async with UnitOfWork(h.db) as uow:
            rows = (await uow.session.execute(select(OutboxMessage.id).where(OutboxMessage.message_id == first[0]))).all()
            said, _ = await record_refusal(uow, rows[0][0], "5.1.1", config, utcnow())
            await uow.commit()
            return said

    assert "counted before" in h.loop.run_until_complete(again())
    assert len(bounces(h)) == 1

    # a bare 550 (no enhanced code) counts with the reply code; the third marks ann bouncing
    mta.refuse[ANN] = "550 no such mailbox here"
    second = queue(h, ANN)
    send(h, config)
    assert bouncing(h, "ann") == []
    waiting = queue(h, ANN, ANN)  # (the first is refused; the one behind it is not sent once ann is marked)
    send(h, config)
    assert [status for _, status, _ in bounces(h)] == ["5.1.1", "550", "550"]
    assert [mid for _, _, mid in bounces(h)] == [first[0], second[0], waiting[0]]
    assert bouncing(h, "ann") == [ANN]
    assert states(h, waiting) == ["failed", "failed"]


def test_a_temporary_refusal_or_a_refused_message_counts_nothing(setup) -> None:
    h, mta, config = setup
    mta.refuse[ANN] = "450 4.2.0 mailbox busy"
    later = queue(h, ANN)
    send(h, config)
    assert states(h, later) == ["pending"]  # tried again later
    mta.refuse.clear()
    mta.data = "554 5.7.1 message refused as spam"  # the message, not the recipient
    refused = queue(h, BEN)
    send(h, config)
    assert states(h, refused) == ["failed"]
    assert bounces(h) == []
    assert bouncing(h, "ann") == bouncing(h, "ben") == []
