"""SQLite without a thread hop per statement.

aiosqlite runs every cursor call on its own thread and hands the result back
through the event loop: about 90 µs a hop, some 35 hops a command, for
statements SQLite itself answers in a few microseconds.  This module gives
SQLAlchemy's aiosqlite dialect (``async_creator``) a connection with the same
awaitable surface whose calls run ``sqlite3`` directly on the event loop's
thread instead.

Nothing here may block the loop for long.  Reads never wait in WAL mode, and
inside a ``BEGIN IMMEDIATE`` transaction neither do writes; the one statement
that can wait is ``BEGIN IMMEDIATE`` itself, while another process holds the
write lock.  :func:`begin_immediate` therefore tries it without a busy timeout
and, while the lock is taken, sleeps on the event loop (not in SQLite) before
trying again, up to the busy timeout.  Any other statement that meets a lock
waits at most ``STATEMENT_BUSY_MS`` in SQLite.

SQLite's write lock has no queue: whoever tries in the gap between two of
``serve``'s transactions gets it.  While ``serve`` works through a backlog its
transactions follow one another with gaps shorter than a try's pause, and the
sender process, which must record that the MTA took a reply before it does
anything else, waited for seconds (issue 43: a restart's first reply, sent
again, was still waiting for its outcome at the next SIGKILL, three kills in a
row).  A :class:`Turn` lets such a writer go first: it holds an exclusive
``flock`` on a file beside the database while it waits and writes, and every
other writer's ``BEGIN IMMEDIATE`` waits while the turn is held.  So the
outcome waits for at most the one transaction that was running.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from sqlalchemy.util import await_only

STATEMENT_BUSY_MS = 100
"""the most a statement other than BEGIN IMMEDIATE waits for a lock, in SQLite"""
LOCK_POLL_MAX = 0.005
"""seconds: the longest pause between two tries of BEGIN IMMEDIATE.  Under load
``serve``'s transactions follow one another with gaps of a few milliseconds; a
sender process that paused longer (it backed off to 100 ms) missed most of them
and wrote its replies' outcomes, and so the replies, only when the mail stopped
coming (issue 18: in the embedded benchmark the sender's CPU during the intake
rose from ~0.6 to ~2.1 ms a mail).  A try costs some microseconds."""
TURN_POLL = 0.001
"""seconds between two tries of a writer that goes first (:class:`Turn`)"""
TURN_SUFFIX = "-turn"
"""the file beside the database whose lock is the turn"""


class Turn:
    """The turn to write first, across processes (see the module's text): a
    writer that goes first :meth:`take`-s it (an exclusive ``flock``, which
    the kernel ends if the process dies), every other writer asks
    :meth:`claimed` before its ``BEGIN IMMEDIATE`` and waits while it is.
    Two descriptors: ``flock`` locks belong to an open file, so the question
    and the holding must not share one (a shared lock asked on the holding
    descriptor would turn its exclusive lock into a shared one)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._ask = -1
        self._hold = -1

    def _open(self) -> int:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        os.fchmod(fd, 0o600)
        return fd

    def claimed(self) -> bool:
        """Whether a writer that goes first holds the turn now (a few µs)."""
        if self._ask < 0:
            try:
                self._ask = self._open()
            except OSError:
                return False  # (a folder we cannot write into: nobody can take the turn there either)
        try:
            fcntl.flock(self._ask, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(self._ask, fcntl.LOCK_UN)
        return False

    async def take(self, timeout: float) -> bool:
        """Hold the turn (waiting on the event loop while another writer that goes
        first holds it, up to ``timeout``); False if it could not be had (then write
        without it)."""
        if self._hold < 0:
            try:
                self._hold = self._open()
            except OSError:
                return False
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(self._hold, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                if time.monotonic() > deadline:
                    return False
            await asyncio.sleep(TURN_POLL)

    def give_back(self) -> None:
        if self._hold >= 0:
            with contextlib.suppress(OSError):
                fcntl.flock(self._hold, fcntl.LOCK_UN)

    def close(self) -> None:
        for fd in (self._ask, self._hold):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._ask = self._hold = -1


class InlineCursor:
    """aiosqlite's Cursor surface over a ``sqlite3.Cursor``."""

    __slots__ = ("_cursor",)

    def __init__(self, cursor: sqlite3.Cursor) -> None:
        self._cursor = cursor

    async def __aenter__(self) -> InlineCursor:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._cursor.close()

    @property
    def description(self) -> Any:
        return self._cursor.description

    @property
    def rowcount(self) -> int:
        return self._cursor.rowcount

    @property
    def lastrowid(self) -> int | None:
        return self._cursor.lastrowid

    @property
    def arraysize(self) -> int:
        return self._cursor.arraysize

    @arraysize.setter
    def arraysize(self, value: int) -> None:
        self._cursor.arraysize = value

    async def execute(self, sql: str, parameters: Sequence[Any] | dict[str, Any] = ()) -> InlineCursor:
        self._cursor.execute(sql, parameters)
        return self

    async def executemany(self, sql: str, parameters: Iterable[Sequence[Any]]) -> InlineCursor:
        self._cursor.executemany(sql, parameters)
        return self

    async def fetchone(self) -> Any:
        return self._cursor.fetchone()

    async def fetchmany(self, size: int | None = None) -> list[Any]:
        return self._cursor.fetchmany(self._cursor.arraysize if size is None else size)

    async def fetchall(self) -> list[Any]:
        return self._cursor.fetchall()

    async def close(self) -> None:
        self._cursor.close()

    async def nextset(self) -> None:
        return None

    async def setinputsizes(self, *sizes: Any) -> None:
        return None


class InlineConnection:
    """aiosqlite's Connection surface over a ``sqlite3.Connection`` (the parts
    SQLAlchemy's aiosqlite dialect uses)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._connection: sqlite3.Connection | None = conn  # the dialect checks it before commit/rollback

    @property
    def raw(self) -> sqlite3.Connection:
        if self._connection is None:
            raise sqlite3.ProgrammingError("Cannot operate on a closed database.")
        return self._connection

    @property
    def isolation_level(self) -> str | None:
        return self.raw.isolation_level

    @isolation_level.setter
    def isolation_level(self, value: Any) -> None:
        self.raw.isolation_level = value

    def cursor(self) -> InlineCursor:
        return InlineCursor(self.raw.cursor())

    async def execute(self, sql: str, parameters: Sequence[Any] = ()) -> InlineCursor:
        return InlineCursor(self.raw.execute(sql, parameters))

    async def commit(self) -> None:
        self.raw.commit()
        # statements never suspend, so a loop of transactions (timers over many
        # boards, robots) would never let other tasks or a SIGTERM in: yield here
        await asyncio.sleep(0)

    async def rollback(self) -> None:
        self.raw.rollback()
        await asyncio.sleep(0)

    async def create_function(self, name: str, num_params: int, func: Callable[..., Any], **kw: Any) -> None:
        self.raw.create_function(name, num_params, func, **kw)

    async def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def stop(self) -> None:
        """Terminate (the dialect's force close): close at once."""
        if self._connection is not None:
            self._connection.close()
            self._connection = None


def creator(database: str) -> Callable[[], Any]:
    """The ``async_creator`` for ``create_async_engine``: a coroutine function
    that opens ``database`` as an :class:`InlineConnection`."""

    async def connect() -> InlineConnection:
        # check_same_thread off: SQLAlchemy may close a pooled connection from
        # another thread at interpreter exit; every use is on the loop's thread
        conn = sqlite3.connect(database, timeout=STATEMENT_BUSY_MS / 1000, isolation_level=None, check_same_thread=False)
        return InlineConnection(conn)

    return connect


def begin_immediate(raw: sqlite3.Connection, busy_timeout_s: float, turn: Turn | None = None) -> None:
    """``BEGIN IMMEDIATE`` without blocking the event loop: while another
    process holds the write lock, sleep on the loop (this runs inside
    SQLAlchemy's greenlet) and try again, for up to ``busy_timeout_s``.  With
    ``turn``, also while a writer that goes first holds it (:class:`Turn`)."""
    raw.execute("PRAGMA busy_timeout=0")
    try:
        deadline = time.monotonic() + busy_timeout_s
        pause = 0.002
        while True:
            if turn is not None and turn.claimed() and time.monotonic() < deadline:
                await_only(asyncio.sleep(TURN_POLL))
                continue
            try:
                raw.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise
                if time.monotonic() + pause > deadline:
                    raise
            await_only(asyncio.sleep(pause))
            pause = min(pause * 2, LOCK_POLL_MAX)
    finally:
        raw.execute(f"PRAGMA busy_timeout={STATEMENT_BUSY_MS}")
