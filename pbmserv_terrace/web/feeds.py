"""Machine-readable views: the plain-text game record and the Atom feeds.

Feed and entry ids are the absolute URLs of what they describe (``public_url`` when
configured), which stay the same for as long as the board exists: a reader that
polls the feed sees each ply once.
"""

from __future__ import annotations

from datetime import datetime

from starlette.requests import Request
from starlette.responses import Response

from ..gametypes import game_title
from ..store.archive import Archive
from .boardview import frames, players, replay, status_lines, text_record
from .pages import PLAYER_GAMES, board_url, load_board, outcome_for
from .site import FINAL_MAX_AGE, LIVE_MAX_AGE, NotFound, cached, site_of

ATOM = "application/atom+xml; charset=utf-8"


def stamp(when: datetime) -> str:
    """RFC 3339 in UTC (the store keeps naive UTC)."""
    return when.replace(microsecond=0).isoformat() + "Z"


async def board_text(request: Request) -> Response:
    site = site_of(request)
    async with site.db.reading() as session:
        game, moves, _ratings = await load_board(Archive(session), request)
    final = replay(game, moves, game.ply)
    max_age = LIVE_MAX_AGE if game.status == "active" else FINAL_MAX_AGE
    return cached(
        request,
        text_record(game, moves, final.pos),
        key=f"{game.game_type}-{game.board_number}-{game.ply}-txt",
        media_type="text/plain; charset=utf-8",
        max_age=max_age,
    )


async def board_feed(request: Request) -> Response:
    site = site_of(request)
    async with site.db.reading() as session:
        game, moves, _ratings = await load_board(Archive(session), request)
    base = site.base(request)
    names = {s.seat: s.userid for s in game.seats}
    entries = []
    for m, frame in zip(moves, list(frames(game, moves))[1:], strict=True):
        what = m.move if m.move in ("Resign", "Forfeit") else f"played {m.move}"
        entries.append(
            {
                "id": f"{base}{board_url(game, m.ply)}",
                "title": f"Ply {m.ply}: {names.get(m.seat, m.seat)} {what}{' (Auto)' if m.auto else ''}",
                "updated": stamp(m.played_at),
                "link": f"{base}{board_url(game, m.ply)}",
                "summary": " ".join(status_lines(game, frame)),
            }
        )
    entries.reverse()
    updated = max([game.created_at, game.last_move_at, *(m.played_at for m in moves)])
    feed = site.render(
        "feed.xml",
        feed_id=f"{base}{board_url(game)}",
        feed_title=f"{game_title(game.game_type)} board {game.board_number}: " + " vs ".join(p.userid for p in players(game, {})),
        link=f"{base}{board_url(game)}",
        self_link=f"{base}{board_url(game)}/feed.atom",
        updated=stamp(updated),
        entries=entries,
    )
    return cached(request, feed, key=f"{game.game_type}-{game.board_number}-{game.ply}-atom", media_type=ATOM)


async def player_feed(request: Request) -> Response:
    site = site_of(request)
    wanted = str(request.path_params["userid"])
    async with site.db.reading() as session:
        archive = Archive(session)
        user = await archive.user(wanted)
        if user is None:
            raise NotFound(f"a player called '{wanted[:40]}'")
        user_id, userid, created = user
        games = await archive.games_of_user(user_id, PLAYER_GAMES)
    base = site.base(request)
    entries = []
    for g in games[:50]:
        state = outcome_for(g, userid)
        entries.append(
            {
                "id": f"{base}{board_url(g)}",
                "title": f"{game_title(g.game_type)} board {g.board_number}: {' vs '.join(s.userid for s in g.seats)} ({state})",
                "updated": stamp(g.last_move_at),
                "link": f"{base}{board_url(g)}",
                "summary": f"{g.result or 'in progress'}; {g.ply} plies.",
            }
        )
    updated = max([created, *(g.last_move_at for g in games)])
    feed = site.render(
        "feed.xml",
        feed_id=f"{base}/players/{userid}",
        feed_title=f"{userid}'s games",
        link=f"{base}/players/{userid}",
        self_link=f"{base}/players/{userid}/feed.atom",
        updated=stamp(updated),
        entries=entries,
    )
    return cached(request, feed, key=f"player-{userid}-atom", media_type=ATOM)
