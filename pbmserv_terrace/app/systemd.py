"""systemd's notify protocol (``Type=notify``, ``WatchdogSec=``): a few lines, no library.

Under a unit with ``Type=notify`` systemd puts the address of a unix datagram
socket in ``$NOTIFY_SOCKET`` (a path, or ``@name`` in the abstract namespace) and
reads ``KEY=value`` lines from it (sd_notify(3)): ``READY=1`` once ``serve``
takes mail, ``STOPPING=1`` when it begins to stop, ``STATUS=...`` for
``systemctl status``, and ``WATCHDOG=1`` at least every ``$WATCHDOG_USEC``
microseconds, or systemd kills and restarts the service.  :meth:`Notifier.watchdog`
sends it from the event loop at half that interval, so a loop held by a blocking
step (a SQLite statement, a stuck library) misses it and the service is
restarted.  Without ``$NOTIFY_SOCKET`` (not under systemd) every call does
nothing.  A message that cannot be sent is dropped (the socket is non-blocking):
the server never waits for its service manager.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from collections.abc import Mapping

log = logging.getLogger("pbmserv.systemd")


def notify_address(environ: Mapping[str, str]) -> str | None:
    """The socket address ``$NOTIFY_SOCKET`` names (a NUL first for the abstract
    namespace), or None when there is none we can use."""
    path = environ.get("NOTIFY_SOCKET", "")
    if path.startswith("@") and len(path) > 1:
        return "\0" + path[1:]
    if path.startswith("/"):
        return path
    return None  # unset, or a vsock: address (a VM's manager), which we do not speak


def watchdog_interval(environ: Mapping[str, str], pid: int) -> float | None:
    """Seconds between the ``WATCHDOG=1`` pings systemd wants (``$WATCHDOG_USEC``),
    or None when it wants none (unset, 0, or ``$WATCHDOG_PID`` names another process)."""
    wanted_by = environ.get("WATCHDOG_PID", "")
    if wanted_by and wanted_by != str(pid):
        return None
    try:
        usec = int(environ.get("WATCHDOG_USEC", "0"))
    except ValueError:
        return None
    return usec / 1_000_000 if usec > 0 else None


class Notifier:
    """The notify socket of this process's service manager (none: a no-op)."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        self.address = notify_address(env)
        self.interval = watchdog_interval(env, os.getpid()) if self.address else None
        """seconds systemd allows between two WATCHDOG=1, or None"""
        self._sock: socket.socket | None = None
        if self.address is not None:
            self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC | socket.SOCK_NONBLOCK)
        self._failed = False

    @property
    def enabled(self) -> bool:
        return self._sock is not None

    def send(self, *lines: str) -> bool:
        """Send ``lines`` (``KEY=value``) as one datagram; whether it went."""
        if self._sock is None or self.address is None:
            return False
        text = "\n".join(line.replace("\n", " ") for line in lines)
        try:
            self._sock.sendto(text.encode("utf-8", "replace"), self.address)
        except OSError as exc:
            if not self._failed:  # said once: a manager that went away stays away
                log.warning("cannot notify systemd at %s: %s", os.environ.get("NOTIFY_SOCKET", "?"), exc.strerror or exc)
                self._failed = True
            return False
        return True

    def ready(self, status: str = "") -> bool:
        return self.send("READY=1", *([f"STATUS={status}"] if status else []))

    def stopping(self, status: str = "") -> bool:
        return self.send("STOPPING=1", *([f"STATUS={status}"] if status else []))

    def status(self, status: str) -> bool:
        return self.send(f"STATUS={status}")

    async def watchdog(self, stop: asyncio.Event) -> None:
        """``WATCHDOG=1`` every half interval, from the event loop, until ``stop``."""
        if self.interval is None:
            return
        while not stop.is_set():
            self.send("WATCHDOG=1")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=self.interval / 2)

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None
