"""Pipe mode: ``pbmserv-terrace handle < msg.eml`` (Postfix/procmail delivery).

One raw message in; its replies are queued in the outbox and then delivered
(configured SMTP, or the embedded Maildirs), or with ``--print`` written to stdout
as an mbox and marked as printed, so nothing is sent.  A mail that crashes a
handler is saved to the ``failed`` directory and logged: never dropped.
"""

from __future__ import annotations

import asyncio
import logging
import mailbox
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import BinaryIO

from sqlalchemy import select

from ..config import Config
from ..mail.delivery import delivery_for
from ..mail.message import parse_message
from ..service import HandleResult, Service
from ..service.bounces import bounce_key
from ..service.replykeys import SECRET_NAME
from ..store import Database, OutboxMessage, UnitOfWork
from .compose import to_outgoing
from .outbox import drain_outbox
from .robots import play_inline

log = logging.getLogger("pbmserv.handle")


def save_failed(raw: bytes, directory: str | Path, reason: str) -> Path:
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}-{abs(hash(raw)) % 10**8}.eml"
    path.write_bytes(raw)
    path.with_suffix(".error").write_text(reason + "\n", encoding="utf-8")
    return path


async def handle_raw(
    config: Config, raw: bytes, *, print_to: BinaryIO | None = None, service: Service | None = None
) -> HandleResult:
    """What ``handle`` does with one raw mail.  A long-lived caller (tests, benches)
    passes its own ``service`` on a migrated database; otherwise one is made here."""
    own_db = service is None
    if service is None:
        db = Database(config.server.database_url)
        await db.migrate()
        service = Service(db, config)
    db = service.db
    try:
        try:
            mail = parse_message(raw)
            if not db.is_sqlite:
                # other workers' password failures (PostgreSQL); the check runs meanwhile
                await asyncio.gather(*(await service.prewarm([mail]))[0], return_exceptions=True)
            result = await service.handle_mail(mail)
        except Exception as exc:
            path = save_failed(raw, config.imap.failed_folder, f"{type(exc).__name__}: {exc}")
            log.exception("handler crashed; the mail is kept in %s", path)
            return HandleResult("failed", f"{type(exc).__name__}: {exc}")
        log.info(result.log_line())
        if print_to is None and result.outbox_ids:
            await drain_outbox(db, delivery_for(config), config)  # the person's answer first
        robot_ids: list[str] = []
        if result.robot_turns:
            # no daemon here: the robots move now, each in its own transaction
            for played in await play_inline(service, result.robot_turns):
                robot_ids += played.outbox_ids
            if print_to is None and robot_ids:
                await drain_outbox(db, delivery_for(config), config)
        if print_to is not None:
            await print_replies(db, config, result.outbox_ids + robot_ids, print_to)
        return result
    finally:
        if own_db:
            await db.close()


async def print_replies(db: Database, config: Config, message_ids: list[str], out: BinaryIO) -> None:
    """Write the replies as one mbox to ``out`` and mark them printed (never sent)."""
    async with UnitOfWork(db) as uow:
        rows = list((await uow.session.execute(select(OutboxMessage).where(OutboxMessage.message_id.in_(message_ids)))).scalars())
        order = {mid: i for i, mid in enumerate(message_ids)}
        rows.sort(key=lambda r: order[r.message_id])
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "out.mbox"
            box = mailbox.mbox(path)
            secret = await uow.secrets.get(SECRET_NAME)
            key = bounce_key(secret) if secret else None
            for row in rows:
                # as a Maildir holds it: with the Return-Path of the reply's own bounce address
                outgoing = to_outgoing(row, config, key)
                msg = mailbox.mboxMessage(outgoing.delivered())
                msg.set_from(outgoing.sender)
                box.add(msg)
                row.state = "printed"
            box.close()
            out.write(path.read_bytes())
            out.flush()
        await uow.commit()


def read_stdin() -> bytes:
    return sys.stdin.buffer.read()
