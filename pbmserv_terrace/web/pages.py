"""HTML pages of the archive.  Each handler reads in one short ``Database.reading``
session through :class:`~pbmserv_terrace.store.archive.Archive`, builds plain values
and renders an autoescaped template; nothing a template sees holds an address."""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from datetime import datetime

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response

from ..gametypes import DEFAULT_GAME_TYPE, GAME_TYPES, board_rules, board_size, game_title
from ..render import render
from ..store.archive import Archive, GameRow, ListedGame, MoveRow
from . import tableview
from .boardview import latest_comment, legal_moves, move_rounds, players, replay, status_lines, to_move
from .charts import rating_chart
from .clockview import TIME_STEP, BoardTime, Waiting, board_time, waiting_for
from .picture import inline_svg
from .reviewview import review_view
from .site import FINAL_MAX_AGE, HOME_TTL, LIVE_MAX_AGE, NotFound, Page, Site, result_words, site_of

FRONT_ACTIVE, FRONT_FINISHED, PLAYER_GAMES = 30, 20, 300
PLAYING_BOARDS = 500
"""a player's active boards read for their waiting list and deadline feed (the newest)"""
STANDINGS_TOP = 10
"""players of a solitaire shown on /standings (all on /standings/{type})"""
MAX_BOARD = 2**31 - 1
"""the highest board number there can be (the column is a 32-bit integer on PostgreSQL):
a higher one in a URL is a 404 before any statement"""
MAX_PLY_DIGITS = 9
MAX_USERID = 64
HELP_TOPICS = (("General", "help_general.txt"), ("Commands", "help_commands.txt"), ("Rules", "help_terrace.txt"),
               ("Tutorial", "help_tutorial.txt"))  # fmt: skip


def is_solitaire(game_type: str) -> bool:
    """A one-player game from a numbered deal (no board picture, no ratings)."""
    return GAME_TYPES[game_type].family == "solitaire"


def game_type_of(request: Request) -> str:
    game_type = str(request.path_params["game_type"]).lower()
    if game_type not in GAME_TYPES:
        raise NotFound(f"a game type called '{game_type[:30]}' (this server runs {', '.join(GAME_TYPES)})")
    return game_type


def board_url(game: GameRow | ListedGame | tuple[str, int], ply: int | None = None) -> str:
    game_type, number = game if isinstance(game, tuple) else (game.game_type, game.board_number)
    return f"/boards/{game_type}/{number}" + ("" if ply is None else f"?ply={ply}")


async def known_user(archive: Archive, wanted: str) -> tuple[int, str, datetime]:
    """(id, userid, created) of the player called ``wanted``, or a 404."""
    user = await archive.user(wanted)
    if user is None:
        raise NotFound(f"a player called '{wanted[:40]}'")
    return user


def userid_of(request: Request) -> str:
    """The userid of the path; one that no account can have (control characters, which
    PostgreSQL refuses in a statement, or too long) is a 404 before any statement."""
    wanted = str(request.path_params["userid"])
    if len(wanted) > MAX_USERID or not wanted.isprintable():
        raise NotFound(f"a player called '{wanted[:40].encode('unicode_escape').decode()}'")
    return wanted


def board_address(request: Request) -> tuple[str, int]:
    """(game type, board number) of the path; a number no board can have is a 404."""
    game_type, number = game_type_of(request), int(request.path_params["number"])
    if not 0 < number <= MAX_BOARD:
        raise NotFound(f"{game_title(game_type)} board {str(number)[:12]}: there is no such board")
    return game_type, number


def requested_ply(raw: str | None, game: GameRow) -> int:
    """The ply of ``?ply=`` (ASCII digits, at most the board's ply), else the board's own."""
    if raw is None or raw == "":
        return game.ply
    if not (raw.isascii() and raw.isdigit() and len(raw) <= MAX_PLY_DIGITS) or int(raw) > game.ply:
        raise NotFound(f"ply {raw[:12]} of {game_title(game.game_type)} board {game.board_number} (it has plies 0 to {game.ply})")
    return int(raw)


BoardRender = Callable[
    [Request, GameRow, list[MoveRow], dict[str, float], int, BoardTime | None], tuple[str | bytes, str, str]
]
"""(request, board, moves, ratings, ply, its clocks now) → (body, ETag key, media type) of one view of a board"""


async def board_view(
    request: Request, kind: str, render: BoardRender, *, by_ply: bool = False, timed: bool = False
) -> Response:
    """A view of a board (``kind``: its page, its text, its feed), kept (see :mod:`.site`):
    a finished board's view is served without a statement until it is FINAL_MAX_AGE old,
    a live board's while its row and ratings are the same (one statement).  ``timed``:
    the view shows the board's clocks (an active board game's time left, issue 40), so
    it is also made again when the words of its clocks change, and is served at most
    ``TIME_STEP`` seconds without that check."""
    site = site_of(request)
    game_type, number = board_address(request)
    raw = (request.query_params.get("ply") or None) if by_ply else None
    key = (kind, game_type, number, raw, site.base(request) if kind == "atom" else "")
    page = await site.kept(key)
    if page is None:
        page = await site.pages.once(key, lambda: _make_board_view(request, site, key, render, timed))
    return page.response(request)


async def _make_board_view(
    request: Request, site: Site, key: tuple[str, str, int, str | None, str], render: BoardRender, timed: bool
) -> Page:
    _kind, game_type, number, raw, _base = key
    marker = await site.marker()
    async with site.db.reading() as session:
        archive = Archive(session)
        found = await archive.game(game_type, number)
        if found is None:
            raise NotFound(f"{game_title(game_type)} board {number}: there is no such board")
        game, ratings = found
        ply = requested_ply(raw, game)
        final = game.status != "active"
        timing = board_time(game, site.now(), site.timers) if timed and not is_solitaire(game.game_type) else None
        lasts = TIME_STEP if timing is not None else None
        state = (game, ratings, timing.shown if timing is not None else None)
        ttl = FINAL_MAX_AGE if final else site.live_ttl
        kept = site.pages.get(key)
        if kept is not None and kept.state == state:
            return kept.again(ttl, marker, lasts)
        moves = await archive.moves(game.id)
    body, etag_key, media_type = render(request, game, moves, ratings, ply, timing)
    max_age = FINAL_MAX_AGE if final else LIVE_MAX_AGE
    return Page.of(
        body, key=etag_key, media_type=media_type, max_age=max_age, state=state, ttl=ttl, marker=marker, lasts=lasts
    )


async def home(request: Request) -> Response:
    """The front page, rendered at most once every HOME_TTL seconds."""
    site = site_of(request)
    page = await site.kept(("home",))
    if page is None:
        page = await site.pages.once(("home",), lambda: _make_home(site))
    return page.response(request)


async def _make_home(site: Site) -> Page:
    types = []
    marker = await site.marker()
    async with site.db.reading() as session:
        archive = Archive(session)
        for game_type in GAME_TYPES:
            active = await archive.newest_active(game_type, FRONT_ACTIVE)
            solitaire = is_solitaire(game_type)
            types.append(
                {
                    "name": game_type,
                    "title": game_title(game_type),
                    "solitaire": solitaire,
                    "count": await archive.count_active(game_type),
                    "active": [(g, tableview.listed_summary(g) if solitaire else to_move(g)) for g in active],
                    "finished": await archive.recent_finished(game_type, FRONT_FINISHED),
                }
            )
    return Page.of(site.render("home.html", types=types, board_url=board_url), key="home", ttl=HOME_TTL, marker=marker)


async def help_page(request: Request) -> Response:
    """The help: templates only, rendered once."""
    site = site_of(request)
    page = site.pages.fresh(("help",))
    if page is None:
        page = await site.pages.once(("help",), lambda: _make_help(site))
    return page.response(request)


async def _make_help(site: Site) -> Page:
    kind = GAME_TYPES[DEFAULT_GAME_TYPE]
    values = {"server_name": site.server_name, "address": site.address or "the server's address", "title": kind.title,
              **kind.board.help_values()}  # fmt: skip
    sections = [(name, render(template, **values)) for name, template in HELP_TOPICS]
    sections += [(kind.title, kind.solitaire.help_text()) for kind in GAME_TYPES.values() if kind.family == "solitaire"]
    return Page.of(site.render("help.html", sections=sections), key="help", max_age=FINAL_MAX_AGE, ttl=float("inf"))


async def standings(request: Request) -> Response:
    """Every game type's standings: the Elo table of each board game, the top of each
    solitaire's ranking on shared deals (in full on ``/standings/{type}``)."""
    return await kept_page(request, ("standings", ""), lambda site: _make_standings(site, ""))


async def standings_of_type(request: Request) -> Response:
    """One game type's standings: its Elo table, or a solitaire's whole ranking and its
    latest shared deals."""
    game_type = game_type_of(request)
    return await kept_page(request, ("standings", game_type), lambda site: _make_standings(site, game_type))


async def kept_page(request: Request, key: tuple[str, ...], make: Callable[[Site], Awaitable[Page]]) -> Response:
    """A page that shows what changes (standings, a player): served as made for
    ``live_ttl`` seconds, then made again by ``make`` (which keeps the rendering while
    what it shows is the same)."""
    site = site_of(request)
    page = await site.kept(key)
    if page is None:
        page = await site.pages.once(key, lambda: make(site))
    return page.response(request)


async def _make_standings(site: Site, game_type: str) -> Page:
    """``game_type`` "": every type's.  Rendering a few thousand rows costs tens of ms: the
    page is kept until a rating or an ended game changes."""
    game_types = [game_type] if game_type else list(GAME_TYPES)
    key = ("standings", game_type)
    marker = await site.marker()
    async with site.db.reading() as session:
        archive = Archive(session)
        version = await standings_version(archive, game_types)
        kept = site.pages.get(key)
        if kept is not None and kept.state == version:
            return kept.again(site.live_ttl, marker)
        tables = [await standings_table(archive, t, None if game_type else STANDINGS_TOP) for t in game_types]
    html = site.render("standings.html", tables=tables, whole=not game_type)
    return Page.of(
        html, key=f"standings-{game_type}" if game_type else "standings", state=version, ttl=site.live_ttl, marker=marker
    )


async def standings_version(archive: Archive, game_types: list[str]) -> tuple[object, ...]:
    """What the standings of ``game_types`` depend on: the ratings table, and each
    solitaire's ended boards."""
    return (
        await archive.ratings_version(),
        *[await archive.ended_version(t) for t in game_types if is_solitaire(t)],
    )


async def standings_table(archive: Archive, game_type: str, top: int | None) -> dict[str, object]:
    """What standings.html shows of one game type (``top``: at most that many players
    of a solitaire, and none of its deals)."""
    table: dict[str, object] = {"name": game_type, "title": game_title(game_type), "solitaire": is_solitaire(game_type)}
    if not is_solitaire(game_type):
        table["rows"] = await archive.standings(game_type)
        return table
    ranking = tableview.ranking(await archive.ended_one_player(game_type))
    rules = tableview.solitaire_rules(game_type)
    table.update(
        ranking=ranking,
        players=ranking.players[:top] if top is not None else ranking.players,
        more=top is not None and len(ranking.players) > top,
        deals=[] if top is not None else ranking.shared[: tableview.STANDINGS_DEALS],
        variants=rules.variants,
        max_score=rules.max_score,
    )
    return table


async def healthz(request: Request) -> Response:
    site = site_of(request)
    try:
        async with site.db.reading() as session:
            ok = await Archive(session).ping()
    except Exception as exc:  # the probe's answer is the error, not a 500 page
        return JSONResponse(
            {"status": "error", "error": type(exc).__name__}, status_code=503, headers={"Cache-Control": "no-store"}
        )
    return JSONResponse(
        {"status": "ok" if ok else "error"}, status_code=200 if ok else 503, headers={"Cache-Control": "no-store"}
    )


async def board_redirect(request: Request) -> Response:
    """``/boards/N…`` is terrace board N (the mail's default game type)."""
    path = request.url.path.replace("/boards/", f"/boards/{DEFAULT_GAME_TYPE}/", 1)
    query = f"?{request.url.query}" if request.url.query else ""
    return RedirectResponse(path + query, status_code=308)


async def board(request: Request) -> Response:
    return await board_view(request, "html", render_board_page, by_ply=True, timed=True)


def render_board_page(
    request: Request, game: GameRow, moves: list[MoveRow], ratings: dict[str, float], ply: int, timing: BoardTime | None
) -> tuple[str, str, str]:
    site = site_of(request)
    if is_solitaire(game.game_type):
        html = solitaire_board(request, game, moves, ply)
    else:
        frame = replay(game, moves, ply)
        html = site.render(
            "board.html",
            game=game,
            title=game_title(game.game_type),
            url=board_url(game),
            ply=ply,
            frame=frame,
            players=players(game, ratings),
            status=status_lines(game, frame),
            rounds=move_rounds(game, moves),
            svg=inline_svg(game.game_type, frame),
            moves=legal_moves(game, frame),
            ascii_board=board_rules(game.game_type).board_text(frame.pos),
            review=review_view(game, moves, board_url(game), ply),
            comment=latest_comment(game),
            to_move=to_move(game),
            size=board_size(game.game_type),
            timing=timing,
        )
    return html, f"{game.game_type}-{game.board_number}-{ply}", "text/html; charset=utf-8"


def solitaire_board(request: Request, game: GameRow, moves: list[MoveRow], ply: int) -> str:
    """A solitaire's board page: the mail's picture of the table (served by
    :func:`board_picture`) and the table as text, its facts, the moves."""
    frame = tableview.replay(game, moves, ply)
    rules = tableview.solitaire_rules(game.game_type)
    return site_of(request).render(
        "solitaire.html",
        game=game,
        title=game_title(game.game_type),
        url=board_url(game),
        ply=ply,
        frame=frame,
        player=tableview.player_of(game),
        facts=tableview.facts(game),
        status=tableview.status_lines(game, frame),
        table=rules.table_text(frame.state),
        picture=f"{board_url(game)}/picture.png?ply={ply}",
        picture_alt=rules.picture_alt(frame.state),
        moves=moves,
        comment=latest_comment(game),
    )


async def board_picture(request: Request) -> Response:
    """The picture the mail shows of a board after ``?ply=k`` (a solitaire's table, a
    board game's board) as PNG: kept, cached and revalidated as the board's page is."""
    return await board_view(request, "png", render_board_picture, by_ply=True)


def render_board_picture(
    request: Request, game: GameRow, moves: list[MoveRow], ratings: dict[str, float], ply: int, timing: BoardTime | None
) -> tuple[bytes, str, str]:
    if is_solitaire(game.game_type):
        png = tableview.solitaire_rules(game.game_type).picture(tableview.replay(game, moves, ply).state)
    else:
        frame = replay(game, moves, ply)
        png = board_rules(game.game_type).picture_png(frame.pos, frame.last_move)
    return png, f"{game.game_type}-{game.board_number}-{ply}-png", "image/png"


def outcome_for(game: GameRow | ListedGame) -> str:
    """How a board stands, as a public page says it of its players (never to one of
    them: anyone reads it): "ann to move", "ann won: ben resigned", "draw agreed"."""
    if is_solitaire(game.game_type):
        return tableview.outcome(game)
    if game.status == "active":
        return f"{to_move(game)} to move"
    players = [s.userid for s in game.seats]
    if game.status == "removed":
        return f"removed: {game.result}" if game.result else "removed"
    return result_words(game.result, players) if game.result else game.status


async def player(request: Request) -> Response:
    """A player's ratings with their charts and their games (see :func:`_make_player`)."""
    wanted = userid_of(request)
    return await kept_page(request, ("player", wanted.lower()), lambda site: _make_player(site, wanted))


async def waiting_boards(site: Site, archive: Archive, user_id: int, userid: str) -> list[Waiting]:
    """The boards waiting for ``userid`` now (their move, or their vote), with their
    clocks, the soonest deadline first (:func:`.clockview.waiting_for`)."""
    playing = [g for g in await archive.playing(user_id, PLAYING_BOARDS) if not is_solitaire(g.game_type)]
    return waiting_for(userid, playing, site.now(), site.timers)


async def _make_player(site: Site, wanted: str) -> Page:
    """Three statements (the user with their ratings; the games with their seats; the
    active boards with their clocks) and the replay's check for new results; the page is
    rendered again only when what it shows changed (a game row, a rating, a chart point,
    a time left), since rendering a hundred rows costs more than reading them."""
    marker = await site.marker()
    async with site.db.reading() as session:
        archive = Archive(session)
        user = await archive.player(wanted)
        if user is None:
            raise NotFound(f"a player called '{wanted[:40]}'")
        games = await archive.games_of_user(user.id, PLAYER_GAMES)
        waiting = await waiting_boards(site, archive, user.id, user.userid)
        await site.ratings.refresh(archive, marker)
    userid = user.userid
    counts = tuple(site.ratings.count(game_type, userid) for game_type, _ in user.ratings)
    shown = tuple((w.game.id, w.why, w.time.shown) for w in waiting)
    lasts = TIME_STEP if waiting else None
    # kept as a digest of the rows' text, not the rows: the hundreds of row objects of
    # each kept player page were most of what the garbage collector's full collections
    # walked (a pause of ~180 ms every few seconds under load)
    state = hashlib.blake2b(repr((user, games, counts, shown)).encode(), digest_size=16).digest()
    kept = site.pages.get(("player", wanted.lower()))
    if kept is not None and kept.state == state:
        return kept.again(site.live_ttl, marker, lasts)
    charts = [
        (
            game_type,
            game_title(game_type),
            row,
            rating_chart(site.ratings.points(game_type, userid), f"{userid}'s {game_title(game_type)} rating"),
        )
        for game_type, row in user.ratings
    ]
    rows = [(g, outcome_for(g)) for g in games if not is_solitaire(g.game_type)]
    solitaires = [
        (t, game_title(t), [(g, tableview.listed_summary(g)) for g in games if g.game_type == t])
        for t in GAME_TYPES
        if is_solitaire(t)
    ]
    html = site.render(
        "player.html",
        userid=userid,
        created=user.created_at,
        charts=charts,
        rows=rows,
        solitaires=[s for s in solitaires if s[2]],
        board_url=board_url,
        limit=PLAYER_GAMES,
        count=len(games),
        waiting=waiting,
    )
    return Page.of(html, key=f"player-{userid}", state=state, ttl=site.live_ttl, marker=marker, lasts=lasts)
