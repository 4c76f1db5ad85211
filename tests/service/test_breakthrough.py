"""Breakthrough, the third board game (issue 37 part 5), played by mail end to end
through the same paths as Terrace: a challenge (with a password, or without one and
confirmed by Reply), moves by password command and by Reply to the board mail, an
illegal move refused and nothing changed, the picture in the board mail, the win in
the game's own words and the ratings, its help, a robot opponent, and its web
board page (the real app over the same database)."""

from __future__ import annotations

import io
from email.utils import parseaddr

import httpx
import pytest
from PIL import Image

from pbmserv_terrace.games.breakthrough import board_text, format_move, load, parse_move, start
from pbmserv_terrace.store import UnitOfWork
from pbmserv_terrace.web import create_app

from .harness import Harness, Reply, answer, confirm, mine, set_position, to

GAME = "breakthrough"
EVERYONE = ["ann@players.test", "ben@players.test"]
NEAR_THE_END = "BB6/8/4W3/8/8/8/8/W7 w"
"""White's pawn on e6 walks through: e6-e7, then e7-e8 (Black cannot stop it)"""


@pytest.fixture
def h():
    harness = Harness()
    harness.signup("ann", "ben")
    yield harness
    harness.close()


def position(h: Harness, board: int = 101) -> str:
    async def run() -> str:
        async with UnitOfWork(h.db) as uow:
            game = await uow.games.get(GAME, board)
            assert game is not None
            return str(game.position)

    return h.loop.run_until_complete(run())


def png_parts(reply: Reply) -> list[bytes]:
    assert reply.message is not None
    return [p.get_payload(decode=True) for p in reply.message.walk() if p.get_content_type() == "image/png"]


def test_a_game_by_mail_from_the_challenge_to_the_ratings(h):
    new = h.challenge("ann", "ben", game=GAME, body="good luck")
    assert to(new) == EVERYONE
    assert {r.subject for r in new} == {"New Breakthrough Board 101 ann **"}  # (** : the challenge has a comment)
    assert "A new Breakthrough board (101) has been started" in new[0].body
    assert board_text(start()) in new[0].body
    assert "breakthrough move 101 YOURNAME YOURPASSWORD MOVE" in new[0].body
    assert "Reply to this mail with your move (e.g. " in mine(new, "ann").body
    assert parseaddr(mine(new, "ann").headers["reply-to"])[1].startswith("pbmserv+")

    # a move by the password command
    moved = h.move(101, "ann", "D2-D3", game=GAME)
    assert to(moved) == EVERYONE and moved[0].subject == "Breakthrough Board 101 ben"
    assert moved[0].body.startswith("Breakthrough Board 101: ann played d2-d3")
    pos = start()
    pos = pos.play(parse_move(pos, "d2-d3"))
    assert board_text(pos) in moved[0].body and "It is ben's turn" in moved[0].body
    # the picture: a PNG part in the HTML alternative, the alt text in words
    ben_mail = mine(moved, "ben")
    (png,) = png_parts(ben_mail)
    with Image.open(io.BytesIO(png)) as im:
        assert im.format == "PNG" and im.width >= 400
    assert "Breakthrough 8x8, Black to move." in ben_mail.html

    # a move by Reply to the board mail (the reply key), the move on the first line
    replied = answer(h, ben_mail, "e7-e6")
    assert to(replied) == EVERYONE and "ben played e7-e6" in replied[0].body

    # an illegal move: a clear sentence to the sender only, and nothing changes
    before = position(h)
    refused = h.move(101, "ann", "d3-d5", game=GAME)
    assert to(refused) == ["ann@players.test"] and refused[0].subject == "Breakthrough Board 101 Error"
    assert "d3-d5: a pawn moves one square forward." in refused[0].body
    assert "pw-ann" not in refused[0].body
    by_reply = answer(h, mine(replied, "ann"), "d3-c2")
    assert to(by_reply) == ["ann@players.test"] and "a pawn never moves back" in by_reply[0].body
    assert position(h) == before

    # the end: a pawn walks through (moves by Reply), the win in Breakthrough's words
    set_position(h, 101, NEAR_THE_END, GAME)
    first = h.move(101, "ann", "e6-e7", game=GAME)
    assert "ann played e6-e7" in first[0].body
    assert "threatens to break through" in first[0].body  # the position's own announcement
    second = answer(h, mine(first, "ben"), "a8-a7")
    assert "ben played a8-a7" in second[0].body
    last = answer(h, mine(second, "ann"), "e7-e8")
    assert to(last) == EVERYONE and last[0].subject == "Breakthrough Board 101 finished"
    assert "Game over: ann wins (broke through to the far row)" in last[0].body
    assert "Rating changes:" in last[0].body and "ann: 1600 -> " in last[0].body
    standings = h.send("ann", "breakthrough standings")[0].body
    assert "ann" in standings and "ben" in standings


def test_a_challenge_without_a_password_is_confirmed_by_reply(h):
    asked = h.send("ann", "breakthrough challenge ann ben", "Have fun!")
    assert to(asked) == ["ann@players.test"] and asked[0].subject.startswith("confirm ")
    opened = confirm(h, asked[0])
    assert to(opened) == EVERYONE and opened[0].subject == "New Breakthrough Board 101 ann **"
    # the whole game can go on by Reply, without a password
    moved = answer(h, mine(opened, "ann"), "c2-c3")
    assert "ann played c2-c3" in moved[0].body


def test_setups_and_players_are_checked(h):
    refused = h.send("ann", "breakthrough challenge ann pw-ann ben -long")[0].body
    assert "unknown or repeated setup '-long'; the setups are -8x8" in refused
    h.signup("cat")
    refused = h.send("ann", "breakthrough challenge ann pw-ann ben cat")[0].body
    assert "Breakthrough is a game for two players, not 3." in refused


def test_resigning_and_the_help(h):
    h.challenge("ann", "ben", game=GAME)
    for user, move in (("ann", "a2-a3"), ("ben", "a7-a6"), ("ann", "b2-b3")):
        h.move(101, user, move, game=GAME)
    done = h.send("ben", "breakthrough move 101 ben pw-ben resign")
    assert "ann wins (ben resigned)" in done[0].body
    helped = h.send("zed@players.test", "breakthrough help")[0]
    assert helped.subject.endswith("help breakthrough") or "help" in helped.subject
    assert "Breakthrough rules" in helped.body and "FROMxTO for a capture" in helped.body
    assert board_text(start()) in helped.body


def test_a_game_against_a_robot(h):
    new = h.send("ann", "breakthrough challenge ann pw-ann robot1", "teach me")
    assert [r.to for r in new] == ["ann@players.test"]
    replies = h.move(101, "ann", "d2-d3", game=GAME)
    assert [r.to for r in replies] == ["ann@players.test", "ann@players.test"]
    assert replies[0].body.startswith("Breakthrough Board 101: ann played d2-d3")
    assert replies[1].body.startswith("Breakthrough Board 101: robot1 played ")
    assert "robot1 writes:\nrobot1 " in replies[1].body
    # the robot's move is legal and recorded: it is ann's turn again, and she answers by Reply
    pos = load(position(h))
    assert pos.to_move == 1 and pos.material() == 32
    again = answer(h, replies[1], format_move(pos, pos.legal_moves()[0]))
    assert "robot1 played " in again[-1].body.splitlines()[0]


def test_the_web_board_page_shows_the_picture_and_the_ascii_board(h):
    h.challenge("ann", "ben", game=GAME)
    h.move(101, "ann", "d2-d3", game=GAME)
    h.move(101, "ben", "e7-e6", game=GAME)
    app = create_app(h.db, server_name="Terrace <PBM> Server")

    async def get(path: str) -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver") as client:
            return await client.get(path)

    page = h.loop.run_until_complete(get("/boards/breakthrough/101"))
    assert page.status_code == 200, page.text[:300]
    text = page.text
    assert "Breakthrough" in text and "<svg" in text and "White pawn d3" in text
    pos = load(position(h))
    assert board_text(pos).splitlines()[2] in text  # the ASCII board (rank 8's row)
    assert "d2-d3" in text and "e7-e6" in text
    first = h.loop.run_until_complete(get("/boards/breakthrough/101?ply=1")).text
    assert "White pawn d3" in first and "Black pawn e6" not in first
