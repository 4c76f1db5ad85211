"""The archive beside ``serve``'s mail loop, in a process of its own (issue 36).

On the mail's event loop, 200 web clients held every mail's answer for seconds: the
archive's statements and rendering ran between the mail's steps.  So ``serve`` binds
the archive's socket (a port in use is its error at start, as before) and hands it to
a child process (``python -m pbmserv_terrace.web.process``), which serves it with
uvicorn on its own event loop, its own database connection (read-only: SQLite
``query_only``, the file read memory-mapped; PostgreSQL ``default_transaction_read_only``) and a lower CPU
priority (``nice`` WEB_NICE), so that when both want the CPU the mail comes first.

The two talk over the child's stdin: one line of settings (JSON: the database URL
never shows in ``ps``), then ``s`` when ``serve`` stops.  The play pages (issue 39,
:mod:`.play`) hand their (key, move) to ``serve`` over a socket pair of their own,
one JSON line each way per request (:class:`PlayChannel` in the child,
:func:`answer_plays` in ``serve``, which runs the service's ``web_play``): the child
never writes, and never holds the reply keys' secret.  If stdin ends without
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
from .clockview import Timers
from .play import PlayDoor

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
PLAY_WAIT = 20.0
"""seconds a play page waits for serve's answer (then: "try again"; a move that was
played meanwhile shows as played when the page is loaded again)"""
PLAYS_AT_ONCE = 4
"""play requests serve runs at once (each is a short transaction; the rest wait)"""
PLAY_LINE_MAX = 1 << 16
"""bytes of one line on the play channel (a request is ~100, an answer ~2,000)"""


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
    db: Database,
    sock: socket.socket,
    *,
    server_name: str,
    public_url: str,
    stop: asyncio.Event,
    address: str = "",
    play: PlayDoor | None = None,
    timers: Timers | None = None,
) -> None:
    """``serve``'s archive on ``sock`` until ``stop``: in a child process (see above), or on
    this loop over ``db`` when the database is in memory.  Closes ``sock`` at the end.
    ``address``: the server's own mail address (see :func:`.app.create_app`); ``play``:
    the door the play pages hand moves to (the service's ``web_play``); ``timers``: the
    forfeit time and vacation allowance the pages' time left counts with."""
    timers = timers or Timers()
    secret = os.urandom(32)  # the play forms' tokens: one secret while serve runs (a restarted child keeps it)
    try:
        if in_memory(db.url):
            log.warning("web archive: the database is in memory, so the archive shares the mail's event loop")
            app = create_app(db, server_name=server_name, public_url=public_url, address=address, play=play,
                             play_secret=secret, timers=timers)  # fmt: skip
            await serve_web(app, "", 0, stop=stop, sock=sock)
            return
        settings = {"database_url": db.url, "server_name": server_name, "public_url": public_url,
                    "address": address, "fd": sock.fileno(), "parent": os.getpid(), "play_secret": secret.hex(),
                    "timers": [timers.forfeit_days, timers.vacation_days]}  # fmt: skip
        pause = RESTART_PAUSE
        while True:
            started = time.monotonic()
            exitcode = await _one(settings, sock, stop, play)
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


async def _one(settings: dict[str, Any], sock: socket.socket, stop: asyncio.Event, play: PlayDoor | None) -> int | None:
    """Run one child until it ends, or until ``stop`` (then ask it to stop, kill it if it
    does not in STOP_WAIT seconds); its exit code.  With ``play``, the child's play
    pages reach it over a socket pair made for this child."""
    ours, theirs = socket.socketpair() if play is not None else (None, None)
    fds = (sock.fileno(),) if theirs is None else (sock.fileno(), theirs.fileno())
    settings = {**settings, "play_fd": theirs.fileno() if theirs is not None else None}
    try:
        child = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "pbmserv_terrace.web.process", stdin=asyncio.subprocess.PIPE, pass_fds=fds
        )
    finally:
        if theirs is not None:
            theirs.close()  # (the child has its own copy)
    assert child.stdin is not None
    answering = asyncio.create_task(answer_plays(ours, play)) if ours is not None and play is not None else None
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
        if answering is not None:
            answering.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await answering
        if ours is not None:
            ours.close()


async def _reap(child: asyncio.subprocess.Process, ended: asyncio.Task[int]) -> int | None:
    if not ended.done():
        log.error("the web archive's process did not stop in %.0f s; killed", STOP_WAIT)
        with contextlib.suppress(ProcessLookupError):
            child.kill()
    return await ended


async def answer_plays(sock: socket.socket, play: PlayDoor) -> None:
    """``serve``'s end of the play channel: each line from the child is a request
    ``{"id", "key", "move"}``; each is run by ``play`` (at most PLAYS_AT_ONCE at once)
    and answered ``{"id", "answer"}`` (or ``{"id", "error"}``), in any order.  Ends
    when the child closes its end."""
    reader, writer = await asyncio.open_unix_connection(sock=sock, limit=PLAY_LINE_MAX)
    turns = asyncio.Semaphore(PLAYS_AT_ONCE)
    running: set[asyncio.Task[None]] = set()

    async def one(request: dict[str, Any]) -> None:
        ask = request.get("id")
        key, move = request.get("key"), request.get("move")
        reply: dict[str, Any] = {"id": ask}
        if not isinstance(key, str) or not (move is None or isinstance(move, str)):
            reply["error"] = "a malformed request"
        else:
            async with turns:
                try:
                    reply["answer"] = dict(await play(key[:64], move[:64] if move is not None else None))
                except Exception as exc:
                    log.error("play page: the move could not be handled (%s: %s)", type(exc).__name__, exc)
                    reply["error"] = type(exc).__name__
        with contextlib.suppress(ConnectionError):
            writer.write(json.dumps(reply).encode() + b"\n")
            await writer.drain()

    try:
        while True:
            try:
                line = await reader.readline()
            except (ValueError, ConnectionError):  # a line over the limit, or the child gone
                return
            if not line:
                return
            try:
                request = json.loads(line)
            except ValueError:
                continue
            if isinstance(request, dict):
                task = asyncio.create_task(one(request))
                running.add(task)
                task.add_done_callback(running.discard)
    finally:
        for task in running:
            task.cancel()
        writer.close()


class PlayChannel:
    """The child's end of the play channel: a :data:`~.play.PlayDoor` that asks
    ``serve`` (see :func:`answer_plays`); no answer within PLAY_WAIT seconds, or the
    channel closed, is an exception (the page then says to try again)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.writer: asyncio.StreamWriter | None = None
        self.waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.asked = 0
        self.reading: asyncio.Task[None] | None = None
        self.opening = asyncio.Lock()

    async def __call__(self, key: str, move: str | None) -> dict[str, Any]:
        async with self.opening:  # (the first requests may come together: one connection for all)
            if self.writer is None:
                reader, self.writer = await asyncio.open_unix_connection(sock=self.sock, limit=PLAY_LINE_MAX)
                self.reading = asyncio.create_task(self._read(reader))
        assert self.writer is not None
        self.asked += 1
        ask = self.asked
        answer = asyncio.get_running_loop().create_future()
        self.waiting[ask] = answer
        try:
            self.writer.write(json.dumps({"id": ask, "key": key, "move": move}).encode() + b"\n")
            await self.writer.drain()
            return await asyncio.wait_for(answer, PLAY_WAIT)
        finally:
            self.waiting.pop(ask, None)

    async def _read(self, reader: asyncio.StreamReader) -> None:
        try:
            while line := await reader.readline():
                reply = json.loads(line)
                answer = self.waiting.get(reply.get("id"))
                if answer is None or answer.done():
                    continue
                if isinstance(reply.get("answer"), dict):
                    answer.set_result(reply["answer"])
                else:
                    answer.set_exception(RuntimeError(f"serve could not answer: {reply.get('error')}"))
        except (OSError, ValueError) as exc:  # serve gone, or a line it never writes
            log.warning("the play channel to serve ended: %s", exc)
        finally:
            self.writer = None  # (the next request tries a new connection, and fails at once if serve is gone)
            for answer in self.waiting.values():
                if not answer.done():
                    answer.set_exception(ConnectionError("serve closed the play channel"))

    async def close(self) -> None:
        if self.reading is not None:
            self.reading.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.reading
        self.sock.close()


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
    play_fd = settings.get("play_fd")
    door = PlayChannel(socket.socket(fileno=int(play_fd))) if play_fd is not None else None
    secret = bytes.fromhex(str(settings.get("play_secret", ""))) or None
    defaults = Timers()
    forfeit_days, vacation_days = settings.get("timers") or (defaults.forfeit_days, defaults.vacation_days)
    try:
        app = create_app(db, server_name=str(settings["server_name"]), public_url=str(settings["public_url"]),
                         address=str(settings.get("address", "")), play=door, play_secret=secret,
                         timers=Timers(float(forfeit_days), float(vacation_days)))  # fmt: skip
        await serve_web(app, "", 0, stop=stop, sock=sock)
    finally:
        if door is not None:
            await door.close()
        await db.close()


if __name__ == "__main__":
    main()
