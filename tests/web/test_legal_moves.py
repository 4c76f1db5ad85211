"""The legal moves a board page carries for its tap-a-piece marks (issue 39): for the
position shown, every legal move of the side to move once and nothing else, checked
against the rules themselves (each entry parses as a legal move, the rules count as
many, a capture takes a piece), for every board game, in random playouts and on the
real pages at every replay step; none at a finished board's last position; the
picture names each square the marks need."""

from __future__ import annotations

import contextlib
import html
import json
import random
import re
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import httpx
import pytest

from pbmserv_terrace.gametypes import GAME_TYPES, board_rules
from pbmserv_terrace.store import Game, MoveRecord, Seat, UnitOfWork, utcnow
from pbmserv_terrace.store.archive import GameRow, SeatRow
from pbmserv_terrace.web.boardview import Frame, legal_moves

from .conftest import Site

BOARD_GAMES = [name for name, kind in GAME_TYPES.items() if kind.family == "board"]
DATA = re.compile(r'<script type="application/json" id="legal-data">([^<]*)</script>')


def playouts(name: str, games: int = 4, plies: int = 150) -> Iterator[Any]:
    """Each setup's start (2, 3 and 4 players where the game has them) and the
    positions of a few random games from it, to their end."""
    rules = board_rules(name)
    setups = {rules.setup_for(2, s) for s in rules.two_player_setups}
    for players in (3, 4):
        with contextlib.suppress(ValueError):
            setups.add(rules.setup_for(players, None))
    for setup in sorted(setups):
        for seed in range(games):
            rng = random.Random(f"legal-{name}-{setup}-{seed}")
            pos = rules.start(setup)
            for _ in range(plies):
                yield pos
                texts = [move for _, targets in rules.move_choices(pos) for _, move, _ in targets]
                if pos.is_over() or not texts:
                    break
                pos = rules.play(pos, rules.parse_move(pos, rng.choice(texts)))


def row(game_type: str, *, status: str = "active", ply: int = 999) -> GameRow:
    when = utcnow()
    seats = tuple(SeatRow(userid=u, seat=i + 1, active=True, resign_pending=False, public_comments=True)
                  for i, u in enumerate(("ann", "ben")))  # fmt: skip
    return GameRow(id=1, game_type=game_type, board_number=101, variant="", options={}, rated=True, status=status,
                   ply=ply, position="", start_position="", winner_seat=None, result=None, draw_votes=(),
                   undo_votes=(), comment=None, created_at=when, last_move_at=when, finished_at=None,
                   seats=seats)  # fmt: skip


def check_against_rules(game_type: str, pos: Any, data: dict[str, dict[str, list[str] | str]]) -> int:
    """``data`` holds exactly the legal moves of ``pos``: each entry is a legal move of
    the piece on its square, no move twice, as many as the rules count (perft at depth
    1), a capture exactly when the move takes a piece.  The number of moves."""
    rules = board_rules(game_type)
    played = set()
    for square, entry in data.items():
        assert set(entry) == {"piece", "to", "takes"}, entry
        piece = str(entry["piece"])
        assert piece.endswith(" " + square) and piece[0].isalpha(), (piece, square)
        assert entry["to"] or entry["takes"], square
        for target, capture in [(t, False) for t in entry["to"]] + [(t, True) for t in entry["takes"]]:
            move = rules.parse_move(pos, f"{square}-{target}")  # (IllegalMoveError if it is not legal)
            text = rules.format_move(pos, move)
            assert text not in played, text
            played.add(text)
            after = rules.play(pos, move)
            assert capture == (rules.material(after) < rules.material(pos)), (text, rules.dump(pos))
    assert len(played) == (0 if pos.is_over() else rules.perft(pos, 1)), rules.dump(pos)
    return len(played)


@pytest.mark.parametrize("game_type", BOARD_GAMES)
def test_the_moves_are_exactly_the_rules_legal_moves(game_type: str) -> None:
    rules = board_rules(game_type)
    game = row(game_type)
    moves = captures = positions = 0
    for ply, pos in enumerate(playouts(game_type)):
        data = legal_moves(game, Frame(ply % 100, pos))
        moves += check_against_rules(game_type, pos, data)
        captures += sum(len(e["takes"]) for e in data.values())
        positions += 1
        if positions % 25 == 0:  # the picture names every square a mark needs (its data-square)
            svg = rules.picture_svg(pos)
            squares = set(re.findall(r'<rect[^>]* data-square="([a-z][0-9]+)"', svg))
            assert len(squares) == rules.size**2
            pieces = set(re.findall(r'<g class="piece" data-square="([a-z][0-9]+)"', svg))
            assert set(data) <= pieces
            assert {t for e in data.values() for t in [*e["to"], *e["takes"]]} <= squares
    assert moves and captures and positions > 100


@pytest.mark.parametrize("game_type", BOARD_GAMES)
def test_none_where_nobody_is_to_move(game_type: str) -> None:
    """A finished board's last position shows no moves (a win, a resignation, an agreed
    draw alike); its earlier positions do; a position over by the rules has none."""
    rules = board_rules(game_type)
    start = rules.start(rules.two_player_setups[0])
    assert legal_moves(row(game_type, status="won", ply=12), Frame(12, start)) == {}
    assert legal_moves(row(game_type, status="drawn", ply=12), Frame(12, start)) == {}
    assert legal_moves(row(game_type, status="removed", ply=0), Frame(0, start)) == {}
    assert legal_moves(row(game_type, status="won", ply=12), Frame(11, start)) != {}
    over = next(pos for pos in playouts(game_type, games=1, plies=400) if pos.is_over())
    assert legal_moves(row(game_type), Frame(5, over)) == {}


async def add_breakthrough(site: Site) -> tuple[str, int, list[Any], str]:
    """A Breakthrough board of 30 random plies (the filled database has Terrace
    boards only): (game type, number, the position after each ply, its status)."""
    rules = board_rules("breakthrough")
    pos = rules.start(rules.two_player_setups[0])
    start, positions, plies = rules.dump(pos), [pos], []
    rng = random.Random("legal-page")
    for _ in range(30):
        texts = [move for _, targets in rules.move_choices(pos) for _, move, _ in targets]
        move = rules.parse_move(pos, rng.choice(texts))
        plies.append((pos.to_move, rules.format_move(pos, move)))
        pos = rules.play(pos, move)
        positions.append(pos)
    async with UnitOfWork(site.db) as uow:
        users = [await uow.users.get(u) for u in ("alice", "bob")]
        number = await uow.games.next_board_number("breakthrough")
        when = utcnow() - timedelta(days=1)
        game = Game(game_type="breakthrough", board_number=number, variant=rules.two_player_setups[0], options={},
                    position=rules.dump(pos), start_position=start, ply=len(plies), created_at=when, last_move_at=when,
                    seats=[Seat(seat=i + 1, user_id=u.id, active=True) for i, u in enumerate(users) if u])  # fmt: skip
        uow.games.add(game)
        await uow.flush()
        for k, (seat, text) in enumerate(plies, start=1):
            uow.moves.add(MoveRecord(game_id=game.id, ply=k, seat=seat, move=text, auto=False, played_at=when))
        await uow.commit()
    return "breakthrough", number, positions, "active"


def page_moves(body: str) -> dict[str, Any] | None:
    found = DATA.findall(body)
    assert len(found) <= 1
    return json.loads(html.unescape(found[0])) if found else None


def test_each_board_page_carries_the_moves_of_the_position_it_shows(site: Site) -> None:
    """Every board of every game type, at every replay step: the page's moves are the
    rules' legal moves of that position; a finished board's last step has none (nor
    the hint line); the page stays kept with its ETag (a 304 for it, gzip as kept)."""
    boards = []
    for name, (game_type, number) in site.filled.boards.items():
        rules = board_rules(game_type)
        boards.append((game_type, number, [rules.load(t) for t in site.filled.positions[name]]))
    game_type, number, positions, _status = site.sql(add_breakthrough(site))
    boards.append((game_type, number, positions))
    assert {b[0] for b in boards} == set(BOARD_GAMES)

    async def scenario(client: httpx.AsyncClient) -> list[tuple[str, int, int, str, str]]:
        out = []
        for game_type, number, positions in boards:
            for ply in range(len(positions)):
                response = await client.get(f"/boards/{game_type}/{number}?ply={ply}")
                assert response.status_code == 200
                again = await client.get(f"/boards/{game_type}/{number}?ply={ply}",
                                         headers={"if-none-match": response.headers["etag"]})  # fmt: skip
                assert again.status_code == 304
                out.append((game_type, number, ply, response.text, response.headers["etag"]))
            raw = await client.get(f"/boards/{game_type}/{number}", headers={"accept-encoding": "gzip"})
            assert raw.headers["content-encoding"] == "gzip"
        return out

    pages = site.run(scenario)
    checked = finished_last = 0
    for game_type, number, ply, body, _etag in pages:
        positions = next(b[2] for b in boards if b[:2] == (game_type, number))
        last = ply == len(positions) - 1
        data = page_moves(body)
        if last and positions[-1].is_over():
            finished_last += 1
            assert data is None and 'id="legal"' not in body, (game_type, number)
            continue
        assert data is not None, (game_type, number, ply)
        assert 'id="legal"' in body and "/static/legal.js" in body
        check_against_rules(game_type, positions[ply], data)
        checked += 1
    assert finished_last >= 2 and checked > 100
    # the moves are part of what the page's ETag covers: the same page twice is the same bytes
    assert len({etag for *_, etag in pages}) == len(pages)


def test_the_script_is_served_and_the_csp_stays_strict(site: Site) -> None:
    async def scenario(client: httpx.AsyncClient) -> tuple[httpx.Response, httpx.Response]:
        game_type, number = site.filled.boards["live"]
        return await client.get("/static/legal.js"), await client.get(f"/boards/{game_type}/{number}")

    script, page = site.run(scenario)
    assert script.status_code == 200 and "javascript" in script.headers["content-type"]
    csp = page.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    # no inline script: every <script> either has a src or is a JSON data block
    for tag in re.findall(r"<script[^>]*>", page.text):
        assert 'src="/static/' in tag or 'type="application/json"' in tag, tag
