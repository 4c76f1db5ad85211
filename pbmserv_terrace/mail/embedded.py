"""The embedded default's inbound side: an SMTP listener on 127.0.0.1 (aiosmtpd).

A mail is answered ``250`` only after its transaction committed (or, if a handler
crashed, after the raw mail was saved to the ``failed`` directory), so a client
that sees no ``250`` — because the server died mid-way — sends again, and the
Message-ID check makes that second delivery a no-op: nothing lost, nothing twice.
"""

from __future__ import annotations

import asyncio
import logging
import re
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

from aiosmtpd.smtp import SMTP, Envelope, Session

from .message import DOT_ATOM_ADDRESS, with_envelope_recipients

log = logging.getLogger("pbmserv.embedded")

RawHandler = Callable[[bytes], Awaitable[None]]

MAX_MESSAGE = 12 * 1024 * 1024
MAX_RECIPIENTS = 100
"""RCPT TOs one mail may name (RFC 5321 4.5.3.1.8: a server takes at least 100);
each travels with the mail as an ``X-Original-To`` field"""


_PLAIN_ANGLE_ADDR = re.compile(rf"[ \t]*<({DOT_ATOM_ADDRESS})>[ \t]*(?![ \t(])(.*)", re.DOTALL)
"""``<local@domain>`` whose both halves are dot-atoms, with the white space
around it, and the rest"""


class SmtpSession(SMTP):
    """aiosmtpd's SMTP session, reading a plain ``<local@domain>`` in MAIL FROM
    and RCPT TO itself.  aiosmtpd parses every address with the ``email``
    package's header parser (and defines a class each time): ~6 % of serve's CPU
    a mail (issue 18).  For a dot-atom address in angle brackets the result is
    the same, the address as written and what follows it (tests/mail/
    test_embedded_addresses.py compares the two); anything else is aiosmtpd's,
    and what its parser cannot read at all is a malformed address (553)."""

    def read_address(self, arg: str) -> tuple[str | None, str | None]:
        """(address, what follows it) of a MAIL FROM or RCPT TO argument, as
        aiosmtpd's own ``_getaddr`` gives them; (None, None) for a malformed one."""
        plain = _PLAIN_ANGLE_ADDR.fullmatch(arg)
        if plain is None:
            try:
                return super()._getaddr(arg)
            except (IndexError, ValueError):
                # the header parser trips over some (a lone "<"): aiosmtpd would
                # answer "500 Error: (IndexError) ..." and log a traceback
                return None, None
        address, rest = plain.groups()
        if self.local_part_limit and len(address.rpartition("@")[0]) > self.local_part_limit:
            return None, None
        return address, rest

    recipients_in_data = 0
    """RCPT TOs of the mail whose DATA is being read (its outcome is said for each in LMTP)"""

    _getaddr = read_address  # aiosmtpd's hook for the argument of MAIL FROM and RCPT TO

    async def smtp_RCPT(self, arg: str | None) -> None:
        """aiosmtpd's RCPT, refusing recipients past :data:`MAX_RECIPIENTS` (452:
        the client sends them in another mail)."""
        if self.envelope is not None and len(self.envelope.rcpt_tos) >= MAX_RECIPIENTS:
            await self.push("452 4.5.3 Error: too many recipients")
            return
        await super().smtp_RCPT(arg)

    async def push_outcome(self, status: str) -> None:
        """Say what became of the mail after DATA (LMTP says it once per recipient:
        ``mail/lmtp.LmtpSession``)."""
        await self.push(status)

    async def smtp_DATA(self, arg: str) -> None:
        """aiosmtpd's DATA with the mail read in one search for its end instead
        of a line at a time (issue 36): aiosmtpd 1.4 read each line with an await,
        a log call and a buffer of its own, and unstuffed them in a loop without
        one: 12 MB of empty lines cost 22 s of the event loop and 1.1 GB.  Here the
        stream's own ``readuntil`` finds CRLF "." CRLF (it searches only what
        arrived since the last look), dot-unstuffing is one ``replace``, and a mail
        over the size limit is drained without being kept (552, as aiosmtpd)."""
        if await self.check_helo_needed() or await self.check_auth_needed("DATA"):
            return
        assert self.envelope is not None
        if not self.envelope.rcpt_tos:
            await self.push("503 Error: need RCPT command")
            return
        if arg:
            await self.push("501 Syntax: DATA")
            return
        self.recipients_in_data = len(self.envelope.rcpt_tos)
        await self.push("354 End data with <CR><LF>.<CR><LF>")
        try:
            content = await _read_data(self._reader, self.data_size_limit or MAX_MESSAGE)
        except asyncio.CancelledError:
            log.info("connection lost during DATA")
            if self.transport is not None:
                self.transport.close()
            raise
        if content is None:
            self._set_post_data_state()  # type: ignore[no-untyped-call]
            await self.push_outcome("552 Error: Too much mail data")
            return
        self.envelope.content = self.envelope.original_content = content
        status = await self._call_handler_hook("DATA")
        self._set_post_data_state()  # type: ignore[no-untyped-call]
        await self.push_outcome(status)


_END = b"\r\n.\r\n"


async def _read_data(reader: asyncio.StreamReader, limit: int) -> bytes | None:
    """The mail after DATA up to CRLF "." CRLF, dot-unstuffed (RFC 5321 4.5.2),
    with its last line's CRLF; None when it is longer than ``limit`` (then read to
    its end and dropped).  Nothing after the end is read (a pipelined command
    stays in the stream).  A CRLF is put in front of what the stream holds, so
    the end is found by one search even when the mail is empty, and every line
    begins after a CRLF (the one "." of a line is then taken out by ``replace``)."""
    saved = reader._limit  # type: ignore[attr-defined]  # aiosmtpd's 1001 is a line's limit, not a mail's
    reader._limit = limit + 2 + len(_END)  # type: ignore[attr-defined]
    reader._buffer[0:0] = b"\r\n"  # type: ignore[attr-defined]
    try:
        data = await reader.readuntil(_END)
    except asyncio.LimitOverrunError:
        await _drain(reader)
        return None
    finally:
        reader._limit = saved  # type: ignore[attr-defined]
    return data[:-3].replace(b"\r\n.", b"\r\n")[2:]


async def _drain(reader: asyncio.StreamReader) -> None:
    """Read and drop what the stream holds up to and including CRLF "." CRLF:
    each refusal of ``readuntil`` says how much can go without losing an end
    split between two pieces."""
    while True:
        try:
            await reader.readuntil(_END)
            return
        except asyncio.LimitOverrunError as exc:
            await reader.readexactly(max(1, exc.consumed))


class _Handler:
    def __init__(self, handle: RawHandler) -> None:
        self.handle = handle
        self.handing: set[SMTP] = set()
        """connections whose mail is being handed over (in :meth:`handle_DATA`)"""

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        self.handing.add(server)
        try:
            return await self._hand_over(envelope)
        finally:
            self.handing.discard(server)

    async def _hand_over(self, envelope: Envelope) -> str:
        content = envelope.original_content or envelope.content
        raw = content if isinstance(content, bytes) else str(content).encode("utf-8", "surrogateescape")
        # the envelope recipients travel with the mail, as an MTA's X-Original-To would
        # (a reply key in RCPT TO is found even when the To header lost it)
        raw = with_envelope_recipients(raw, list(envelope.rcpt_tos))
        try:
            await self.handle(raw)
        except Exception:
            log.exception("could not process a mail; asking the client to retry")
            return "451 4.3.0 temporary failure, try again later"
        return "250 2.0.0 OK: processed"


class SmtpListener:
    """``start()`` listens; ``stop()`` stops accepting and waits for mails in hand.
    ``mail/lmtp.LmtpListener`` is this with LMTP sessions, on TCP or a UNIX socket."""

    session: type[SmtpSession] = SmtpSession
    """the protocol each connection speaks"""

    def __init__(self, host: str, port: int, handle: RawHandler) -> None:
        self.host, self.port = host, port
        self._handler = _Handler(handle)
        self._server: asyncio.base_events.Server | None = None
        self._connections: weakref.WeakSet[SMTP] = weakref.WeakSet()
        self._overdue: weakref.WeakKeyDictionary[SMTP, Envelope] = weakref.WeakKeyDictionary()
        """connections whose mail (this envelope) was waited for in vain (:meth:`overdue`)"""

    async def start(self) -> None:
        loop = asyncio.get_running_loop()

        def factory() -> Any:
            smtp = self.session(self._handler, data_size_limit=MAX_MESSAGE, enable_SMTPUTF8=True, hostname="pbmserv.local")
            self._connections.add(smtp)
            return smtp

        self._server = await self.bind(loop, factory)

    async def bind(self, loop: asyncio.AbstractEventLoop, factory: Callable[[], Any]) -> asyncio.base_events.Server:
        """Listen on ``host:port`` (port 0: a free one, then kept in ``port``)."""
        server = await loop.create_server(factory, host=self.host, port=self.port)
        self.port = int(server.sockets[0].getsockname()[1])
        log.info("embedded SMTP listener on %s:%d", self.host, self.port)
        return server

    def receiving(self) -> int:
        """Mails being received: connections whose client has begun a mail (MAIL
        FROM) whose data has not been handed over yet, leaving out those found
        :meth:`overdue`."""
        return len(self._receiving())

    def overdue(self) -> None:
        """The mails being received now were waited for and did not come: they are
        left out of :meth:`receiving` until they arrive (a client's next mail, a
        new envelope, counts again)."""
        for smtp in self._receiving():
            if smtp.envelope is not None:
                self._overdue[smtp] = smtp.envelope

    def _receiving(self) -> list[SMTP]:
        handing = self._handler.handing
        return [
            smtp
            for smtp in self._connections
            if smtp.transport is not None
            and smtp.envelope is not None
            and smtp.envelope.mail_from
            and smtp not in handing
            and self._overdue.get(smtp) is not smtp.envelope
        ]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
