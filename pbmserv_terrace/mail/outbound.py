"""Delivering the outbox: after commit, each pending reply goes out exactly as
stored (same Message-ID on a retry), over SMTP or into a local Maildir.

Temporary failures are retried with exponential back-off until ``give_up_hours``;
permanent rejections are recorded as ``failed`` at once.
"""

from __future__ import annotations

import asyncio
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


async def drain_outbox(
    db: Database,
    delivery: Delivery,
    config: Config,
    *,
    batch: int = 50,
    now: datetime | None = None,
    keep_open: bool = False,
) -> DrainResult:
    """Send every due pending reply once.  Rows are claimed with FOR UPDATE SKIP
    LOCKED (PostgreSQL), so several workers never send the same row.  The SMTP
    connection is closed at the end unless ``keep_open`` (``serve`` keeps it for
    the next drain and closes it when idle)."""
    result = DrainResult()
    try:
        while True:
            async with UnitOfWork(db) as uow:
                rows = await uow.outbox.claim(now or utcnow(), limit=batch)
                if not rows:
                    return result
                # each recipient's replies in order; different recipients at once
                # (as many as the delivery has connections)
                by_recipient: dict[str, list[OutboxMessage]] = {}
                for row in rows:
                    by_recipient.setdefault(row.recipient.lower(), []).append(row)

                async def send_in_order(mine: list[OutboxMessage]) -> None:
                    for row in mine:
                        await _send_one(row, delivery, config, result)

                await asyncio.gather(*(send_in_order(mine) for mine in by_recipient.values()))
                await uow.commit()
            if len(rows) < batch:
                return result
    finally:
        if not keep_open:
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
