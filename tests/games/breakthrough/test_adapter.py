"""Breakthrough behind the server's board-game protocol (``gametypes.base.BoardRules``):
every member of the adapter, through the game table as the service reads it."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from pbmserv_terrace.games.breakthrough import Outcome
from pbmserv_terrace.gametypes import GAME_TYPES, BoardRules, board_game_of, board_rules
from pbmserv_terrace.gametypes.base import BoardRules as BoardRulesProtocol

from .helpers import make

RULES = board_rules("breakthrough")
START = "BBBBBBBB/BBBBBBBB/8/8/8/8/WWWWWWWW/WWWWWWWW w"


def test_the_table_entry():
    kind = GAME_TYPES["breakthrough"]
    assert (kind.title, kind.family, kind.key_code, kind.board_size) == ("Breakthrough", "board", 3, 8)
    assert kind.help_template == "help_breakthrough.txt" and "breakthrough" in kind.help_topics
    assert BoardRules is BoardRulesProtocol


def test_every_protocol_member_is_there():
    members = [name for name in vars(BoardRulesProtocol) if not name.startswith("_")]
    members += list(BoardRulesProtocol.__annotations__)
    missing = [name for name in members if not hasattr(RULES, name)]
    assert missing == []


def test_setups():
    assert RULES.two_player_setups == ("8x8",)
    assert RULES.setup_for(2, None) == "8x8" and RULES.setup_for(2, "8x8") == "8x8"
    for players, setup, words in ((3, None, "for two players"), (2, "long", "no setup -long"), (2, "6x6", "6x6")):
        with pytest.raises(ValueError, match=words):
            RULES.setup_for(players, setup)


def test_start_load_dump_round_trip():
    pos = RULES.start("8x8")
    assert RULES.dump(pos) == START and len(START) <= 200
    assert RULES.load(START) == pos and pos.to_move == 1 and pos.armies() == [1, 2]
    assert pos.outcome() is None and not pos.is_over() and pos.announcements() == []
    with pytest.raises(ValueError, match="6x6 position"):
        RULES.load("BBBBBB/BBBBBB/6/6/WWWWWW/WWWWWW w")
    with pytest.raises(ValueError):
        RULES.load("not a position")


def test_position_strings_say_their_game():
    assert board_game_of(START) == "breakthrough"
    terrace = board_rules("terrace")
    assert board_game_of(terrace.dump(terrace.start("long"))) == "terrace"


def test_parse_format_play_and_looks_like_move():
    pos = RULES.start("8x8")
    move = RULES.parse_move(pos, " D2-D3 ")
    assert RULES.format_move(pos, move) == "d2-d3"
    after = RULES.play(pos, move)
    assert after.to_move == 2 and RULES.dump(after) == "BBBBBBBB/BBBBBBBB/8/8/8/3W4/WWW1WWWW/WWWWWWWW b"
    capture = make(
        """
        . . . . . . . B
        . . . . . . . .
        . . . . . . . .
        . . . B . . . .
        . . W . . . . .
        . . . . . . . .
        . . . . . . . .
        W . . . . . . .
        """
    )
    m = RULES.parse_move(capture, "c4-d5")
    assert RULES.format_move(capture, m) == "c4xd5"
    assert RULES.looks_like_move("b4xc5") and RULES.looks_like_move("a2-a3")
    assert not RULES.looks_like_move("resign") and not RULES.looks_like_move("C-d2-e3 hello")


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("d2-d4", "one square forward"),
        ("d3-d4", "no pawn on d3"),
        ("d7-d6", "Black's"),
        ("hello", "not a move"),
        ("d2-z9", "not a square"),
        ("d1-d2", "own pawn"),
    ],
)
def test_illegal_moves_are_refused_with_a_sentence(text, words):
    with pytest.raises(ValueError, match=words) as refused:
        RULES.parse_move(RULES.start("8x8"), text)
    assert str(refused.value)[0].isupper() or str(refused.value)[0] in '"d'  # a sentence for the player


def test_board_text_letters_material_and_example():
    pos = RULES.start("8x8")
    text = RULES.board_text(pos)
    assert text.splitlines()[0].split() == list("abcdefgh") and "8 | B | B |" in text and "1 | W | W |" in text
    assert max(len(line) for line in text.splitlines()) <= 72
    assert (RULES.army_letters(1), RULES.army_letters(2)) == ("W", "B")
    assert RULES.material(pos) == 32
    assert RULES.example_move(pos) == "d2-d3"
    RULES.parse_move(pos, RULES.example_move(pos))


def test_the_robot_plays_legal_moves_on_strings_deterministically():
    text = START
    for ply in range(4):
        move, comment = RULES.robot_move(text, 1, ply, ())
        assert isinstance(move, str) and comment.startswith("robot1 ")
        assert RULES.robot_move(text, 1, ply, ()) == (move, comment)
        pos = RULES.load(text)
        text = RULES.dump(RULES.play(pos, RULES.parse_move(pos, move)))


def test_the_robot_takes_a_win_and_accepts_a_draw_only_when_worse():
    one_step = make(
        """
        . . . . . . . .
        . . . . W . . .
        . . . . . . . .
        . . . . . . . .
        . . . . . . . .
        . . . . . . . .
        B B B B B . . .
        . . . . . . . .
        """
    )
    move, _ = RULES.robot_move(RULES.dump(one_step), 1, 0)
    assert move in ("e7-e8", "e7-d8", "e7-f8")
    # White (to move) is about to win: Black's robot would take a draw, White's not
    assert RULES.robot_accepts_draw(one_step, 2, 1, 0)
    assert not RULES.robot_accepts_draw(one_step, 1, 1, 0)
    assert not RULES.robot_accepts_draw(RULES.start("8x8"), 2, 1, 0)


def test_help_values_and_perft():
    values = RULES.help_values()
    assert values["n"] == 8 and values["board"] == RULES.board_text(RULES.start("8x8"))
    pos = RULES.start("8x8")
    assert [RULES.perft(pos, d) for d in (1, 2, 3)] == [22, 484, 11132]


def test_pictures():
    pos = RULES.start("8x8")
    after = RULES.play(pos, RULES.parse_move(pos, "d2-d3"))
    png = RULES.picture_png(after, "d2-d3")
    with Image.open(io.BytesIO(png)) as im:
        assert im.format == "PNG" and im.width == 2 * RULES.picture_width
    assert RULES.picture_png(after, "") != png  # the last move is marked
    svg = RULES.picture_svg(after, "d2-d3")
    assert svg.lstrip().startswith("<svg") or svg.lstrip().startswith("<?xml")
    assert 'class="last"' in svg and 'class="last"' not in RULES.picture_svg(after)
    assert "White pawn d3" in svg
    alt = RULES.picture_alt(after)
    assert alt.startswith("Breakthrough 8x8, Black to move.") and "d3" in alt


def test_colours_and_the_words_of_an_ending():
    assert RULES.army_colour(1)[0] == "white" and RULES.army_colour(2)[0] == "black"
    assert all(colour.startswith("#") and len(colour) == 7 for _, colour in map(RULES.army_colour, (1, 2)))
    through = make(
        """
        . . . . W . . .
        . . . . . . . .
        . . . . . . . .
        . . . . . . . .
        . . . . . . . .
        . . . . . . . .
        B . . . . . . .
        . . . . . . . .
        """,
        "b",
    )
    assert RULES.why_won(through.outcome(), 2) == "broke through to the far row"
    wiped = RULES.start("8x8").without_army(2)
    assert wiped.outcome().winner == 1 and RULES.why_won(wiped.outcome(), 2) == "captured every enemy pawn"
    stuck = Outcome(1, "Black has no legal move")  # (cannot happen: the front pawn always has a diagonal)
    assert RULES.why_won(stuck, 2) == "left the opponent without a move"
    assert RULES.why_drawn(stuck) and RULES.army_out(2) == " lost every Black pawn."
