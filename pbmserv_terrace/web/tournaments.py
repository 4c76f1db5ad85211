"""The tournaments' pages (issue 41): ``/tournaments`` (every tournament),
``/tournaments/N`` (its table with tie-breaks, the crosstable of a round robin,
every round with a link to each board) and ``/tournaments/N/feed.atom`` (a
result per entry).  The table is computed by the pure
:mod:`pbmserv_terrace.tournament` from the same rows the mails are made from, so
the page and the mails say the same; pages are kept as the other live pages are
(``kept_page``: made again once something was committed)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession
from starlette.requests import Request
from starlette.responses import Response

from ..gametypes import game_title
from ..store import Game, User
from ..store.tournaments import Tournament, TournamentEntrant, TournamentGame, Tournaments
from ..tournament import Result, crosstable, points_text, standings
from .feeds import ATOM, stamp
from .pages import board_url, kept_page
from .site import NotFound, Page, Site, site_of

MAX_NUMBER = 2**31 - 1
SYSTEM_NAMES = {"roundrobin": "round robin", "double": "double round robin", "swiss": "Swiss", "knockout": "knockout"}
RESULT_TEXT = {1.0: "1-0", 0.5: "½-½", 0.0: "0-1"}
CROSS_TEXT = {1.0: "1", 0.5: "½", 0.0: "0"}


@dataclass(frozen=True)
class GameLine:
    round: int
    white: str
    black: str
    """'' for a bye"""
    board: int | None
    url: str
    result: str


def state_of(t: Tournament) -> str:
    return {"open": "open for entries", "running": f"round {t.round} of {t.rounds}", "finished": "over"}.get(t.status, t.status)


def system_of(t: Tournament) -> str:
    text = SYSTEM_NAMES.get(t.system, t.system)
    return text + (f" of {t.swiss_rounds} rounds" if t.system == "swiss" else "")


async def tournament_list(request: Request) -> Response:
    return await kept_page(request, ("tournaments", ""), _make_list)


async def _make_list(site: Site) -> Page:
    marker = await site.marker()
    async with site.db.reading() as session:
        repo = Tournaments(session)
        rows = []
        for t in await repo.listing(500):
            entrants = await repo.entrants(t.id)
            winner = next((u.userid for _, u in entrants if u.id == t.winner_id), "")
            rows.append({"t": t, "title": game_title(t.game_type), "system": system_of(t), "players": len(entrants),
                         "state": state_of(t), "winner": winner})  # fmt: skip
        html = site.render("tournaments.html", rows=rows)  # (the rows are read while the session is open)
    return Page.of(html, key="tournaments", ttl=site.live_ttl, marker=marker)


def number_of(request: Request) -> int:
    number = int(request.path_params["number"])
    if not 0 < number <= MAX_NUMBER:
        raise NotFound(f"tournament T{str(number)[:12]}")
    return number


async def tournament_page(request: Request) -> Response:
    number = number_of(request)
    return await kept_page(request, ("tournament", str(number)), lambda site: _make_page(site, number))


async def tournament_feed(request: Request) -> Response:
    number = number_of(request)
    base = site_of(request).base(request)
    return await kept_page(request, ("tournament-atom", f"{number} {base}"), lambda site: _make_feed(site, number, base))


@dataclass
class Loaded:
    t: Tournament
    entrants: list[tuple[TournamentEntrant, User]]
    rows: list[TournamentGame]
    boards: dict[int, Game]
    organizer: str


async def load(session: AsyncSession, number: int) -> Loaded:
    """Tournament ``number`` and everything its page shows (used while ``session`` is open)."""
    repo = Tournaments(session)
    t = await repo.get(number)
    if t is None:
        raise NotFound(f"tournament T{number}")
    entrants = await repo.entrants(t.id)
    rows = await repo.games(t.id)
    boards = await repo.boards([r.game_id for r in rows if r.game_id is not None])
    organizer = await session.get(User, t.organizer_id)
    return Loaded(t, entrants, rows, boards, organizer.userid if organizer is not None else "?")


def seeded(loaded: Loaded) -> list[int]:
    return [u.id for e, u in sorted(loaded.entrants, key=lambda eu: eu[0].seed or 0)]


def game_lines(loaded: Loaded) -> list[GameLine]:
    names = {u.id: u.userid for _, u in loaded.entrants}
    out = []
    for r in loaded.rows:
        game = loaded.boards.get(r.game_id) if r.game_id is not None else None
        if r.black_id is None:
            kind = "bye (1 point)" if loaded.t.system == "swiss" else "through" if loaded.t.system == "knockout" else "rests"
            out.append(GameLine(r.round, names.get(r.white_id, "?"), "", None, "", kind))
            continue
        result = RESULT_TEXT.get(r.score, "") if r.score is not None else "in play"
        if game is None and r.score is not None:
            result += " (forfeited)"
        url = board_url((game.game_type, game.board_number)) if game is not None else ""
        number = game.board_number if game is not None else None
        out.append(GameLine(r.round, names.get(r.white_id, "?"), names.get(r.black_id, "?"), number, url, result))
    return out


async def _make_page(site: Site, number: int) -> Page:
    marker = await site.marker()
    async with site.db.reading() as session:
        html = page_html(site, await load(session, number))
    return Page.of(html, key=f"tournament-{number}", ttl=site.live_ttl, marker=marker)


def page_html(site: Site, loaded: Loaded) -> str:
    t = loaded.t
    names = {u.id: u.userid for _, u in loaded.entrants}
    order = seeded(loaded)
    done = [Result(r.round, r.white_id, r.black_id, r.score) for r in loaded.rows if r.score is not None]
    table = standings(order, done, t.system) if t.status != "open" else []
    cross: list[dict[str, object]] = []
    if t.system in ("roundrobin", "double") and t.status != "open":
        ct = crosstable(order, done)
        for i, p in enumerate(order, start=1):
            cells = ["×" if q == p else "".join(CROSS_TEXT[v] for v in ct.get(p, {}).get(q, [])) for q in order]
            cross.append({"n": i, "player": names.get(p, "?"), "cells": cells,
                          "total": points_text(sum(sum(v) for v in ct.get(p, {}).values()))})  # fmt: skip
    lines = game_lines(loaded)
    rounds = [(n, [g for g in lines if g.round == n]) for n in range(1, t.round + 1)]
    withdrawn = {u.userid: e.withdrawn_round for e, u in loaded.entrants if e.withdrawn_round is not None}
    return site.render(
        "tournament.html", t=t, title=game_title(t.game_type), system=system_of(t), state=state_of(t),
        organizer=loaded.organizer, names=names, table=table, cross=cross, rounds=rounds, points=points_text,
        joined=[u.userid for _, u in loaded.entrants], winner=names.get(t.winner_id or 0, ""), withdrawn=withdrawn,
    )  # fmt: skip


async def _make_feed(site: Site, number: int, base: str) -> Page:
    marker = await site.marker()
    async with site.db.reading() as session:
        feed = feed_xml(site, await load(session, number), base)
    return Page.of(feed, key=f"tournament-{number}-atom", media_type=ATOM, ttl=site.live_ttl, marker=marker)


def feed_xml(site: Site, loaded: Loaded, base: str) -> str:
    number = loaded.t.number
    t = loaded.t
    entries = []
    for line, r in zip(game_lines(loaded), loaded.rows, strict=True):
        game = loaded.boards.get(r.game_id) if r.game_id is not None else None
        if game is None or r.score is None:
            continue
        when = game.finished_at or game.last_move_at
        entries.append({
            "id": f"{base}{line.url}", "link": f"{base}{line.url}", "updated": stamp(when),
            "title": f"Round {r.round}: {line.white} - {line.black} {line.result}",
            "summary": f"{t.label} round {r.round}, {game_title(game.game_type)} board {game.board_number}: {game.result or ''}",
        })  # fmt: skip
    entries.sort(key=lambda e: str(e["updated"]), reverse=True)
    updated = max([stamp(t.created_at), *(str(e["updated"]) for e in entries)])
    return site.render(
        "feed.xml", feed_id=f"{base}/tournaments/{number}", feed_title=f"Tournament {t.label}: {t.name}",
        link=f"{base}/tournaments/{number}", self_link=f"{base}/tournaments/{number}/feed.atom", updated=updated,
        entries=entries,
    )  # fmt: skip


__all__ = ["tournament_feed", "tournament_list", "tournament_page"]
