"""Big mails are read in a process of their own (issue 36), not on the event loop.

A mail of up to 12 MB costs tens of milliseconds to read even within the caps of
:func:`..mail.message.bounded`: the email parser over 256 kB of its body, the
reply trimmer and the password masking over up to 200,000 characters of its text.
On the event loop that is time in which no other mail, SMTP session or timer
moves (``bench/hostile.py`` measured its lag at p99 >= 100 ms while one client sent
12 MB mails in a loop).  So a mail over :data:`INLINE_BYTES` is read by
:class:`MailReader`'s worker process: :func:`read_whole` parses it and derives
what the service reads of it (its commands, and what a reply-key reply says), and
the finished :class:`~..inbound.InboundMail` comes back pickled.  A small mail is
read in place: the hop to a process and back costs more than reading it.

The worker is started on the first big mail (from the event loop's thread, so it
dies with ``serve``: :func:`..lifecycle.start_child`), at a lower priority
than ``serve`` (:data:`READER_NICE`), and kept; one process is
enough, since a big mail is at most a few tens of milliseconds of its time.  A
worker that died (killed, out of memory) is replaced for the next mail; the mail
it was reading is read in place, so no mail is lost to it.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from ..inbound import InboundMail
from ..lifecycle import start_child
from ..mail.message import parse_message

log = logging.getLogger("pbmserv.server")

READER_NICE = 5
"""the worker's niceness: reading one sender's 12 MB mail waits for the CPU while
``serve`` answers everybody else"""
INLINE_BYTES = 64 * 1024
"""mails up to this size are read on the event loop (at most a few ms of it)"""


def read_whole(raw: bytes) -> InboundMail:
    """``raw`` parsed, with what the service derives from its text computed now
    (the cached :attr:`InboundMail.parsed` and :attr:`InboundMail.reply`), so that
    none of it is left for the event loop."""
    mail = parse_message(raw)
    _ = mail.parsed, mail.reply
    return mail


class MailReader:
    """Reads raw mails: small ones in place, big ones in a worker process."""

    def __init__(self, inline_bytes: int = INLINE_BYTES) -> None:
        self.inline_bytes = inline_bytes
        self._pool: ProcessPoolExecutor | None = None

    async def read(self, raw: bytes) -> InboundMail:
        """The mail of ``raw`` (never raises for malformed mail: see ``parse_message``)."""
        if len(raw) <= self.inline_bytes:
            return parse_message(raw)
        if self._pool is None:
            context = multiprocessing.get_context("spawn")  # never fork a process that has threads and sockets
            self._pool = ProcessPoolExecutor(1, mp_context=context, initializer=start_child, initargs=(os.getpid(), READER_NICE, "pbmserv-reader"))
        try:
            return await asyncio.get_running_loop().run_in_executor(self._pool, read_whole, raw)
        except BrokenProcessPool:
            log.error("the mail reader's process died; reading a %d-byte mail in place, a new one is started", len(raw))
            self.close()
            return read_whole(raw)

    def workers(self) -> list[int]:
        """The process ids of the worker (none before the first big mail)."""
        return list(self._pool._processes) if self._pool is not None else []

    def close(self) -> None:
        """Stop the worker (a mail being read in it is read in place by its caller)."""
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
