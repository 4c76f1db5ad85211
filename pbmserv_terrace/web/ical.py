"""A player's deadlines as an iCalendar feed (issue 40 item 7; RFC 5545):
``/players/{U}/deadlines.ics``, one event per board where the player is to move
and the clock runs, at the moment it runs out.

The few lines are written here by hand, as RFC 5545 asks: CRLF line ends, TEXT
values escaped (backslash, semicolon, comma, newline), lines longer than 75
octets folded (never inside a UTF-8 character).  Each event's UID names the
server, the board and its ply, so a calendar that fetches the feed again updates
the same event until the move is made.  DTSTAMP is when the turn began (the
event's information changes only with the board's row), so the same boards give
the same bytes and ETag.

Nothing in the feed is not on the board pages already (the archive is public):
the board, the opponents' userids, the time left and when it runs out.  No
address; a player on vacation has no running clock and so no event (and the end
of a vacation is never shown).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from datetime import datetime
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import Response

from ..gametypes import game_title
from ..store.archive import Archive
from .clockview import TIME_STEP, Waiting
from .pages import board_url, kept_page, known_user, userid_of, waiting_boards
from .site import LIVE_MAX_AGE, Page, Site, site_of

CALENDAR = "text/calendar; charset=utf-8"
PRODID = "-//pbmserv-terrace//deadlines//EN"
FOLD_OCTETS = 75
"""the longest line RFC 5545 §3.1 allows, CRLF not counted"""


def escape_text(value: str) -> str:
    """A TEXT value (RFC 5545 §3.3.11): backslash, semicolon and comma escaped,
    line breaks as ``\\n``, other control characters dropped."""
    value = value.replace("\\", "\\\\").replace(";", "\\;").replace(",", "\\,")
    value = value.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "\\n")
    return "".join(c for c in value if c == "\t" or (c >= " " and c != "\x7f"))


def fold(line: str) -> str:
    """One content line, folded after at most 75 octets (RFC 5545 §3.1: CRLF and
    one space start each continuation), never inside a UTF-8 character."""
    data = line.encode("utf-8")
    if len(data) <= FOLD_OCTETS:
        return line + "\r\n"
    parts, start, limit = [], 0, FOLD_OCTETS
    while len(data) - start > limit:
        end = start + limit
        while end > start and (data[end] & 0xC0) == 0x80:  # (a continuation byte: step back to its character's start)
            end -= 1
        parts.append(data[start:end].decode("utf-8"))
        start, limit = end, FOLD_OCTETS - 1  # (the leading space counts)
    parts.append(data[start:].decode("utf-8"))
    return "\r\n ".join(parts) + "\r\n"


def stamp(when: datetime) -> str:
    """A UTC DATE-TIME (the store keeps naive UTC): ``20261130T140500Z``."""
    return when.strftime("%Y%m%dT%H%M%SZ")


def uid_host(base: str) -> str:
    """The server's host name for UIDs (``public_url``'s, else the request's)."""
    host = urlsplit(base).hostname or "localhost"
    return "".join(c for c in host if c.isalnum() or c in ".-") or "localhost"


def summary(w: Waiting) -> str:
    """``Terrace board 101: your move (vs ben)``."""
    rivals = ", ".join(w.opponents)
    return f"{game_title(w.game.game_type)} board {w.game.board_number}: your move" + (f" (vs {rivals})" if rivals else "")


def description(w: Waiting, deadline: datetime, url: str) -> str:
    """What the event says besides its title: only what stays true while the event
    does (no time left, which would change the feed every minute)."""
    ran = "ran out" if w.time.out else "runs out"
    return f"Your time on this board {ran} at {deadline:%Y-%m-%d %H:%M} UTC. The board: {url}"


def calendar(userid: str, server_name: str, base: str, waiting: Iterable[Waiting]) -> str:
    """The feed: one VEVENT per board where ``userid`` is to move and the clock runs."""
    host = uid_host(base)
    lines = [
        "BEGIN:VCALENDAR",
        "VERSION:2.0",
        f"PRODID:{PRODID}",
        "CALSCALE:GREGORIAN",
        f"X-WR-CALNAME:{escape_text(f'{server_name}: deadlines of {userid}')}",
        "REFRESH-INTERVAL;VALUE=DURATION:PT1H",
        "X-PUBLISHED-TTL:PT1H",
    ]
    for w in waiting:
        deadline = w.time.deadline
        if not w.their_move or deadline is None:
            continue  # (a vote waits without a clock of theirs; on vacation the clock stands still)
        game = w.game
        url = f"{base}{board_url(game)}"
        lines += [
            "BEGIN:VEVENT",
            f"UID:deadline-{game.game_type}-{game.board_number}-ply-{game.ply}.{host}",
            f"DTSTAMP:{stamp(w.time.started)}",
            f"DTSTART:{stamp(deadline)}",
            f"SUMMARY:{escape_text(summary(w))}",
            f"DESCRIPTION:{escape_text(description(w, deadline, url))}",
            f"URL:{url}",
            "TRANSP:TRANSPARENT",
            "END:VEVENT",
        ]
    lines.append("END:VCALENDAR")
    return "".join(fold(line) for line in lines)


async def deadlines(request: Request) -> Response:
    """``/players/{U}/deadlines.ics``: kept as a player page is, and made again when
    its events change or at most every TIME_STEP seconds."""
    wanted = userid_of(request)
    site = site_of(request)
    base = site.base(request)
    return await kept_page(request, ("ics", wanted.lower(), base), lambda site: _make_deadlines(site, wanted, base))


async def _make_deadlines(site: Site, wanted: str, base: str) -> Page:
    marker = await site.marker()
    async with site.db.reading() as session:
        archive = Archive(session)
        user_id, userid, _created = await known_user(archive, wanted)
        waiting = await waiting_boards(site, archive, user_id, userid)
    body = calendar(userid, site.server_name, base, waiting)
    key = ("ics", wanted.lower(), base)
    state = hashlib.blake2b(body.encode(), digest_size=16).digest()
    kept = site.pages.get(key)
    if kept is not None and kept.state == state:
        return kept.again(site.live_ttl, marker, TIME_STEP)
    return Page.of(body, key=f"ics-{userid}", media_type=CALENDAR, max_age=LIVE_MAX_AGE, state=state, ttl=site.live_ttl,
                   marker=marker, lasts=TIME_STEP)  # fmt: skip
