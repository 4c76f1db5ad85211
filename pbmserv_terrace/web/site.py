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

When its time is up a page is first extended without a statement of its own if
nothing at all was committed to the database since it was made or last checked
(:class:`Changes`: one reading of the database's
:class:`~pbmserv_terrace.store.archive.CommitMarker` every ``MARKER_INTERVAL``
seconds at most, shared by every request; the page keeps the reading taken before
its statements ran).  A commit is therefore shown within the page's time, as
without the marker; while the database changes, each page asks for itself.

The handler modules (:mod:`.pages`, :mod:`.feeds`) import this; :mod:`.routes` imports
the handlers and :mod:`.app` assembles the routes, so the imports run one way only.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gzip
import hashlib
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable, Iterable
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any
from urllib.parse import quote

import jinja2
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from ..render import templates_dir
from ..store import Database, utcnow
from ..store.archive import CommitMarker
from .clockview import Timers
from .ratings import RatingHistory

LIVE_MAX_AGE, FINAL_MAX_AGE = 15, 300
"""seconds a page of an active / finished game may be reused without asking"""
LIVE_TTL = 1.0
"""seconds a page of what changes (a live board, a player, the standings) is served as it
was read; then what it shows is read again (and the page rendered again if that changed)"""
HOME_TTL = 2.0
"""seconds the front page is served as it was rendered (it lists every active board)"""
PAGES_KEPT_BYTES = 64 << 20
"""rendered pages kept, in bytes of their gzipped bodies (the least recently used go first)"""
GZIP_LEVEL = 6
"""how hard a page is compressed, once, when it is made"""


def accepts_gzip(header: str) -> bool:
    """An ``Accept-Encoding`` header admits gzip (``gzip``, ``gzip;q=0.5``, ``*``; not ``gzip;q=0``)."""
    for item in header.lower().split(",")[:20]:
        coding, _, params = item.strip().partition(";")
        if coding.strip() in ("gzip", "x-gzip", "*"):
            q = params.strip().removeprefix("q=").strip() if params.strip().startswith("q=") else "1"
            try:
                return float(q) > 0
            except ValueError:
                return False
    return False
MARKER_INTERVAL = 0.1
"""seconds a reading of the database's commit marker is used for (then it is read again)"""


@cache
def environment() -> jinja2.Environment:
    """HTML and XML templates in templates/web/, autoescaped: player text is always escaped."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir() / "web")),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
        auto_reload=False,  # (else a stat of each template file on every rendering)
    )
    env.filters["player_url"] = lambda userid: "/players/" + quote(str(userid), safe="")
    env.filters["mailto"] = mailto
    env.filters["result_words"] = lambda result, players=(): result_words(str(result or ""), players)
    return env


def mailto(address: str, subject: str = "help") -> str:
    """A ``mailto:`` URL of ``address`` with ``subject`` (the first command to send)."""
    return f"mailto:{quote(address, safe='@+')}?subject={quote(subject, safe='')}"


def result_words(result: str, players: Iterable[str] = ()) -> str:
    """A stored result as a visitor reads it, in the past and without nested
    parentheses: "ann wins (ben resigned)" → "ann won: ben resigned"; a reason that
    says what the winner did names them ("ann wins (captured the T)" → "ann won: ann
    captured the T").  Other results (draws, a solitaire's) are as stored."""
    winner, wins, why = result.partition(" wins (")
    if not (wins and winner and why.endswith(")")):
        return result
    why = why[:-1]
    if not any(why == p or why.startswith(p + " ") for p in (*players, winner)):
        why = f"{winner} {why}"
    return f"{winner} won: {why}"


class Site:
    """What every handler needs: the database, names and URLs, the rating replay."""

    def __init__(
        self, db: Database, server_name: str, public_url: str, address: str = "", timers: Timers | None = None
    ) -> None:
        self.db = db
        self.server_name = server_name
        self.address = address
        """the server's own mail address (``[server] address``: where players mail commands;
        "" = not known, the pages then say "the server's address"); never a player's"""
        self.public_url = public_url.rstrip("/")
        self.ratings = RatingHistory()
        self.live_ttl = LIVE_TTL
        self.pages = Pages(PAGES_KEPT_BYTES)
        """rendered boards, feeds, players, standings, the front page and the help (see :class:`Pages`)"""
        self.changes = Changes(CommitMarker(db), MARKER_INTERVAL)
        self.timers = timers or Timers()
        """the server's forfeit time and vacation allowance (what a time left counts with)"""
        self.now: Callable[[], datetime] = utcnow
        """the moment a time left is counted from (naive UTC; a test may set it)"""

    async def marker(self) -> object:
        """The commit marker to keep with a page whose statements are about to run (None
        when live pages are not kept at all, ``live_ttl`` 0: then no statement for it)."""
        return (await self.changes.now())[0] if self.live_ttl else None

    async def kept(self, key: Hashable) -> Page | None:
        """The kept page of ``key`` if it may be served without its own statements: it is
        fresh, or nothing was committed since the marker it was made (or checked) with
        was read; then it is kept for its time again, counted from the marker's reading."""
        page = self.pages.fresh(key)
        if page is not None:
            return page
        page = self.pages.get(key)
        if page is None or page.marker is None or not page.ttl:
            return None
        marker, read_at = await self.changes.now()
        until = min(read_at + page.ttl, page.expires)
        if marker != page.marker or until <= time.monotonic():
            return None
        if self.pages.get(key) is not page:  # (made again meanwhile)
            return self.pages.fresh(key)
        page = dataclasses.replace(page, until=until)
        self.pages.put(key, page)
        return page

    def base(self, request: Request) -> str:
        """The absolute URL of the site: ``public_url`` when configured, else as requested."""
        return self.public_url or str(request.base_url).rstrip("/")

    def render(self, template: str, **values: Any) -> str:
        return environment().get_template(template).render(server_name=self.server_name, server_address=self.address, **values)


def site_of(request: Request) -> Site:
    site: Site = request.app.state.site
    return site


@dataclass(frozen=True, slots=True)
class Page:
    """A rendered page as it is sent: the body's bytes gzipped, its ETag, and what it shows.

    Kept compressed (HTML tables shrink ~8x): the cache holds that many more pages in
    its budget (issue 36: the mix of 2,000 player pages and the hot boards did not fit
    in 64 MB uncompressed, and pages dropped were asked for again at once), a client
    that accepts gzip (every browser) gets these bytes as they are, and one that does
    not gets them inflated (~0.1 ms for a page of 40 kB)."""

    gzipped: bytes
    etag: str
    media_type: str
    max_age: int
    state: object = None
    """what the page was made from (a live board's row and ratings): the page is good while
    the database says the same"""
    until: float = 0.0
    """``time.monotonic()`` until which the page is served without asking the database"""
    ttl: float = 0.0
    """seconds the page is kept at a time"""
    marker: object = None
    """the database's commit marker read before the statements that made or checked the
    page (None: none; the page asks for itself when its time is up)"""
    compressed: bool = True
    """``gzipped`` is the body gzipped (a text); False: the body as it is (a PNG, deflated already)"""
    expires: float = float("inf")
    """``time.monotonic()`` after which the page is made again even if nothing was committed
    (it shows a time left, which runs with the clock: issue 40)"""

    @classmethod
    def of(
        cls, body: str | bytes, *, key: str, media_type: str = "text/html; charset=utf-8", max_age: int = LIVE_MAX_AGE,
        state: object = None, ttl: float = 0.0, marker: object = None, lasts: float | None = None,
    ) -> Page:  # fmt: skip
        """The page of ``body`` with a weak ETag (what it shows: ``key``, plus a hash of the
        bytes, so a rating or comment change elsewhere also changes it).  A text is kept
        gzipped; bytes (a picture, compressed already) as they are.  ``lasts``: seconds
        the page stays true at most (it shows a time left), None = until what it shows changes."""
        data = body.encode("utf-8") if isinstance(body, str) else body
        etag = f'W/"{key}-{hashlib.blake2b(data, digest_size=10).hexdigest()}"'
        compressed = isinstance(body, str)
        packed = gzip.compress(data, compresslevel=GZIP_LEVEL, mtime=0) if compressed else data
        now = time.monotonic()
        expires = now + lasts if lasts is not None else float("inf")
        until = min(now + ttl, expires) if ttl else 0.0
        return cls(packed, etag, media_type, max_age, state, until, ttl, marker, compressed, expires)

    @property
    def body(self) -> bytes:
        """The page's bytes (inflated)."""
        return gzip.decompress(self.gzipped) if self.compressed else self.gzipped

    def again(self, ttl: float, marker: object, lasts: float | None = None) -> Page:
        """This page, found the same by the database (``marker`` read before): kept ``ttl``
        seconds again (``lasts``: and true for that many seconds more, see :meth:`of`)."""
        now = time.monotonic()
        expires = now + lasts if lasts is not None else self.expires
        return dataclasses.replace(self, until=min(now + ttl, expires) if ttl else 0.0, ttl=ttl, marker=marker,
                                   expires=expires)  # fmt: skip

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
        if self.compressed and accepts_gzip(request.headers.get("accept-encoding", "")):
            return Response(self.gzipped, media_type=self.media_type, headers={**headers, "Content-Encoding": "gzip"})
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
            self.size -= len(old.gzipped)
        if len(page.gzipped) > self.budget:
            return
        self._kept[key] = page
        self.size += len(page.gzipped)
        while self.size > self.budget:
            _, dropped = self._kept.popitem(last=False)
            self.size -= len(dropped.gzipped)

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


class Changes:
    """The database's commit marker, read at most once every ``interval`` seconds (one
    reading at a time, which the requests that want it meanwhile share)."""

    def __init__(self, marker: CommitMarker, interval: float) -> None:
        self.marker, self.interval = marker, interval
        self._value: object = None
        self._read_at = -float("inf")
        self._reading: asyncio.Future[tuple[object, float]] | None = None

    async def now(self) -> tuple[object, float]:
        """(marker, ``time.monotonic()`` when its reading began): no older than ``interval``."""
        if time.monotonic() - self._read_at < self.interval:
            return self._value, self._read_at
        if self._reading is not None:
            return await asyncio.shield(self._reading)
        reading = self._reading = asyncio.get_running_loop().create_future()
        try:
            started = time.monotonic()
            value = await self.marker.read()
        except BaseException:
            reading.set_result((None, started))  # (read() answers None for its own errors)
            raise
        finally:
            self._reading = None
        self._value, self._read_at = value, started
        reading.set_result((value, started))
        return value, started


def _cancelling() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


class NotFound(HTTPException):
    """A 404 that says what was not found."""

    def __init__(self, what: str) -> None:
        super().__init__(404, what)
