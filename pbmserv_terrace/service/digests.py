"""Digests (issue 40 items 1 and 2): one or two mails a day instead of a mail per
move, and one Reply that moves on several boards.

``change digest U P daily HH:MM [ZONE]`` (or ``twice HH:MM HH:MM [ZONE]``, or
``off``) sets :attr:`User.digest` and when the next one is due
(:attr:`User.digest_next_at`, UTC).  From then on a routine board mail (a move, a
draw offer: :func:`.boards.mail_game` with a headline, on a board still in play)
that the player did not cause is not queued for them: its headline is held as a
:class:`~pbmserv_terrace.store.DigestEntry` in the same transaction
(:func:`.boards.send_board`).  New boards, ends of games, chat, reminders, errors
and the answers to the player's own mails go at once.

At the digest's time :func:`send_due` (run by :meth:`Service.run_timers`) writes
one mail listing every board where it is the player's turn (opponents, last
move, time left, the board; a picture per board for players with pictures), then
what happened on their other boards, with a Reply-To whose key names a
:class:`~pbmserv_terrace.store.Digest` row (the boards and their versions); the
entries are marked told and the next time is set in the transaction that queues
the mail, so a digest is sent exactly once, however the server stops.

A Reply to a digest holds a line per board (``101 d2-e3``, ``102: c7-c6 #4``,
``103 resign``): :func:`reply_lines` reads them; :mod:`.keyed` checks each against
its board and runs it as a keyed reply would, and :func:`summary` answers with
one mail.
"""

from __future__ import annotations

import functools
import re
import zoneinfo
from dataclasses import dataclass, field
from datetime import UTC, datetime, time, timedelta
from typing import Any

from ..clocks import clock_of, duration
from ..gametypes import GAME_TYPES, board_rules, game_title
from ..render import render
from ..store import Digest, Digests, Game, User
from .boards import board_url, example_move, position, seat_by_army, seat_of
from .context import CommandError, Ctx, Mail
from .deadlines import away, seconds_left
from .replykeys import board_version, key_address, make_digest_key

MAX_LINES = 50
"""lines of a Reply to a digest that are read (one per board)"""
MAX_TIMES = 2
_CLOCK = re.compile(r"^([01]?\d|2[0-3]):([0-5]\d)$")
_ZONE = re.compile(r"^[A-Za-z][A-Za-z0-9_+-]{0,30}(?:/[A-Za-z0-9_+-]{1,30}){0,2}$")
USAGE = "change digest USERID PASSWORD daily HH:MM [TIMEZONE] | twice HH:MM HH:MM [TIMEZONE] | off"


@functools.cache
def _zones() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones())


def zone_of(name: str) -> zoneinfo.ZoneInfo:
    """A time zone by its IANA name (``Europe/Paris``, ``UTC``), checked against the
    list the system knows (never a path)."""
    if name.upper() == "UTC":
        return zoneinfo.ZoneInfo("UTC")
    if not _ZONE.match(name) or name not in _zones():
        raise CommandError(f"'{name[:40]}' is not a time zone the server knows; write it as Europe/Paris, America/New_York or UTC",
                           USAGE)  # fmt: skip
    return zoneinfo.ZoneInfo(name)


def parse_digest(words: list[str]) -> dict[str, Any] | None:
    """The words after ``change digest U P``: the digest's settings, or None (off)."""
    if not words:
        raise CommandError("'change digest' is followed by daily HH:MM, twice HH:MM HH:MM, or off", USAGE)
    how, rest = words[0].lower(), words[1:]
    if how == "off" and not rest:
        return None
    count = {"daily": 1, "twice": MAX_TIMES}.get(how)
    if count is None or len(rest) not in (count, count + 1):
        raise CommandError("'change digest' is followed by daily HH:MM [TIMEZONE], twice HH:MM HH:MM [TIMEZONE], or off", USAGE)
    times = []
    for word in rest[:count]:
        m = _CLOCK.match(word)
        if not m:
            raise CommandError(f"'{word[:20]}' is not a time of day: write it as HH:MM, from 00:00 to 23:59", USAGE)
        times.append(f"{int(m.group(1)):02d}:{m.group(2)}")
    if len(set(times)) != len(times):
        raise CommandError("the two times of a twice-daily digest must differ", USAGE)
    zone = rest[count] if len(rest) > count else "UTC"
    zone_of(zone)
    return {"times": sorted(times), "zone": "UTC" if zone.upper() == "UTC" else zone}


def next_at(spec: dict[str, Any], now: datetime) -> datetime:
    """The first digest time after ``now`` (naive UTC), in the player's zone
    (a time a clock change skips is taken as the zone's rules place it)."""
    zone = zone_of(str(spec.get("zone", "UTC")))
    local = now.replace(tzinfo=UTC).astimezone(zone)
    found = []
    for days in range(-1, 3):
        day = local.date() + timedelta(days=days)
        for text in spec["times"]:
            hour, minute = (int(x) for x in text.split(":"))
            at = datetime.combine(day, time(hour, minute), tzinfo=zone).astimezone(UTC).replace(tzinfo=None)
            if at > now:
                found.append(at)
    return min(found)


def describe(spec: dict[str, Any] | None) -> str:
    """The setting in words, for ``status`` and the notices."""
    if not spec:
        return "off (a mail for every move)"
    times = " and ".join(spec["times"])
    return f"{'daily' if len(spec['times']) == 1 else 'twice a day'} at {times} ({spec.get('zone', 'UTC')})"


# ------------------------------------------------------------------ composing
@dataclass
class TurnBoard:
    """One board of a digest where it is the player's turn."""

    title: str
    board_number: int
    opponents: str
    ply: int
    last_move: str
    time_left: str
    board: str
    example: str
    what: str
    """what the player is to do: 'your move', or 'answer the draw offer'"""
    happened: list[str] = field(default_factory=list)
    web_url: str = ""


def awaits(game: Game, user: User) -> str:
    """What ``user`` is to do on ``game`` ('' when nothing): a move, or an answer."""
    seat = seat_of(game, user)
    if game.status != "active" or seat is None or not seat.active or GAME_TYPES[game.game_type].family != "board":
        return ""
    votes = game.draw_votes or game.undo_votes
    if votes:
        return f"answer the {'draw offer' if game.draw_votes else 'undo request'}" if seat.seat not in votes else ""
    return "your move" if position(game).to_move == seat.seat else ""


async def _turn_board(ctx: Ctx, game: Game, user: User, what: str) -> TurnBoard:
    pos = position(game)
    moves = await ctx.uow.moves.last_plies(game.id, 1)
    last = ""
    if moves:
        who = next((s.user.userid for s in game.seats if s.seat == moves[-1].seat), "?")
        last = f"{who} played {moves[-1].move}"
    opponents = ", ".join(s.user.userid for s in game.seats if s.user_id != user.id)
    if what != "your move":
        left = ""
    elif away(ctx, user):
        left = "no clock while you are on vacation"
    else:
        seconds = seconds_left(ctx, game, seat_by_army(game, pos.to_move))
        left = duration(seconds) + (" on your clock" if clock_of(game.options) else "") if seconds > 0 else "out of time"
    example = example_move(game, pos) if what == "your move" else ("accept" if what.startswith("answer") else "")
    return TurnBoard(game_title(game.game_type), game.board_number, opponents, game.ply, last, left,
                     board_rules(game.game_type).board_text(pos), example, what, web_url=board_url(ctx, game))  # fmt: skip


def picture_spec(game: Game, last_move: str) -> dict[str, object]:
    return {
        "game": game.game_type,
        "tpn": game.position,
        "last_move": last_move,
        "cid": f"board-{game_title(game.game_type).lower()}-{game.board_number}@pbmserv",
    }


async def send_due(ctx: Ctx, user: User) -> bool:
    """The digest of ``user`` that is due now (``ctx.now``): queued in ``ctx``, its
    entries marked told and the next time set, all in ``ctx``'s transaction.
    False when there was nothing to tell (only the next time is set)."""
    spec = user.digest
    user.digest_next_at = next_at(spec, ctx.now) if spec else None
    if not spec or user.signed_off or not user.addresses:
        return False
    repo = Digests(ctx.uow.session)
    entries = await repo.pending(user.id)
    games = [g for g in await ctx.uow.games.active_for_users([user.id]) if awaits(g, user)]
    games.sort(key=lambda g: (g.board_number, g.game_type))
    if not entries and not games:
        return False
    by_game: dict[int, list[str]] = {}
    for entry in entries:
        by_game.setdefault(entry.game_id, []).append(entry.line)
    turns = [await _turn_board(ctx, g, user, awaits(g, user)) for g in games]
    for game, turn in zip(games, turns, strict=True):
        turn.happened = by_game.pop(game.id, [])
    others = [line for lines in by_game.values() for line in lines]
    digest = await repo.add(Digest(user_id=user.id, sent_at=ctx.now,
                                   boards=[[g.game_type, g.board_number, board_version(g)] for g in games]))  # fmt: skip
    await repo.mark_told(entries, digest.id)
    key = make_digest_key(await ctx.reply_secret(), digest.id, user.id, user.key_generation)
    reply_to = key_address(ctx.config.server.address, key)
    when = ctx.now.replace(tzinfo=UTC).astimezone(zone_of(str(spec.get("zone", "UTC"))))
    values = {"user": user.userid, "turns": turns, "others": others, "when": f"{when:%Y-%m-%d %H:%M} ({spec.get('zone', 'UTC')})",
              "server_name": ctx.server_name, "schedule": describe(spec)}  # fmt: skip
    count = len(turns)
    subject = f"{ctx.server_name}: digest for {user.userid}, " + (
        f"your turn on {count} board{'s' if count != 1 else ''}" if count else "news from your boards"
    )
    mail = Mail(list(dict.fromkeys(user.addresses)), subject, render("digest.txt", **values), reply_to=reply_to, reply_key=key)
    if user.pictures and games:
        pictures = [picture_spec(g, _last(t)) for g, t in zip(games, turns, strict=True)]
        mail.html = render("digest.html", cids=[str(p["cid"]) for p in pictures], **values)
        mail.picture = {"pictures": pictures, "cid": pictures[0]["cid"]}
    ctx.out.append(mail)
    return True


def _last(turn: TurnBoard) -> str:
    """The last move's text (for the picture's marks)."""
    return turn.last_move.rsplit(" ", 1)[-1] if turn.last_move else ""


# -------------------------------------------------------------------- replies
@dataclass
class Line:
    """One line of a Reply to a digest."""

    text: str
    board: int | None
    said: str
    """the line after its board number"""
    result: str = ""
    """why it was not played (set before it runs), or after it ran: '' played"""
    ran: bool = False


def reply_lines(text: str) -> list[Line]:
    """The lines of a Reply's own text: ``101 d2-e3``, ``102: c7-c6 #4``, ``#103 resign``;
    blank lines skipped, at most :data:`MAX_LINES` read (linear: no pattern)."""
    lines: list[Line] = []
    for raw in text.split("\n"):
        line = raw.strip()
        if not line:
            continue
        if len(lines) == MAX_LINES:
            lines.append(Line(line[:80], None, "", result=f"not read: a reply is read up to its first {MAX_LINES} lines"))
            break
        body = line[1:] if line.startswith("#") else line
        digits = len(body) - len(body.lstrip("0123456789"))
        number, rest = body[:digits], body[digits:].lstrip()
        if rest[:1] in (":", ".", ")", "-"):
            rest = rest[1:]
        rest = rest.strip()
        if not number or digits > 9 or not rest:
            why = "a line is a board number and what to play on it, as in '101 d2-e3'"
            lines.append(Line(line[:80], None, "", result=f"not read: {why}"))
            continue
        lines.append(Line(line[:80], int(number), rest[:200]))
    return lines


async def summary(ctx: Ctx, user_id: int, lines: list[Line], boards: list[tuple[str, int]]) -> None:
    """The one answer to a Reply to a digest: each line's result; then a fresh key
    for the boards of the digest where it is still the player's turn (a refused
    line can be sent again by Reply).  Replaces the sender's own error mails."""
    ctx.out[:] = [m for m in ctx.out if not m.for_sender]
    user = await ctx.uow.users.by_pk(user_id)  # (read again: a line's savepoint may have been rolled back)
    assert user is not None
    played = sum(1 for line in lines if line.ran and not line.result)
    listed = [g for game_type, number in boards if (g := await ctx.uow.games.get(game_type, number)) is not None]
    waiting = [g for g in listed if awaits(g, user)]
    repo = Digests(ctx.uow.session)
    body_values: dict[str, Any] = {"lines": lines, "played": played, "waiting": [(game_title(g.game_type), g.board_number,
                                   awaits(g, user), example_move(g, position(g))) for g in waiting]}  # fmt: skip
    reply_to = key = None
    if waiting:
        digest = await repo.add(Digest(user_id=user.id, sent_at=ctx.now,
                                       boards=[[g.game_type, g.board_number, board_version(g)] for g in waiting]))  # fmt: skip
        key = make_digest_key(await ctx.reply_secret(), digest.id, user.id, user.key_generation)
        reply_to = key_address(ctx.config.server.address, key)
    subject = f"{ctx.server_name}: your reply to the digest, {played} of {len(lines)} line{'s' if len(lines) != 1 else ''} played"
    ctx.out.append(Mail([ctx.sender], subject, render("digest_reply.txt", **body_values), for_sender=True,
                        reply_to=reply_to, reply_key=key))  # fmt: skip
