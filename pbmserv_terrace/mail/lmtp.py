"""An LMTP listener (RFC 2033, issue 43): how Postfix and Dovecot hand mail to a
local program natively (``virtual_transport = lmtp:unix:...``, or a
``transport_maps`` entry for the game address), without a process per mail.

It is the embedded SMTP listener (:mod:`.embedded`: the same session, caps and
one-search DATA reader, each mail answered only after its commit) speaking LMTP:
``LHLO`` instead of ``HELO``/``EHLO`` (aiosmtpd's :class:`~aiosmtpd.lmtp.LMTP`),
and after DATA one reply per accepted recipient.  A mail is handled once, with
every envelope recipient as its ``X-Original-To`` fields, so each recipient's
outcome is the mail's: ``250`` once it committed, ``451`` (the MTA keeps it and
tries again) when it could not be handled now.

``listen`` is ``host:port`` or a UNIX socket, ``unix:/path`` (or just ``/path``).
A socket file left by a stopped server is replaced; one that a running server
answers on is refused, as a port in use is.  The socket gets ``socket_mode`` and,
when given, ``socket_group`` (Postfix's ``lmtp`` client runs as ``postfix``).
"""

from __future__ import annotations

import asyncio
import contextlib
import grp
import logging
import os
import socket
import stat
from collections.abc import Callable
from typing import Any

from aiosmtpd.lmtp import LMTP

from .embedded import RawHandler, SmtpListener, SmtpSession

log = logging.getLogger("pbmserv.lmtp")


def socket_path(listen: str) -> str | None:
    """The UNIX socket path ``listen`` names (``unix:/path`` or ``/path``), else None."""
    text = listen.strip()
    if text.startswith("unix:"):
        return text[len("unix:") :]
    return text if text.startswith("/") else None


class LmtpSession(LMTP, SmtpSession):
    """An LMTP dialogue: aiosmtpd's LHLO over :class:`~.embedded.SmtpSession`'s
    addresses, recipient cap and DATA reader."""

    async def push_outcome(self, status: str) -> None:
        # RFC 2033 4.2: after the final ".", one reply for each RCPT that was accepted
        # (each its own line; a reply of one recipient never continues into the next)
        await self.push("\r\n".join([status] * max(1, self.recipients_in_data)))


class LmtpListener(SmtpListener):
    """:class:`~.embedded.SmtpListener` speaking LMTP on TCP or a UNIX socket."""

    session = LmtpSession

    def __init__(self, listen: str, handle: RawHandler, *, socket_mode: int = 0o660, socket_group: str = "") -> None:
        self.path = socket_path(listen)
        host, port = ("", 0) if self.path else _host_port(listen)
        super().__init__(host, port, handle)
        self.socket_mode, self.socket_group = socket_mode, socket_group
        self.bound: tuple[int, int] | None = None
        """(device, inode) of the socket file this listener made (the one its stop removes)"""

    @property
    def where(self) -> str:
        """Where it listens, as the configuration writes it."""
        return f"unix:{self.path}" if self.path else f"{self.host}:{self.port}"

    async def bind(self, loop: asyncio.AbstractEventLoop, factory: Callable[[], Any]) -> asyncio.base_events.Server:
        if self.path is None:
            server = await loop.create_server(factory, host=self.host, port=self.port)
            self.port = int(server.sockets[0].getsockname()[1])
        else:
            _clear_stale_socket(self.path)
            server = await loop.create_unix_server(factory, path=self.path)
            if self.socket_group:
                os.chown(self.path, -1, grp.getgrnam(self.socket_group).gr_gid)
            os.chmod(self.path, self.socket_mode)
            made = os.lstat(self.path)
            self.bound = (made.st_dev, made.st_ino)
        log.info("LMTP listener on %s", self.where)
        return server

    async def stop(self) -> None:
        await super().stop()
        if self.path is not None and self.bound is not None:
            with contextlib.suppress(FileNotFoundError):
                now = os.lstat(self.path)
                if (now.st_dev, now.st_ino) == self.bound:  # (not another server's, made since)
                    os.unlink(self.path)
            self.bound = None


def _host_port(listen: str) -> tuple[str, int]:
    host, sep, port = listen.strip().rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"{listen!r} is not host:port or unix:/path")
    return host.strip("[]"), int(port)


def _clear_stale_socket(path: str) -> None:
    """Remove a socket file nobody answers on (a stopped server's); refuse a live one
    (OSError, as a port in use) and anything that is not a socket."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise OSError(f"{path} exists and is not a socket")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.settimeout(2)
        probe.connect(path)
    except OSError:
        os.unlink(path)  # nobody there: a stopped server's leftover
        return
    finally:
        probe.close()
    raise OSError(f"another server is listening on {path}")
