"""The read-only web archive (issue 19): a Starlette app over the store's archive queries.

Layering: web → render, store, rules, games, gametypes, elo only; the mail service is never
imported, and the app never writes.  Every response carries the security headers (a strict
Content-Security-Policy: scripts only from /static/, no inline script), pages carry
an ETag and Cache-Control and answer ``If-None-Match`` with 304.

Modules: :mod:`.site` (what handlers share) ← :mod:`.pages`, :mod:`.feeds` (handlers)
← :mod:`.routes` (the URL table) ← this module (assembly and serving).  Routes:

    /                                   server, game types, active boards, recent results, help link
    /boards/{type}/{N}[?ply=k]          a board (type: a name of gametypes.GAME_TYPES); /boards/{N} → /boards/terrace/{N}
                                        (a board game: picture and move table; a solitaire: the table as text)
    /boards/{type}/{N}.txt              the game record as plain text
    /boards/{type}/{N}/feed.atom        Atom feed, one entry per ply (a solitaire's move)
    /players/{U}, /players/{U}/feed.atom
    /standings                          every game type: Elo tables, the top of each solitaire's ranking
    /standings/{type}                   one game type (a solitaire: all players and the latest shared deals)
    /help, /healthz, /static/…
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Generator

import uvicorn
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..gametypes import GAME_TYPES
from ..store import Database
from .routes import routes
from .site import Site, site_of

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


class SecurityHeaders:
    """ASGI middleware: the security headers on every response, errors and static files included."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {k.lower() for k, _ in message.get("headers", [])}
                message["headers"] = list(message.get("headers", [])) + [(k, v) for k, v in SECURITY_HEADERS if k not in names]
            await send(message)

        await self.app(scope, receive, send_with_headers)


async def not_found(request: Request, exc: Exception) -> Response:
    """The error page: a 404 says what was not found and links home; others say what failed."""
    detail = exc.detail if isinstance(exc, HTTPException) and exc.status_code == 404 else "that page"
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    if status != 404:
        detail = str(exc.detail) if isinstance(exc, HTTPException) else "an error"
    html = site_of(request).render(
        "not_found.html", what=str(detail), path=request.url.path, status=status, game_types=list(GAME_TYPES)
    )
    return HTMLResponse(html, status_code=status, headers={"Cache-Control": "no-store"})


def create_app(db: Database, *, server_name: str, public_url: str = "") -> Starlette:
    """The archive app over ``db`` (already migrated).  ``public_url`` (e.g. the site's
    https root) makes feed ids and links absolute and stable behind a proxy."""
    app = Starlette(routes=routes(), exception_handlers={HTTPException: not_found, 404: not_found})
    app.state.site = Site(db, server_name, public_url)
    app.add_middleware(SecurityHeaders)
    return app


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
