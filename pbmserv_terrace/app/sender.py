"""Sending replies: the loop of the outbox senders, in ``serve``'s own process or
in a process of its own (``[server] outbox_process``, the default).

One Python process holds one core at a time (the GIL): handling mail and
composing, writing and recording replies took turns on it.  With the senders in
a second process, ``serve`` takes mail on one core while its replies go out on
the other.  Nothing else changes: the outbox rows are the hand-over (written in
the mail's transaction, claimed by the senders after the commit), so every
guarantee of :mod:`.outbox` holds as it is.

The two talk over two pipes.  ``serve`` sends ``w`` when mails queued replies
(the senders wake at once instead of at their next look), and ``s`` when it
stops: the senders send what is due once more and exit.  The sender process
sends back its running totals (sent, failed) for ``/metrics``.  If the pipe ends
without ``s``, ``serve`` is gone (killed): the sender process exits at once, like
it (and the kernel kills it with ``serve`` where it can, on Linux), so a new
``serve`` never finds the old one's senders still at work.  A sender process
that dies is started again after a pause.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import os
import time
from collections.abc import Callable
from multiprocessing.connection import Connection

from ..config import Config
from ..lifecycle import start_child
from ..mail.delivery import Delivery, delivery_for
from ..store import Database
from . import heap
from .health import Metrics
from .outbox import DrainResult, OutboxSenders

log = logging.getLogger("pbmserv.outbound")

IDLE_SMTP_CLOSE = 10.0
"""seconds without replies after which the SMTP connection is closed"""
RESTART_PAUSE = 1.0
"""seconds before a sender process that died is started again"""
STOP_WAIT = 25.0
"""seconds a stopping sender process is given to send what is due"""
LOOK_AGAIN = 5.0
"""seconds after which a free sender looks without a wake (replies due for a retry)"""
LOOK_AGAIN_HELD = 0.2
"""the same while replies are held back (recipients being sent to, the rate limit)"""
WAKE, STOP = b"w", b"s"


async def send_replies(
    senders: OutboxSenders,
    delivery: Delivery,
    wake: asyncio.Event,
    stopping: asyncio.Event,
    progress: Callable[[DrainResult], None],
) -> None:
    """Send replies as mails queue them, until ``stopping``: one sender per
    connection of the delivery.  A free sender claims what is due when ``wake``
    is set (or every few seconds, for retries; every 0.2 s while replies are held
    back), and only one free sender at a time waits for it: a wake is taken by one
    sender, and passed on to the next free one as soon as a claim comes back full
    (more may be due: they are claimed and sent side by side).  So a wake costs
    one claim, not one per sender (all but one of which found nothing).  Idle
    SMTP connections are closed after IDLE_SMTP_CLOSE seconds; at the stop what
    is due is sent once more.  ``progress`` is told the running totals."""
    last_sent = time.monotonic()
    listening = asyncio.Lock()
    """held by the free sender that waits for the wake"""
    senders.full = wake.set

    async def sender() -> None:
        nonlocal last_sent
        while not stopping.is_set():
            try:
                sent, left_out = await senders.step()
            except Exception:
                log.exception("sending replies failed; retrying")
                sent, left_out = 0, False
                await asyncio.sleep(1.0)
            progress(senders.result)
            if sent:
                last_sent = time.monotonic()
            if sent >= senders.batch:
                continue  # a full claim: more may be due
            if time.monotonic() - last_sent > IDLE_SMTP_CLOSE:
                await delivery.close()  # only the idle connections
            async with listening:
                if stopping.is_set():
                    break
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(wake.wait(), timeout=LOOK_AGAIN_HELD if left_out else LOOK_AGAIN)
                wake.clear()

    try:
        await asyncio.gather(*(sender() for _ in range(senders.size)))
        await senders.drain()  # stopping: what is due goes out once more
    except Exception:
        log.exception("sending replies at shutdown failed; they stay queued")
    finally:
        progress(senders.result)
        with contextlib.suppress(Exception):
            await delivery.close()


async def send_here(
    db: Database, config: Config, wake: asyncio.Event, stopping: asyncio.Event, progress: Callable[[DrainResult], None]
) -> None:
    """The senders in this process (``serve``'s own, or the sender process's)."""
    delivery = delivery_for(config)
    await send_replies(OutboxSenders(db, delivery, config), delivery, wake, stopping, progress)


class SenderProcess:
    """``serve``'s side of the sender process: starts it (again when it dies),
    forwards ``wake`` to it, follows its totals, and stops it at the end.

    Two one-way pipes carry single bytes (``w``, ``s``) one way and lines of
    totals the other, written without blocking: a wake that finds the pipe full
    is dropped (the unread ones wake the senders anyway), and so is a line of
    totals (the next supersedes it), so neither process ever waits on the other."""

    def __init__(self, config: Config, metrics: Metrics) -> None:
        self.config, self.metrics = config, metrics
        self.context = multiprocessing.get_context("spawn")  # never fork a process that has threads and sockets
        self._before = (0, 0)
        """(sent, failed) of the sender processes that ended"""
        self._totals = (0, 0)
        """the running process's totals"""
        self._partial = b""

    async def run(self, wake: asyncio.Event, stopping: asyncio.Event) -> None:
        while True:
            exitcode = await self._one(wake, stopping)
            self._before = (self._before[0] + self._totals[0], self._before[1] + self._totals[1])
            self._totals, self._partial = (0, 0), b""
            if stopping.is_set():
                return
            log.error("the sender process ended (exit code %s); starting it again in %.0f s", exitcode, RESTART_PAUSE)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), timeout=RESTART_PAUSE)
            if stopping.is_set():
                return

    async def _one(self, wake: asyncio.Event, stopping: asyncio.Event) -> int | None:
        """Run one sender process until it ends (or, at the stop, until it has
        sent what is due); its exit code."""
        loop = asyncio.get_running_loop()
        orders_in, orders = self.context.Pipe(duplex=False)
        totals, totals_out = self.context.Pipe(duplex=False)
        process = self.context.Process(
            target=child_main, args=(self.config, orders_in, totals_out, os.getpid()), name="pbmserv-sender", daemon=True
        )
        process.start()  # (from the event loop's thread: the child's parent-death signal is tied to it)
        orders_in.close()
        totals_out.close()
        os.set_blocking(orders.fileno(), False)
        os.set_blocking(totals.fileno(), False)
        ended = asyncio.Event()
        loop.add_reader(totals.fileno(), self._read, totals.fileno())
        loop.add_reader(process.sentinel, ended.set)

        async def forward() -> None:
            while True:
                await wake.wait()
                wake.clear()
                try:
                    os.write(orders.fileno(), WAKE)
                except BlockingIOError:
                    pass  # full: the unread wakes do
                except OSError:
                    return  # it has ended: the sentinel says so

        forwarding = asyncio.create_task(forward())
        stop = asyncio.create_task(stopping.wait())
        done = asyncio.create_task(ended.wait())
        try:
            await asyncio.wait({stop, done}, return_when=asyncio.FIRST_COMPLETED)
            if stopping.is_set() and not ended.is_set():
                forwarding.cancel()
                await self._order(orders.fileno(), STOP, ended)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(done), timeout=STOP_WAIT)
        finally:
            for task in (forwarding, stop, done):
                task.cancel()
            loop.remove_reader(process.sentinel)
            loop.remove_reader(totals.fileno())
            if ended.is_set():
                process.join(5)  # it has closed its end: being reaped takes a moment
            if process.is_alive():
                log.error("the sender process did not stop in %.0f s; ended", STOP_WAIT)
                process.kill()
                process.join(5)
            while self._read(totals.fileno()):  # its last totals
                pass
            orders.close()
            totals.close()
        return process.exitcode

    @staticmethod
    async def _order(fd: int, order: bytes, ended: asyncio.Event) -> None:
        """Write one order byte, waiting while the pipe is full (it is read)."""
        while not ended.is_set():
            try:
                os.write(fd, order)
                return
            except BlockingIOError:
                await asyncio.sleep(0.01)
            except OSError:
                return  # it has ended

    def _read(self, fd: int) -> bool:
        """Take the lines of totals that came (the last one counts); whether
        there were any bytes."""
        try:
            data = os.read(fd, 65536)
        except OSError:  # (BlockingIOError: nothing now)
            return False
        if not data:
            asyncio.get_running_loop().remove_reader(fd)
            return False
        *lines, self._partial = (self._partial + data).split(b"\n")
        if lines:
            sent, failed = (int(n) for n in lines[-1].split())
            self._totals = (sent, failed)
            self.metrics.replies(self._before[0] + sent, self._before[1] + failed)
        return True


# ------------------------------------------------------- the sender process
def child_main(config: Config, orders: Connection, totals: Connection, parent: int) -> None:
    """The sender process (spawned by :class:`SenderProcess`)."""
    start_child(parent, name="pbmserv-sender")  # serve says "s" to stop: this process then sends what is due
    heap.settle()
    asyncio.run(_child(config, orders.fileno(), totals.fileno()))


async def _child(config: Config, orders: int, totals: int) -> None:
    loop = asyncio.get_running_loop()
    wake, stopping = asyncio.Event(), asyncio.Event()
    os.set_blocking(orders, False)
    os.set_blocking(totals, False)

    def readable() -> None:
        try:
            data = os.read(orders, 4096)
        except BlockingIOError:
            return
        if not data:  # serve is gone: without "s" it was killed, and this process goes with it
            if not stopping.is_set():
                os._exit(1)
            loop.remove_reader(orders)
            return
        if STOP in data:
            stopping.set()
        wake.set()

    loop.add_reader(orders, readable)
    last = (0, 0)

    def progress(result: DrainResult) -> None:
        nonlocal last
        if (result.sent, result.failed) != last:
            last = (result.sent, result.failed)
            with contextlib.suppress(BlockingIOError, BrokenPipeError):  # (full: the next line says it)
                os.write(totals, f"{result.sent} {result.failed}\n".encode())

    db = Database(config.server.database_url)
    try:
        await send_here(db, config, wake, stopping, progress)
    finally:
        await db.close()
        os.set_blocking(totals, True)
        with contextlib.suppress(OSError):  # the last totals, whole (serve reads them after the exit)
            os.write(totals, f"{last[0]} {last[1]}\n".encode())
