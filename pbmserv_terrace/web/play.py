"""The play page (issue 39 part 2): ``/play/KEY``, a board mail's reply key opened in
a browser, where its player taps a piece, one of its targets, and confirms.

The archive never writes.  The page asks its *door* (:data:`PlayDoor`) what the
key's page shows and hands it the move: under ``serve`` the door is the
service's ``web_play`` (across a socket from the web process, :mod:`.process`),
which runs the key's checks and plays the move as a keyed Reply's, exactly once
(the key names the board's version: a second post finds it ``used``).  Under
``pbmserv-terrace web`` alone there is no door: the page says to reply instead.

Safety: the key is only ever in this page's own address.  Every answer carries
``Referrer-Policy: no-referrer`` (no link or form leaks it), ``Cache-Control:
no-store``, a CSP that allows this origin's script and form only, ``noindex``.
No cookies.  A POST carries a token bound to the key (an HMAC under a secret of
the serving process, :meth:`PlayDesk.token`) and, when the browser sends an
``Origin`` other than ``null`` (no-referrer makes it ``null``), this site's own;
requests are rate-limited per client address and per key (:class:`Buckets`).
Without JavaScript the page is a form of radio buttons, one per move, grouped by
piece, and a confirmation page; ``/static/play.js`` makes it tap, tap, confirm.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from starlette.requests import ClientDisconnect, Request
from starlette.responses import HTMLResponse, Response

from ..gametypes import GAME_TYPES, board_rules
from .site import site_of

PlayDoor = Callable[[str, str | None], Awaitable[Mapping[str, Any]]]
"""(key, move or None) → the page's values (``service.webplay.WebPlay.as_dict``)"""

KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz234567")
KEY_MAX = 40
"""a longer path word is no key (reply keys are 31 characters)"""
BODY_MAX = 2048
"""bytes of a POST read (a move and a token need ~120)"""
MOVE_MAX = 40
CLIENT_BURST, CLIENT_RATE = 30, 0.5
"""requests one client address may make at once, and per second after that"""
KEY_BURST, KEY_RATE = 20, 0.2
"""requests for one key at once, and per second after that"""
BUCKETS_KEPT = 10_000
"""clients (keys) whose buckets are remembered; the least recently seen go first"""
RETRY_AFTER = 30
HEADERS = {
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "X-Robots-Tag": "noindex, nofollow",
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
}
STATUS_CODES = {"invalid": 403, "stale": 409, "used": 409, "illegal": 422, "busy": 503, "closed": 503, "limited": 429,
                "forbidden": 403, "not-allowed": 405}  # fmt: skip
"""HTTP status of each page that is not a plain 200"""
BLANK: Mapping[str, Any] = {"status": "busy", "message": "", "game_type": "", "board": 0, "title": "", "userid": "",
                            "position": "", "last_move": "", "ply": 0, "lines": [], "players": [], "move": "",
                            "mailed": [], "others": 0}  # fmt: skip
"""a page's values when the door said nothing of them (a page refused before asking it)"""


class Buckets:
    """Token buckets by name: ``burst`` requests at once, then ``rate`` per second."""

    def __init__(self, burst: float, rate: float, kept: int = BUCKETS_KEPT) -> None:
        self.burst, self.rate, self.kept = burst, rate, kept
        self.levels: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def take(self, name: str, now: float | None = None) -> bool:
        """One request of ``name``: False when its bucket is empty."""
        now = time.monotonic() if now is None else now
        level, then = self.levels.pop(name, (self.burst, now))
        level = min(self.burst, level + (now - then) * self.rate)
        ok = level >= 1
        self.levels[name] = (level - 1 if ok else level, now)
        while len(self.levels) > self.kept:
            self.levels.popitem(last=False)
        return ok


class PlayDesk:
    """What the play pages share: the door, the token secret, the buckets."""

    def __init__(self, door: PlayDoor | None, secret: bytes | None = None, public_url: str = "") -> None:
        self.door = door
        self.secret = secret or os.urandom(32)
        self.public_origin = origin_of(public_url) if public_url else ""
        self.clients = Buckets(CLIENT_BURST, CLIENT_RATE)
        self.keys = Buckets(KEY_BURST, KEY_RATE)

    def token(self, key: str) -> str:
        """The form's token for ``key`` (bound to it: a form of one key is no good for another)."""
        return hmac.new(self.secret, b"play-form:" + key.encode(), hashlib.sha256).hexdigest()[:32]

    def token_ok(self, key: str, token: str) -> bool:
        return hmac.compare_digest(self.token(key).encode(), token.encode("utf-8", "replace")[:64])


def origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


def desk_of(request: Request) -> PlayDesk:
    desk: PlayDesk = request.app.state.play
    return desk


def is_key(text: str) -> bool:
    return 0 < len(text) <= KEY_MAX and set(text) <= KEY_CHARS


def choices(values: Mapping[str, Any]) -> list[tuple[str, list[tuple[str, str, bool]]]]:
    """The moves of a ``ready`` page, grouped by piece (the game's ``move_choices``)."""
    rules = board_rules(str(values["game_type"]))
    return rules.move_choices(rules.load(str(values["position"])))


def picture(values: Mapping[str, Any]) -> str:
    """The board as an inline ``<svg>`` (the mail's drawing, through the game's rules)."""
    game_type, where = str(values.get("game_type", "")), str(values.get("position", ""))
    if game_type not in GAME_TYPES or GAME_TYPES[game_type].family != "board" or not where:
        return ""
    rules = board_rules(game_type)
    svg = rules.picture_svg(rules.load(where), str(values.get("last_move", "")))
    start = svg.find("<svg")
    return svg[start:] if start >= 0 else ""


def page_of(request: Request, key: str, values: Mapping[str, Any], *, status: str = "", move: str = "") -> Response:
    """The play page for ``values`` (the door's answer); ``status`` overrides the
    answer's (``confirm``: the no-JavaScript step before the move is played)."""
    desk = desk_of(request)
    values = {**BLANK, **values}
    status = status or str(values["status"])
    groups = choices(values) if status in ("ready", "illegal", "confirm") and values.get("position") else []
    html = site_of(request).render(
        "play.html",
        status=status,
        page=values,
        key=key,
        token=desk.token(key),
        groups=groups,
        svg=picture(values),
        move=move,
        board_path=f"/boards/{values['game_type']}/{values['board']}" if values.get("game_type") else "",
    )
    return HTMLResponse(html, status_code=STATUS_CODES.get(status, 200), headers=HEADERS)


def plain(request: Request, status: str, message: str, key: str = "") -> Response:
    """A page with one sentence and no board (refused before the door was asked)."""
    response = page_of(request, key, {"status": status, "message": message})
    if status == "limited":
        response.headers["Retry-After"] = str(RETRY_AFTER)
    return response


async def form_of(request: Request) -> dict[str, str] | None:
    """The POSTed form's fields (first of each), or None when the body is too big."""
    body = b""
    try:
        async for chunk in request.stream():
            body += chunk
            if len(body) > BODY_MAX:
                return None
    except ClientDisconnect:
        return None
    fields: dict[str, str] = {}
    for name, value in parse_qsl(body.decode("utf-8", "replace"), max_num_fields=8):
        fields.setdefault(name, value)
    return fields


def same_origin(request: Request, desk: PlayDesk) -> bool:
    """The POST comes from this site's own page (by its Origin, else Referer, when sent)."""
    sent = request.headers.get("origin") or ""
    if not sent:
        referer = request.headers.get("referer") or ""
        sent = origin_of(referer) if referer else ""
    if not sent or sent == "null":
        return True  # (no-referrer: the browser says nothing; the token decides)
    own = {origin_of(str(request.base_url)), desk.public_origin} - {""}
    return sent.lower() in own


async def play(request: Request) -> Response:
    """GET: the key's page.  POST: a move from it (``confirm=1``), or without
    ``confirm`` the confirmation page of the chosen move (the no-JavaScript form)."""
    desk = desk_of(request)
    key = str(request.path_params["key"]).lower()
    if request.method not in ("GET", "HEAD", "POST"):
        response = plain(request, "not-allowed", "A play page is read (GET) or answered by its form (POST).")
        response.headers["Allow"] = "GET, HEAD, POST"
        return response
    if not is_key(key):
        return plain(request, "invalid", "This play link is not valid: it is not one the server made.")
    client = request.client.host if request.client else "-"
    if not desk.clients.take(client) or not desk.keys.take(key):
        return plain(request, "limited", f"Too many requests: wait {RETRY_AFTER} seconds, then load the page again.", key)
    if desk.door is None:
        return plain(request, "closed", "This archive cannot take moves (it runs without the mail server): "
                     "reply to your board mail with your move instead.", key)  # fmt: skip
    move: str | None = None
    confirmed = False
    if request.method == "POST":
        fields = await form_of(request)
        if fields is None:
            return plain(request, "forbidden", "This request is too big to be a move.", key)
        if not same_origin(request, desk) or not desk.token_ok(key, fields.get("token", "")):
            return plain(request, "forbidden", "This form was not made by this page (or has expired): "
                         "open the play link from your board mail again.", key)  # fmt: skip
        move = fields.get("move", "").strip()[:MOVE_MAX] or None
        confirmed = fields.get("confirm") == "1"
    try:
        values = await desk.door(key, move if confirmed else None)
    except Exception:  # the server is away (restarting) or did not answer in time
        return plain(request, "busy", "The server cannot take moves right now: try again in a minute.", key)
    if request.method == "POST" and not confirmed and values.get("status") == "ready":
        legal = {text for _, targets in choices(values) for _, text, _ in targets}
        if move in legal:
            return page_of(request, key, values, status="confirm", move=move or "")
        return page_of(request, key, {**values, "status": "illegal",
                                      "message": "Choose one of the moves below, then confirm it."})  # fmt: skip
    return page_of(request, key, values)
