"""Delivering the outbox: after commit, each pending reply goes out exactly as
stored (same Message-ID on a retry), over SMTP or into a local Maildir.

Temporary failures are retried with exponential back-off until ``give_up_hours``;
permanent rejections are recorded as ``failed`` at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.policy
import logging
import mailbox
import ssl
from dataclasses import dataclass
from datetime import datetime, timedelta
from email.message import Message
from pathlib import Path
from typing import Protocol

import aiosmtplib

from ..config import Config
from ..store import Database, OutboxMessage, UnitOfWork, utcnow
from ..store.repos import Outbox
from .message import build_message

log = logging.getLogger("pbmserv.outbound")


class PermanentFailure(Exception):
    """The recipient will never be reachable this way (5xx, bad address)."""


class Delivery(Protocol):
    async def deliver(self, message: Message, recipient: str) -> None: ...

    async def close(self) -> None: ...


def to_email(row: OutboxMessage, config: Config) -> Message:
    return build_message(
        sender=config.server.address,
        sender_name=config.server.name,
        recipient=row.recipient,
        subject=row.subject,
        body=row.body,
        message_id=row.message_id,
        in_reply_to=row.in_reply_to,
        date=row.created_at,
    )


class MaildirDelivery:
    """The embedded default: replies land in ``<root>/<address>/`` (a Maildir)."""

    size = 4
    """replies written at once (each in a thread)"""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def folder(self, address: str) -> Path:
        safe = address.lower().replace("/", "_")
        return self.root / safe

    async def deliver(self, message: Message, recipient: str) -> None:
        def write() -> None:
            self.root.mkdir(parents=True, exist_ok=True)
            box = mailbox.Maildir(self.folder(recipient), create=True)
            box.add(message.as_bytes(policy=email.policy.compat32))  # LF line ends on disk
            box.close()

        await asyncio.to_thread(write)

    async def close(self) -> None:
        return None


class SmtpDelivery:
    """Real mail: aiosmtplib with implicit TLS, STARTTLS or plain, and auth.  Up
    to ``smtp.connections`` connections send at once (as an MTA does); each stays
    open for the next message until :meth:`close`.  An error drops the connection
    it happened on (the next message opens a fresh one)."""

    def __init__(self, config: Config, connections: int | None = None) -> None:
        self.cfg = config.smtp
        self.size = max(1, connections or self.cfg.connections)
        self._idle: list[aiosmtplib.SMTP] = []
        self._slots: asyncio.Semaphore | None = None

    async def connect(self) -> aiosmtplib.SMTP:
        """A new connection, made and authenticated."""
        cfg = self.cfg
        client = aiosmtplib.SMTP(
            hostname=cfg.host,
            port=cfg.port,
            use_tls=cfg.tls == "ssl",
            start_tls=cfg.tls == "starttls",
            timeout=cfg.timeout,
            tls_context=ssl.create_default_context(cafile=cfg.ca_file) if cfg.ca_file else None,
        )
        await client.connect()
        try:
            if cfg.user:
                await client.login(cfg.user, cfg.password)
        except BaseException:
            client.close()
            raise
        return client

    async def close(self) -> None:
        idle, self._idle = self._idle, []
        for client in idle:
            if client.is_connected:
                try:
                    await client.quit()
                except (aiosmtplib.SMTPException, OSError):
                    client.close()

    async def deliver(self, message: Message, recipient: str) -> None:
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.size)
        async with self._slots:
            client = None
            while self._idle and client is None:
                candidate = self._idle.pop()
                client = candidate if candidate.is_connected else None
            await self._send(client, message, recipient)

    async def _send(self, client: aiosmtplib.SMTP | None, message: Message, recipient: str) -> None:
        reused = client is not None
        try:
            if client is None:
                client = await self.connect()
            try:
                await client.send_message(message, recipients=[recipient])
            except (aiosmtplib.SMTPServerDisconnected, aiosmtplib.SMTPConnectError, ConnectionError):
                if not reused:
                    raise
                # a kept connection the server had closed meanwhile: once more on a fresh one
                client.close()
                client = await self.connect()
                await client.send_message(message, recipients=[recipient])
        except aiosmtplib.SMTPRecipientsRefused as exc:
            self._drop(client)
            codes = [r.code for r in exc.recipients]
            if codes and all(500 <= c < 600 for c in codes):
                raise PermanentFailure(str(exc)) from exc
            raise
        except aiosmtplib.SMTPResponseException as exc:
            self._drop(client)
            if 500 <= exc.code < 600:
                raise PermanentFailure(f"{exc.code} {exc.message}") from exc
            raise
        except BaseException:
            self._drop(client)
            raise
        self._idle.append(client)

    @staticmethod
    def _drop(client: aiosmtplib.SMTP | None) -> None:
        if client is not None:
            client.close()


def backoff(attempts: int, base: float = 60.0) -> timedelta:
    """base, 2·base, 4·base, … capped at 1 hour."""
    return timedelta(seconds=min(3600.0, base * 2 ** max(0, attempts - 1)))


@dataclass
class DrainResult:
    sent: int = 0
    retried: int = 0
    failed: int = 0


class OutboxSenders:
    """Senders of the outbox, as many at once as the delivery has connections.

    Each :meth:`step` claims a few due replies and sends them; a recipient's
    replies go out in order (a recipient being sent to is left out of other
    claims).  On PostgreSQL a claim is a transaction that locks its rows (FOR
    UPDATE SKIP LOCKED) until their outcome is written, so several workers never
    send the same reply and a crash frees them at once.  On SQLite (one process)
    the claim is a plain read and the outcome a short write transaction, so mail
    processing never waits for the network.  A crash after a send and before
    its outcome is written sends that reply again on the next start.
    """

    def __init__(self, db: Database, delivery: Delivery, config: Config, *, batch: int = 8) -> None:
        self.db, self.delivery, self.config, self.batch = db, delivery, config, batch
        self.size = max(1, getattr(delivery, "size", 1))
        self.result = DrainResult()
        self._busy: set[str] = set()
        self._claiming = asyncio.Lock()

    async def step(self, now: datetime | None = None) -> tuple[int, bool]:
        """Claim and send up to ``batch`` replies; (how many, whether recipients
        being sent to elsewhere were left out of the claim)."""
        async with contextlib.AsyncExitStack() as stack:
            async with self._claiming:
                left_out = bool(self._busy)
                if self.db.is_sqlite:
                    async with self.db.reading() as session:
                        rows = await Outbox(session).claim(now or utcnow(), self.batch, self._busy)
                        session.expunge_all()  # kept as read (the read's rollback would expire them)
                else:
                    session = await stack.enter_async_context(self.db.session())
                    await session.begin()
                    rows = await Outbox(session).claim(now or utcnow(), self.batch, self._busy)
                    session.expunge_all()  # the outcome is written by Outbox.record
                mine = {row.recipient.lower() for row in rows}
                self._busy.update(mine)
            try:
                for row in rows:
                    await _send_one(row, self.delivery, self.config, self.result)
                if self.db.is_sqlite:
                    async with UnitOfWork(self.db) as uow:
                        await uow.outbox.record(rows)
                        await uow.commit()
                elif rows:
                    await Outbox(session).record(rows)
                    await session.commit()
            finally:
                self._busy.difference_update(mine)
        return len(rows), left_out

    async def drain(self, now: datetime | None = None) -> DrainResult:
        """Send every due reply once (all senders until nothing is left)."""
        left_out = True
        while left_out:
            left_out, before = False, self.result.sent + self.result.failed + self.result.retried

            async def sender() -> None:
                nonlocal left_out
                while True:
                    n, skipped = await self.step(now)
                    left_out = left_out or skipped
                    if n < self.batch:
                        return

            await asyncio.gather(*(sender() for _ in range(self.size)))
            if self.result.sent + self.result.failed + self.result.retried == before:
                break
        return self.result


async def drain_outbox(
    db: Database, delivery: Delivery, config: Config, *, batch: int = 8, now: datetime | None = None
) -> DrainResult:
    """Send every due pending reply once (see :class:`OutboxSenders`), then close
    the delivery's connections."""
    try:
        return await OutboxSenders(db, delivery, config, batch=batch).drain(now)
    finally:
        await delivery.close()


async def _send_one(row: OutboxMessage, delivery: Delivery, config: Config, result: DrainResult) -> None:
    now = utcnow()
    row.attempts += 1
    try:
        await delivery.deliver(to_email(row, config), row.recipient)
    except PermanentFailure as exc:
        row.state, row.last_error = "failed", f"permanent: {exc}"[:2000]
        result.failed += 1
        log.error("reply %s to %s rejected permanently: %s", row.message_id, row.recipient, exc)
        return
    except ValueError as exc:  # an address we refuse to write into a header
        row.state, row.last_error = "failed", f"invalid: {exc}"[:2000]
        result.failed += 1
        return
    except Exception as exc:  # network trouble, 4xx: try again later
        row.last_error = f"{type(exc).__name__}: {exc}"[:2000]
        if now - row.created_at > timedelta(hours=config.smtp.give_up_hours):
            row.state = "failed"
            result.failed += 1
            log.error("giving up on reply %s to %s after %d attempts: %s", row.message_id, row.recipient, row.attempts, exc)
        else:
            row.next_attempt_at = now + backoff(row.attempts, config.smtp.retry_base_seconds)
            result.retried += 1
            log.warning(
                "reply %s to %s: temporary failure (%s); retry at %s", row.message_id, row.recipient, exc, row.next_attempt_at
            )
        return
    row.state, row.sent_at, row.last_error = "sent", now, None
    result.sent += 1


def delivery_for(config: Config) -> Delivery:
    return SmtpDelivery(config) if config.uses_smtp else MaildirDelivery(config.embedded.maildir_root)
