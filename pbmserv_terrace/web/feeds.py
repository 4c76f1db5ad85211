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
from ..store.archive import Archive, GameRow, ListedGame, MoveRow
from . import tableview
from .boardview import frames, replay, status_lines, text_record
from .clockview import BoardTime
from .pages import PLAYER_GAMES, board_url, board_view, is_solitaire, kept_page, known_user, outcome_for, userid_of
from .site import Page, Site, result_words, site_of

ATOM = "application/atom+xml; charset=utf-8"


def stamp(when: datetime) -> str:
    """RFC 3339 in UTC (the store keeps naive UTC)."""
    return when.replace(microsecond=0).isoformat() + "Z"


async def board_text(request: Request) -> Response:
    return await board_view(request, "txt", render_text)


def render_text(
    request: Request, game: GameRow, moves: list[MoveRow], ratings: dict[str, float], ply: int, timing: BoardTime | None
) -> tuple[str, str, str]:
    if is_solitaire(game.game_type):
        record = tableview.text_record(game, moves, tableview.replay(game, moves, game.ply))
    else:
        record = text_record(game, moves, replay(game, moves, game.ply).pos)
    return record, f"{game.game_type}-{game.board_number}-{game.ply}-txt", "text/plain; charset=utf-8"


async def board_feed(request: Request) -> Response:
    return await board_view(request, "atom", render_feed)


def render_feed(
    request: Request, game: GameRow, moves: list[MoveRow], ratings: dict[str, float], ply: int, timing: BoardTime | None
) -> tuple[str, str, str]:
    site = site_of(request)
    base = site.base(request)
    entries = []
    for m, (title, summary) in zip(moves, ply_entries(game, moves), strict=True):
        entries.append(
            {
                "id": f"{base}{board_url(game, m.ply)}",
                "title": title,
                "updated": stamp(m.played_at),
                "link": f"{base}{board_url(game, m.ply)}",
                "summary": summary,
            }
        )
    entries.reverse()
    updated = max([game.created_at, game.last_move_at, *(m.played_at for m in moves)])
    feed = site.render(
        "feed.xml",
        feed_id=f"{base}{board_url(game)}",
        feed_title=f"{game_title(game.game_type)} board {game.board_number}: " + who(game),
        link=f"{base}{board_url(game)}",
        self_link=f"{base}{board_url(game)}/feed.atom",
        updated=stamp(updated),
        entries=entries,
    )
    return feed, f"{game.game_type}-{game.board_number}-{game.ply}-atom", ATOM


def ply_entries(game: GameRow, moves: list[MoveRow]) -> list[tuple[str, str]]:
    """(title, summary) of each ply's feed entry, in order."""
    if is_solitaire(game.game_type):
        return [tableview.feed_entry(game, frame) for frame in list(tableview.frames(game, moves))[1:]]
    names = {s.seat: s.userid for s in game.seats}
    out = []
    for m, frame in zip(moves, list(frames(game, moves))[1:], strict=True):
        what = m.move if m.move in ("Resign", "Forfeit") else f"played {m.move}"
        out.append((f"Ply {m.ply}: {names.get(m.seat, m.seat)} {what}{' (Auto)' if m.auto else ''}",
                    " ".join(status_lines(game, frame))))  # fmt: skip
    return out


def who(game: GameRow | ListedGame) -> str:
    """The players of a board game (``a vs b``), or a solitaire's player, variant and deal."""
    if is_solitaire(game.game_type):
        deal = tableview.deal_of(game)
        return f"{tableview.player_of(game)}, {tableview.variant_name(game, game.game_type)} deal {deal}"
    return " vs ".join(s.userid for s in game.seats)


async def player_feed(request: Request) -> Response:
    """A player's boards, newest move first (kept for ``live_ttl`` seconds)."""
    wanted = userid_of(request)
    base = site_of(request).base(request)
    return await kept_page(
        request, ("player-atom", f"{wanted.lower()} {base}"), lambda site: _make_player_feed(site, wanted, base)
    )


async def _make_player_feed(site: Site, wanted: str, base: str) -> Page:
    marker = await site.marker()
    async with site.db.reading() as session:
        archive = Archive(session)
        user_id, userid, created = await known_user(archive, wanted)
        games = await archive.games_of_user(user_id, PLAYER_GAMES)
    entries = []
    for g in games[:50]:
        state = outcome_for(g)
        entries.append(
            {
                "id": f"{base}{board_url(g)}",
                "title": f"{game_title(g.game_type)} board {g.board_number}: {who(g)} ({state})",
                "updated": stamp(g.last_move_at),
                "link": f"{base}{board_url(g)}",
                "summary": f"{result_words(g.result or '', [s.userid for s in g.seats]) or 'in progress'}; "
                f"{g.ply} {'moves' if is_solitaire(g.game_type) else 'plies'}.",
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
    return Page.of(feed, key=f"player-{userid}-atom", media_type=ATOM, ttl=site.live_ttl, marker=marker)
