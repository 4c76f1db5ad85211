"""The archive beside ``serve``'s mail loop, in a process of its own (issue 36).

On the mail's event loop, 200 web clients held every mail's answer for seconds: the
archive's statements and rendering ran between the mail's steps.  So ``serve`` binds
the archive's socket (a port in use is its error at start, as before) and hands it to
a child process (``python -m pbmserv_terrace.web.process``), which serves it with
uvicorn on its own event loop, its own database connection (read-only: SQLite
``query_only``, the file read memory-mapped; PostgreSQL ``default_transaction_read_only``) and a lower CPU
priority (``nice`` WEB_NICE), so that when both want the CPU the mail comes first.

The two talk over the child's stdin: one line of settings (JSON: the database URL
never shows in ``ps``), then ``s`` when ``serve`` stops.  If stdin ends without
``s``, ``serve`` is gone (killed): the child exits at once, and on Linux the kernel
kills it with ``serve`` anyway (PR_SET_PDEATHSIG), so the port is never held by an
orphan.  A child that dies is started again (after RESTART_PAUSE, doubling up to
RESTART_MAX while it keeps dying young).  An in-memory SQLite database cannot be
shared with another process: then the archive runs on ``serve``'s loop as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import sys
import time
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import make_url

from ..lifecycle import start_child
from ..store import Database
from ..store.db import READ_ONLY
from .app import create_app, serve_web

log = logging.getLogger("pbmserv.web")

WEB_NICE = 5
"""how much lower the archive's CPU priority is than serve's (a weight of about a third)"""
RESTART_PAUSE, RESTART_MAX = 1.0, 30.0
"""seconds before a child that died is started again (doubling while it dies within a minute)"""
STOP_WAIT = 10.0
"""seconds a stopping child is given to finish the requests in hand"""
STOP = b"s"
SQLITE_MMAP_BYTES = 1 << 30
"""how much of an SQLite file the archive's connections read memory-mapped"""


def in_memory(url: str) -> bool:
    parsed = make_url(url)
    return parsed.get_backend_name() == "sqlite" and parsed.database in (None, "", ":memory:")


def read_only_database(url: str) -> Database:
    """A :class:`Database` whose connections cannot write: the archive only reads."""
    if make_url(url).get_backend_name() != "sqlite":
        return Database(url, connect_args={"server_settings": {"default_transaction_read_only": "on"}})
    db = Database(url)
    # every transaction a plain BEGIN, as Database.reading's are: never BEGIN IMMEDIATE (the write lock)
    db.engine.sync_engine.update_execution_options(**{READ_ONLY: True})

    @event.listens_for(db.engine.sync_engine, "connect")
    def _query_only(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA query_only=ON")
        # the file's pages read through the OS's page cache, shared by every connection,
        # not copied by a read call each (a board and a player page: ~15 % less CPU)
        cursor.execute(f"PRAGMA mmap_size={SQLITE_MMAP_BYTES}")
        cursor.close()

    return db


async def serve_beside(
    db: Database, sock: socket.socket, *, server_name: str, public_url: str, stop: asyncio.Event, address: str = ""
) -> None:
    """``serve``'s archive on ``sock`` until ``stop``: in a child process (see above), or on
    this loop over ``db`` when the database is in memory.  Closes ``sock`` at the end.
    ``address``: the server's own mail address (see :func:`.app.create_app`)."""
    try:
        if in_memory(db.url):
            log.warning("web archive: the database is in memory, so the archive shares the mail's event loop")
            app = create_app(db, server_name=server_name, public_url=public_url, address=address)
            await serve_web(app, "", 0, stop=stop, sock=sock)
            return
        settings = {"database_url": db.url, "server_name": server_name, "public_url": public_url,
                    "address": address, "fd": sock.fileno(), "parent": os.getpid()}  # fmt: skip
        pause = RESTART_PAUSE
        while True:
            started = time.monotonic()
            exitcode = await _one(settings, sock, stop)
            if stop.is_set():
                return
            pause = RESTART_PAUSE if time.monotonic() - started > 60 else min(pause * 2, RESTART_MAX)
            log.error("the web archive's process ended (exit code %s); starting it again in %.0f s", exitcode, pause)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=pause)
            if stop.is_set():
                return
    finally:
        sock.close()


async def _one(settings: dict[str, Any], sock: socket.socket, stop: asyncio.Event) -> int | None:
    """Run one child until it ends, or until ``stop`` (then ask it to stop, kill it if it
    does not in STOP_WAIT seconds); its exit code."""
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "pbmserv_terrace.web.process", stdin=asyncio.subprocess.PIPE, pass_fds=(sock.fileno(),)
    )
    assert child.stdin is not None
    try:
        child.stdin.write(json.dumps(settings).encode() + b"\n")
        with contextlib.suppress(ConnectionError):
            await child.stdin.drain()
        ended = asyncio.create_task(child.wait())
        stopping = asyncio.create_task(stop.wait())
        await asyncio.wait({ended, stopping}, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        if not ended.done():
            with contextlib.suppress(ConnectionError):
                child.stdin.write(STOP)
                await child.stdin.drain()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(ended), timeout=STOP_WAIT)
        return await _reap(child, ended)
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            child.kill()
        raise
    finally:
        with contextlib.suppress(ConnectionError, RuntimeError):
            child.stdin.close()


async def _reap(child: asyncio.subprocess.Process, ended: asyncio.Task[int]) -> int | None:
    if not ended.done():
        log.error("the web archive's process did not stop in %.0f s; killed", STOP_WAIT)
        with contextlib.suppress(ProcessLookupError):
            child.kill()
    return await ended


# ------------------------------------------------------------------ the child
def main() -> None:
    """The child: ``python -m pbmserv_terrace.web.process`` with the settings on stdin."""
    settings = json.loads(sys.stdin.buffer.readline() or b"null")
    if not isinstance(settings, dict):
        raise SystemExit("pbmserv_terrace.web.process is started by serve (settings on stdin)")
    start_child(int(settings["parent"]), name="pbmserv-web")
    with contextlib.suppress(OSError):
        os.nice(WEB_NICE)
    asyncio.run(_child(settings))


async def _child(settings: dict[str, Any]) -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    orders = sys.stdin.fileno()
    os.set_blocking(orders, False)

    def readable() -> None:
        try:
            data = os.read(orders, 64)
        except BlockingIOError:
            return
        if not data:  # serve is gone: without "s" it was killed, and this process goes with it
            os._exit(1)
        if STOP in data:
            loop.remove_reader(orders)
            stop.set()

    loop.add_reader(orders, readable)
    sock = socket.socket(fileno=int(settings["fd"]))
    db = read_only_database(str(settings["database_url"]))
    try:
        app = create_app(db, server_name=str(settings["server_name"]), public_url=str(settings["public_url"]),
                         address=str(settings.get("address", "")))  # fmt: skip
        await serve_web(app, "", 0, stop=stop, sock=sock)
    finally:
        await db.close()


if __name__ == "__main__":
    main()
