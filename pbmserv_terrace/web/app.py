"""The read-only web archive (issue 19): a Starlette app over the store's archive queries.

Layering: web → render, store, rules only; the mail service is never imported, and
the app never writes.  Every response carries the security headers (a strict
Content-Security-Policy: scripts only from /static/, no inline script), pages carry
an ETag and Cache-Control and answer ``If-None-Match`` with 304.

Routes (board numbers are per game type, so the type is part of a board's address):

    /                                   server, game types, active boards, recent results, help link
    /boards/{type}/{N}[?ply=k]          a board (type: terrace | terrace6x6); /boards/{N} → /boards/terrace/{N}
    /boards/{type}/{N}.txt              the game record as plain text
    /boards/{type}/{N}/feed.atom        Atom feed, one entry per ply
    /players/{U}, /players/{U}/feed.atom
    /standings, /help, /healthz, /static/…
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import socket
from collections.abc import Generator
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2
import uvicorn
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..render import templates_dir
from ..store import Database
from .ratings import RatingHistory

STATIC_DIR = Path(__file__).resolve().parent / "static"
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
LIVE_MAX_AGE, FINAL_MAX_AGE = 15, 300
"""seconds a page of an active / finished game may be reused without asking"""


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


@cache
def environment() -> jinja2.Environment:
    """HTML and XML templates in templates/web/, autoescaped: player text is always escaped."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir() / "web")),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["player_url"] = lambda userid: "/players/" + quote(str(userid), safe="")
    return env


class Site:
    """What every handler needs: the database, names and URLs, the rating replay."""

    def __init__(self, db: Database, server_name: str, public_url: str) -> None:
        self.db = db
        self.server_name = server_name
        self.public_url = public_url.rstrip("/")
        self.ratings = RatingHistory()
        self.standings: tuple[tuple[int, int, float], str] | None = None
        """the rendered standings page and the ratings version it shows"""

    def base(self, request: Request) -> str:
        """The absolute URL of the site: ``public_url`` when configured, else as requested."""
        return self.public_url or str(request.base_url).rstrip("/")

    def render(self, template: str, **values: Any) -> str:
        return environment().get_template(template).render(server_name=self.server_name, **values)


def site_of(request: Request) -> Site:
    site: Site = request.app.state.site
    return site


def cached(
    request: Request, body: str, *, key: str, media_type: str = "text/html; charset=utf-8", max_age: int = LIVE_MAX_AGE
) -> Response:
    """A 200 with a weak ETag (what it shows: ``key``, plus a hash of the bytes, so a
    rating or comment change elsewhere also changes it), or a 304 when it matches."""
    data = body.encode("utf-8")
    etag = f'W/"{key}-{hashlib.blake2b(data, digest_size=10).hexdigest()}"'
    headers = {"ETag": etag, "Cache-Control": f"public, max-age={max_age}", "Vary": "Accept-Encoding"}
    wanted = request.headers.get("if-none-match", "")
    if wanted and (wanted.strip() == "*" or etag in [t.strip() for t in wanted.split(",")] or etag[2:] in wanted.split(",")):
        return Response(status_code=304, headers=headers)
    return Response(data, media_type=media_type, headers=headers)


class NotFound(HTTPException):
    """A 404 that says what was not found."""

    def __init__(self, what: str) -> None:
        super().__init__(404, what)


async def not_found(request: Request, exc: Exception) -> Response:
    detail = exc.detail if isinstance(exc, HTTPException) and exc.status_code == 404 else "that page"
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    if status != 404:
        detail = str(exc.detail) if isinstance(exc, HTTPException) else "an error"
    html = site_of(request).render("not_found.html", what=str(detail), path=request.url.path, status=status)
    return HTMLResponse(html, status_code=status, headers={"Cache-Control": "no-store"})


def create_app(db: Database, *, server_name: str, public_url: str = "") -> Starlette:
    """The archive app over ``db`` (already migrated).  ``public_url`` (e.g. the site's
    https root) makes feed ids and links absolute and stable behind a proxy."""
    from . import feeds, pages

    routes = [
        Route("/", pages.home),
        Route("/help", pages.help_page),
        Route("/standings", pages.standings),
        Route("/healthz", pages.healthz),
        Route("/boards/{number:int}", pages.board_redirect),
        Route("/boards/{number:int}.txt", pages.board_redirect),
        Route("/boards/{number:int}/feed.atom", pages.board_redirect),
        Route("/boards/{game_type}/{number:int}", pages.board),
        Route("/boards/{game_type}/{number:int}.txt", feeds.board_text),
        Route("/boards/{game_type}/{number:int}/feed.atom", feeds.board_feed),
        Route("/players/{userid}", pages.player),
        Route("/players/{userid}/feed.atom", feeds.player_feed),
        Mount("/static", app=StaticFiles(directory=str(STATIC_DIR)), name="static"),
    ]
    app = Starlette(routes=routes, exception_handlers={HTTPException: not_found, 404: not_found})
    app.state.site = Site(db, server_name, public_url)
    app.add_middleware(SecurityHeaders)
    return app


class _EmbeddedServer(uvicorn.Server):
    """A uvicorn server that leaves signals to its host (the mail loop owns SIGINT/SIGTERM)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None]:
        yield


async def serve_web(app: ASGIApp, host: str, port: int, *, stop: asyncio.Event | None = None) -> None:
    """Serve ``app`` with uvicorn in the running event loop until ``stop`` is set (or the
    task is cancelled).  The socket is bound here first, so a port in use raises
    OSError to the caller instead of uvicorn's ``sys.exit``; port 0 picks a free port."""
    sock = socket.create_server((host, port))
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
