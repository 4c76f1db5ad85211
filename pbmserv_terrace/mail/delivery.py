"""Sending a finished reply: over SMTP (aiosmtplib, a few connections kept open,
TLS verified, password or OAuth2 XOAUTH2 login) or into a local Maildir (the
embedded default).  Network adapters only: which
reply to send, and what to record about it, is the outbox's job (app/outbox.py).
"""

from __future__ import annotations

import asyncio
import email.policy
import logging
import mailbox
from email.message import Message
from pathlib import Path
from typing import Protocol

import aiosmtplib

from ..config import Config
from .oauth2 import OAuth2Error, TokenSource, token_source, with_token_retry
from .tls import TlsError, client_context, explain

log = logging.getLogger("pbmserv.outbound")


class PermanentFailure(Exception):
    """The recipient will never be reachable this way (5xx, bad address)."""


class Throttled(Exception):
    """The server asks us to slow down (421, 451, 452): a pause for all replies,
    not a failure of this one."""


THROTTLE_CODES = frozenset({421, 451, 452})


class Delivery(Protocol):
    async def deliver(self, message: Message, recipient: str) -> None: ...

    async def close(self) -> None: ...


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
        self.tokens: TokenSource | None = token_source(config.oauth2) if config.smtp.auth == "oauth2" else None
        self.size = max(1, connections or self.cfg.connections)
        self._idle: list[aiosmtplib.SMTP] = []
        self._slots: asyncio.Semaphore | None = None

    async def connect(self) -> aiosmtplib.SMTP:
        """A new connection, made, secured and authenticated.  TLS is verified
        (``ca_file`` or the system's store); STARTTLS that the server does not
        offer is an error, never plain text instead."""
        cfg = self.cfg
        client = aiosmtplib.SMTP(
            hostname=cfg.host,
            port=cfg.port,
            use_tls=cfg.tls == "ssl",
            start_tls=cfg.tls == "starttls",
            timeout=cfg.timeout,
            tls_context=client_context(cfg.ca_file),
        )
        try:
            await client.connect()
        except Exception as exc:
            message = explain(exc, "smtp", cfg.host, cfg.port, cfg.ca_file)
            if message is not None:
                raise TlsError(message) from None
            raise
        try:
            if cfg.auth == "oauth2":
                await self._xoauth2(client)
            elif cfg.user:
                await client.login(cfg.user, cfg.password)
        except BaseException:
            client.close()
            raise
        return client

    async def _xoauth2(self, client: aiosmtplib.SMTP) -> None:
        if client.is_ehlo_or_helo_needed:
            await client.ehlo()  # the AUTH methods are known after EHLO
        if "xoauth2" not in client.server_auth_methods:
            raise OAuth2Error(f"SMTP {self.cfg.host}: the server does not offer AUTH XOAUTH2; use smtp.auth = 'password'")

        async def attempt(token: str) -> bool:
            try:
                await client.auth_xoauth2(self.cfg.user, token)
            except aiosmtplib.SMTPAuthenticationError:
                return False
            return True

        if self.tokens is None:
            raise OAuth2Error("smtp.auth is 'oauth2' but [oauth2] is not configured")
        await with_token_retry(self.tokens, attempt)

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
            if codes and all(c in THROTTLE_CODES for c in codes):
                raise Throttled(str(exc)) from exc
            raise
        except aiosmtplib.SMTPResponseException as exc:
            self._drop(client)
            if 500 <= exc.code < 600:
                raise PermanentFailure(f"{exc.code} {exc.message}") from exc
            if exc.code in THROTTLE_CODES:
                raise Throttled(f"{exc.code} {exc.message}") from exc
            raise
        except BaseException:
            self._drop(client)
            raise
        self._idle.append(client)

    @staticmethod
    def _drop(client: aiosmtplib.SMTP | None) -> None:
        if client is not None:
            client.close()


def delivery_for(config: Config) -> Delivery:
    """SMTP when configured, else the embedded default's Maildirs."""
    return SmtpDelivery(config) if config.uses_smtp else MaildirDelivery(config.embedded.maildir_root)
