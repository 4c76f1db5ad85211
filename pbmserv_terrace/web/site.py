"""What every handler of the archive shares: the :class:`Site` (database, names, the
rating replay, cached pages), the template environment, the cached response with
its ETag, and the 404 that says what was missing.

The handler modules (:mod:`.pages`, :mod:`.feeds`) import this; :mod:`.routes` imports
the handlers and :mod:`.app` assembles the routes, so the imports run one way only.
"""

from __future__ import annotations

import hashlib
from functools import cache
from typing import Any
from urllib.parse import quote

import jinja2
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from ..render import templates_dir
from ..store import Database
from .ratings import RatingHistory

LIVE_MAX_AGE, FINAL_MAX_AGE = 15, 300
"""seconds a page of an active / finished game may be reused without asking"""


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
        self.standings_pages: dict[str, tuple[object, str]] = {}
        """the rendered standings pages ("" for all game types, else the type) and the
        version of the ratings and ended games each shows (see pages.standings)"""
        self.player_pages: dict[str, tuple[object, str]] = {}
        """each player's rendered page and the state it shows (see pages.player)"""

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
