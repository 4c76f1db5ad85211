"""What every handler of the archive shares: the :class:`Site` (database, names, the
rating replay, cached pages), the template environment, the cached response with
its ETag, and the 404 that says what was missing.

Pages are kept as bytes with their ETag (:class:`Page`, :class:`Pages`).  A page of a
finished board cannot change but for its players' current ratings, so it is served
for ``FINAL_MAX_AGE`` seconds (what its Cache-Control already lets any cache do)
without asking the database; a live board's page for ``LIVE_TTL`` seconds (its
Cache-Control allows 15), and after that again while the board's row (ply, position,
last move, votes, comment, seats) and its players' ratings are the same, for the
price of the one statement that reads them; the front page for ``HOME_TTL`` seconds.  Pages being made are made once: the requests that want the
same page meanwhile wait for it (:meth:`Pages.once`), so a board that 200 clients
watch is rendered once per move, not 200 times.

The handler modules (:mod:`.pages`, :mod:`.feeds`) import this; :mod:`.routes` imports
the handlers and :mod:`.app` assembles the routes, so the imports run one way only.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
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
LIVE_TTL = 1.0
"""seconds a page of what changes (a live board, a player, the standings) is served as it
was read; then what it shows is read again (and the page rendered again if that changed)"""
HOME_TTL = 2.0
"""seconds the front page is served as it was rendered (it lists every active board)"""
PAGES_KEPT_BYTES = 64 << 20
"""rendered pages kept, in bytes of their bodies (the least recently used go first)"""


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
        self.live_ttl = LIVE_TTL
        self.pages = Pages(PAGES_KEPT_BYTES)
        """rendered boards, feeds, players, standings, the front page and the help (see :class:`Pages`)"""

    def base(self, request: Request) -> str:
        """The absolute URL of the site: ``public_url`` when configured, else as requested."""
        return self.public_url or str(request.base_url).rstrip("/")

    def render(self, template: str, **values: Any) -> str:
        return environment().get_template(template).render(server_name=self.server_name, **values)


def site_of(request: Request) -> Site:
    site: Site = request.app.state.site
    return site


@dataclass(frozen=True, slots=True)
class Page:
    """A rendered page as it is sent: the body's bytes, its ETag, and what it shows."""

    body: bytes
    etag: str
    media_type: str
    max_age: int
    state: object = None
    """what the page was made from (a live board's row and ratings): the page is good while
    the database says the same"""
    until: float = 0.0
    """``time.monotonic()`` until which the page is served without asking the database"""

    @classmethod
    def of(
        cls, body: str, *, key: str, media_type: str = "text/html; charset=utf-8", max_age: int = LIVE_MAX_AGE,
        state: object = None, ttl: float = 0.0,
    ) -> Page:  # fmt: skip
        """The page of ``body`` with a weak ETag (what it shows: ``key``, plus a hash of the
        bytes, so a rating or comment change elsewhere also changes it)."""
        data = body.encode("utf-8")
        etag = f'W/"{key}-{hashlib.blake2b(data, digest_size=10).hexdigest()}"'
        return cls(data, etag, media_type, max_age, state, time.monotonic() + ttl if ttl else 0.0)

    def fresh(self) -> bool:
        return self.until > time.monotonic()

    def response(self, request: Request) -> Response:
        """A 200, or a 304 when the request's ``If-None-Match`` names this page."""
        headers = {"ETag": self.etag, "Cache-Control": f"public, max-age={self.max_age}", "Vary": "Accept-Encoding"}
        wanted = request.headers.get("if-none-match", "")
        if wanted and (
            wanted.strip() == "*" or self.etag in [t.strip() for t in wanted.split(",")] or self.etag[2:] in wanted.split(",")
        ):
            return Response(status_code=304, headers=headers)
        return Response(self.body, media_type=self.media_type, headers=headers)


class Pages:
    """Rendered pages by key, the least recently used dropped beyond ``budget`` bytes,
    and the pages being made (one maker per key at a time)."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.size = 0
        self._kept: OrderedDict[Hashable, Page] = OrderedDict()
        self._making: dict[Hashable, asyncio.Future[Page]] = {}

    def __len__(self) -> int:
        return len(self._kept)

    def get(self, key: Hashable) -> Page | None:
        page = self._kept.get(key)
        if page is not None:
            self._kept.move_to_end(key)
        return page

    def fresh(self, key: Hashable) -> Page | None:
        """The page of ``key`` if it may be served without asking the database."""
        page = self._kept.get(key)
        if page is None or not page.fresh():
            return None
        self._kept.move_to_end(key)
        return page

    def put(self, key: Hashable, page: Page) -> None:
        old = self._kept.pop(key, None)
        if old is not None:
            self.size -= len(old.body)
        if len(page.body) > self.budget:
            return
        self._kept[key] = page
        self.size += len(page.body)
        while self.size > self.budget:
            _, dropped = self._kept.popitem(last=False)
            self.size -= len(dropped.body)

    async def once(self, key: Hashable, make: Callable[[], Awaitable[Page]]) -> Page:
        """``make()`` the page of ``key`` and keep it; a request that wants the same key
        while it is being made waits for that page (or that error) instead of making it too."""
        making = self._making.get(key)
        if making is not None:
            try:
                return await asyncio.shield(making)
            except asyncio.CancelledError:
                if making.cancelled() and not _cancelling():
                    return await self.once(key, make)  # its maker was cancelled, not this request
                raise
        making = self._making[key] = asyncio.get_running_loop().create_future()
        try:
            page = await make()
        except Exception as exc:
            making.set_exception(exc)
            making.exception()  # (retrieved: no "never retrieved" warning when nobody waited)
            raise
        except BaseException:
            making.cancel()
            raise
        finally:
            del self._making[key]
        self.put(key, page)
        making.set_result(page)
        return page


def _cancelling() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


class NotFound(HTTPException):
    """A 404 that says what was not found."""

    def __init__(self, what: str) -> None:
        super().__init__(404, what)
