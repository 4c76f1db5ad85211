"""The read-only web archive (issue 19): a Starlette app over the store's archive queries.

Layering: web → render, store, rules, games, gametypes, elo only; the mail service is never
imported, and the app never writes.  Every response carries the security headers (a strict
Content-Security-Policy: scripts only from /static/, no inline script), pages carry
an ETag and Cache-Control and answer ``If-None-Match`` with 304.

Errors and load (issue 36): the security headers are added outside everything else,
so Starlette's own 404/405/500 answers carry them too; a handler's exception is a 500
page (no traceback in it) and one log line (the traceback once per distinct place
it was raised, not once per request).  At most ``ACTIVE`` requests are handled at once
and ``WAITING`` wait, each at most ``MAX_WAIT`` seconds: beyond that the answer is a
quick 503 with ``Retry-After`` rather than a queue that grows for minutes.  ``serve``
runs the archive in a process of its own (:mod:`.process`), so it cannot hold up the mail;
while it serves, the garbage collector runs less often (``GC_THRESHOLDS``).

Modules: :mod:`.site` (what handlers share) ← :mod:`.pages`, :mod:`.feeds` (handlers)
← :mod:`.routes` (the URL table) ← this module (assembly and serving).  Routes:

    /                                   server, how to join (the server's address), game types, active boards,
                                        recent results, help link
    /boards/{type}/{N}[?ply=k]          a board (type: a name of gametypes.GAME_TYPES); /boards/{N} → /boards/terrace/{N}
                                        (a board game: picture and move table; a solitaire: its picture and the table as text)
    /boards/{type}/{N}/picture.png[?ply=k]  the mail's picture of the board (a solitaire's table) after ply k
    /boards/{type}/{N}.txt              the game record as plain text
    /boards/{type}/{N}/feed.atom        Atom feed, one entry per ply (a solitaire's move)
    /players/{U}, /players/{U}/feed.atom  a player (with the boards waiting for them and their time left)
    /players/{U}/deadlines.ics          their deadlines as iCalendar (web/ical.py; issue 40)
    /standings                          every game type: Elo tables, the top of each solitaire's ranking
    /standings/{type}                   one game type (a solitaire: all players and the latest shared deals)
    /help                               the help texts the server mails, with the server's address
    /play/{KEY}                         a board mail's reply key: the board and its moves; a move POSTed
                                        goes to serve (the play door), never written here (web/play.py)
    /healthz, /static/…
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import gc
import logging
import socket
import traceback
from collections.abc import Generator

import uvicorn
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..gametypes import GAME_TYPES
from ..store import Database
from .clockview import Timers
from .play import PlayDesk, PlayDoor
from .routes import routes
from .site import Site, site_of

log = logging.getLogger("pbmserv.web")
ACTIVE, WAITING, MAX_WAIT = 32, 1024, 1.0
"""requests handled at once, requests waiting for a turn, seconds one may wait (then: 503)"""
RETRY_AFTER = 2
"""seconds a 503 asks the client to wait"""
TRACEBACKS_KEPT = 256
"""distinct error places remembered (their traceback was logged once)"""
GC_THRESHOLDS = (50_000, 20, 20)
"""the garbage collector's thresholds while the archive serves (CPython's: 700, 10, 10).
Under load the objects of the requests in hand (200 of them) outlive a few young
collections, so with the usual thresholds they reached the oldest generation by the
ten thousand and made it collect everything (~80 ms, with every request waiting)
about once a second: in bench/web.py's mix that was most of the p99"""

SECURITY_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        b"base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
]


async def not_found(request: Request, exc: Exception) -> Response:
    """The error page: a 404 says what was not found and links home; others say what failed."""
    detail = exc.detail if isinstance(exc, HTTPException) and exc.status_code == 404 else "that page"
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    if status != 404:
        detail = str(exc.detail) if isinstance(exc, HTTPException) else "The server could not answer this request."
    headers = dict(exc.headers or {}) if isinstance(exc, HTTPException) else {}
    headers["Cache-Control"] = "no-store"
    html = site_of(request).render(
        "not_found.html", what=str(detail), path=request.url.path, status=status, game_types=list(GAME_TYPES)
    )
    return HTMLResponse(html, status_code=status, headers=headers)


PLAIN_500 = b"Error 500: the server could not answer this request.\n"


async def _plain(send: Send, status: int, body: bytes, extra: tuple[tuple[bytes, bytes], ...] = ()) -> None:
    """A small text answer sent straight (no template, nothing that can fail)."""
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode()),
               (b"cache-control", b"no-store"), *extra]  # fmt: skip
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class ErrorLog:
    """Logs a server error as one line; the traceback only the first time its place
    (exception type, file and line where it was raised) is seen."""

    def __init__(self) -> None:
        self.seen: collections.OrderedDict[tuple[str, str, int], int] = collections.OrderedDict()

    def __call__(self, scope: Scope, exc: BaseException) -> None:
        frames = traceback.extract_tb(exc.__traceback__)
        where = (type(exc).__name__, frames[-1].filename, frames[-1].lineno or 0) if frames else (type(exc).__name__, "", 0)
        count = self.seen.pop(where, 0) + 1
        self.seen[where] = count
        while len(self.seen) > TRACEBACKS_KEPT:
            self.seen.popitem(last=False)
        request = f"{scope.get('method', '?')} {scope.get('path', '')!r:.200}"
        line = f"web: 500 for {request}: {type(exc).__name__}: {str(exc)!r:.200}"
        if count == 1:
            log.error("%s", line, exc_info=exc)
        else:
            log.error("%s (%d times from %s:%d; traceback logged the first time)", line, count, where[1], where[2])


class Gate:
    """ASGI middleware: at most ``active`` requests in the app at once, at most
    ``waiting`` waiting (first come, first served), none waiting over ``max_wait``
    seconds; the others are answered 503 at once, with Retry-After."""

    def __init__(self, app: ASGIApp, active: int = ACTIVE, waiting: int = WAITING, max_wait: float = MAX_WAIT) -> None:
        self.app, self.limit, self.max_waiting, self.max_wait = app, active, waiting, max_wait
        self.active = 0
        self.queue: collections.deque[asyncio.Future[None]] = collections.deque()
        self.refused = 0
        """requests answered 503 so far"""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.active < self.limit and not self.queue:
            self.active += 1
        elif not await self._wait():
            self.refused += 1
            await _plain(send, 503, b"Error 503: the server is busy; try again in a moment.\n",
                         ((b"retry-after", str(RETRY_AFTER).encode()),))  # fmt: skip
            return
        try:
            await self.app(scope, receive, send)
        finally:
            self._release()

    async def _wait(self) -> bool:
        """Wait for a turn (handed over by :meth:`_release`); False when there is none."""
        if len(self.queue) >= self.max_waiting:
            return False
        turn = asyncio.get_running_loop().create_future()
        self.queue.append(turn)
        try:
            async with asyncio.timeout(self.max_wait):
                await turn
        except TimeoutError:
            pass
        except BaseException:
            if turn.done() and not turn.cancelled():
                self._release()  # handed a turn just as this request was cancelled: pass it on
            raise
        finally:
            if not turn.done():
                turn.cancel()
            if turn.cancelled():
                with contextlib.suppress(ValueError):  # (not there when _release passed it over)
                    self.queue.remove(turn)
        return not turn.cancelled()

    def _release(self) -> None:
        while self.queue:
            turn = self.queue.popleft()
            if not turn.done():
                turn.set_result(None)  # the turn goes to the next in line
                return
        self.active -= 1


class Outermost:
    """Around all of the app: the security headers on every response (Starlette's own
    error answers included), and an exception that escapes is logged by :class:`ErrorLog`
    and, if nothing was sent yet, answered 500; it never reaches the server (uvicorn
    would log its whole traceback on every request)."""

    def __init__(self, app: ASGIApp, errors: ErrorLog) -> None:
        self.app, self.errors = app, errors

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def send_with_headers(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                names = {k.lower() for k, _ in message.get("headers", [])}
                message["headers"] = list(message.get("headers", [])) + [(k, v) for k, v in SECURITY_HEADERS if k not in names]
            await send(message)

        try:
            await self.app(scope, receive, send_with_headers)
        except Exception as exc:
            self.errors(scope, exc)
            if not started:
                with contextlib.suppress(Exception):
                    await _plain(send_with_headers, 500, PLAIN_500)


class ArchiveApp(Starlette):
    """The Starlette app with :class:`Outermost` and :class:`Gate` outside its own
    middleware (whose ServerErrorMiddleware answers an exception with our 500 page, then
    raises it again: :class:`Outermost` logs it once)."""

    def __init__(
        self, db: Database, server_name: str, public_url: str, address: str = "", play: PlayDesk | None = None,
        timers: Timers | None = None,
    ) -> None:  # fmt: skip
        super().__init__(routes=routes(), exception_handlers={HTTPException: not_found, 404: not_found, Exception: not_found})
        self.state.site = Site(db, server_name, public_url, address, timers)
        self.state.play = play or PlayDesk(None, public_url=public_url)
        self.errors = ErrorLog()
        self.gate: Gate | None = None

    def build_middleware_stack(self) -> ASGIApp:
        self.gate = Gate(super().build_middleware_stack())
        return Outermost(self.gate, self.errors)


def create_app(
    db: Database,
    *,
    server_name: str,
    public_url: str = "",
    address: str = "",
    play: PlayDoor | None = None,
    play_secret: bytes | None = None,
    timers: Timers | None = None,
) -> ArchiveApp:
    """The archive app over ``db`` (already migrated).  ``public_url`` (e.g. the site's
    https root) makes feed ids and links absolute and stable behind a proxy; ``address``
    is the server's own mail address (``[server] address``), which the front page and
    the help show as a ``mailto:`` link (the one address the archive ever shows).
    ``play``: the door the play pages hand moves to (``serve``'s; None: the pages say
    to reply instead), ``play_secret`` the key of their forms' tokens (random if None).
    ``timers``: the server's forfeit time and vacation allowance (``[timers]``), which
    the time left on the pages counts with (the defaults when None)."""
    return ArchiveApp(db, server_name, public_url, address, PlayDesk(play, play_secret, public_url), timers)


class _EmbeddedServer(uvicorn.Server):
    """A uvicorn server that leaves signals to its host (the mail loop owns SIGINT/SIGTERM)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None]:
        yield


def listen_socket(host: str, port: int) -> socket.socket:
    """The archive's listening socket, bound now: a port in use is an OSError for the
    caller at start (a clear line), not uvicorn's ``sys.exit`` later.  Port 0 picks a free port."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    return socket.create_server((host, port), family=family)


async def serve_web(
    app: ASGIApp, host: str, port: int, *, stop: asyncio.Event | None = None, sock: socket.socket | None = None
) -> None:
    """Serve ``app`` with uvicorn in the running event loop until ``stop`` is set (or the
    task is cancelled), on ``sock`` when given (see :func:`listen_socket`), else on a
    socket bound to ``host:port`` here."""
    sock = sock if sock is not None else listen_socket(host, port)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", server_header=False)
    server = _EmbeddedServer(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    waiter = asyncio.create_task(stop.wait()) if stop is not None else None
    thresholds = gc.get_threshold()
    gc.set_threshold(*GC_THRESHOLDS)  # (put back when serving ends)
    try:
        await asyncio.wait([t for t in (task, waiter) if t is not None], return_when=asyncio.FIRST_COMPLETED)
    finally:
        server.should_exit = True
        if waiter is not None:
            waiter.cancel()
        try:
            await task
        finally:
            sock.close()
            gc.set_threshold(*thresholds)
