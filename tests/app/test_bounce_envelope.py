"""The outbox sends each reply with its own return path (VERP, issue 43 part 3):
into a Maildir as its ``Return-Path`` line, the message itself unchanged."""

from __future__ import annotations

import email
from email.utils import parseaddr
from pathlib import Path

from pbmserv_terrace.app.outbox import drain_outbox
from pbmserv_terrace.inbound import InboundMail
from pbmserv_terrace.mail.delivery import MaildirDelivery
from pbmserv_terrace.service.bounces import bounce_key, outbox_id_of, verp_token
from pbmserv_terrace.service.replykeys import SECRET_NAME
from pbmserv_terrace.store import OutboxMessage, UnitOfWork, utcnow

from ..service.harness import SERVER, Harness


def test_a_maildir_reply_carries_its_own_return_path(tmp_path: Path) -> None:
    h = Harness()
    try:

        async def run() -> tuple[list[OutboxMessage], str]:
            async with UnitOfWork(h.db) as uow:
                now = utcnow()
                for n in range(3):
                    uow.outbox.queue(message_id=f"<r{n}@terrace.test>", recipient=f"p{n}@players.test", subject="x",
                                     body="x\n", next_attempt_at=now, created_at=now)  # fmt: skip
                await uow.commit()
            await drain_outbox(h.db, MaildirDelivery(tmp_path), h.config)
            async with UnitOfWork(h.db) as uow:
                rows = list((await uow.session.execute(OutboxMessage.__table__.select())).all())
                secret = await uow.secrets.get(SECRET_NAME)
            assert secret is not None
            return rows, secret  # type: ignore[return-value]

        rows, secret = h.loop.run_until_complete(run())
        key = bounce_key(secret)
        seen = set()
        for row in rows:
            [path] = (tmp_path / row.recipient / "new").iterdir()
            data = path.read_bytes()
            assert data.startswith(b"Return-Path: <pbmserv+bounce-")
            msg = email.message_from_bytes(data)
            assert msg["Message-ID"] == row.message_id  # the reply's own, as queued
            assert msg["From"].endswith(f"<{SERVER}>")  # what the player sees and answers is unchanged
            return_path = parseaddr(msg["Return-Path"])[1]
            mail = InboundMail(sender="", subject="", body="", message_id="", recipients=[return_path])
            token = verp_token(mail, SERVER)
            assert token is not None and outbox_id_of(token, key) == row.id
            seen.add(return_path)
        assert len(seen) == 3  # one return path per reply
    finally:
        h.close()
