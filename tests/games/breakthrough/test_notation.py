"""Move notation (reading, canonical form, refusals with their sentences) and the
stored position string (round trips, refusals)."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pbmserv_terrace.games.breakthrough import (
    IllegalMoveError,
    PositionStringError,
    dump,
    example_move,
    format_move,
    load,
    looks_like_move,
    parse_move,
    start,
)

from .helpers import make, random_game

CAPTURE = make(
    """
    B B B B B B B B
    B B B . B B B B
    . . . . . . . .
    . . . B . . . .
    . . W . . . . .
    . . . . . . . .
    W W . W W W W W
    W W W W W W W W
    """
)


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("a2-a3", "a2-a3"),
        ("b2-c3", "b2-c3"),
        ("B2-C3", "b2-c3"),
        ("  b2-c3  ", "b2-c3"),
        ("b2 - c3", "b2-c3"),
        ("b2xc3", "b2-c3"),  # an x on a plain move: from and to name it
        ("b2\u2013c3", "b2-c3"),  # an en dash
        ("c4xd5", "c4xd5"),
        ("c4-d5", "c4xd5"),  # a - on a capture
        ("C4XD5", "c4xd5"),
        ("c4-c5", "c4-c5"),
    ],
)
def test_moves_are_read_in_their_forms_and_written_canonically(text: str, canonical: str) -> None:
    pos = start() if not text.strip().lower().startswith("c4") else CAPTURE
    assert format_move(pos, parse_move(pos, text)) == canonical
    assert looks_like_move(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("b2-b4", "b2-b4: a pawn moves one square forward."),
        ("b2-d4", "b2-d4: a pawn moves one square, straight or diagonally forward."),
        ("b2-a4", "b2-a4: a pawn moves one square, straight or diagonally forward."),
        ("b3-b4", "b3-b4: there is no pawn on b3."),
        ("b7-b6", "b7-b6: the pawn on b7 is Black's, and White is to move."),
        ("b2-b1", "b2-b1: a pawn never moves back (White's pawns move towards rank 8)."),
        ("b2-c2", "b2-c2: a pawn never moves sideways, only one square forward."),
        ("b1-b2", "b1-b2: b2 holds White's own pawn."),
        ("b1-c2", "b1-c2: c2 holds White's own pawn."),
        ("b2-b2", "b2-b2: a pawn must move to another square."),
        ("i2-i3", "i2-i3: i2 is not a square of the 8x8 board (a1-h8)."),
        ("a9-a8", "a9-a8: a9 is not a square of the 8x8 board (a1-h8)."),
        ("hello", '"hello" is not a move: write FROM-TO for a move, FROMxTO for a capture (b2-b3, b2-c3, b4xc5).'),
        ("b2b3", '"b2b3" is not a move: write FROM-TO for a move, FROMxTO for a capture (b2-b3, b2-c3, b4xc5).'),
        ("b2-b3-b4", '"b2-b3-b4" is not a move'),
        ("", "No move was given: write FROM-TO"),
    ],
)
def test_refusals_say_why(text: str, message: str) -> None:
    with pytest.raises(IllegalMoveError) as caught:
        parse_move(start(), text)
    assert str(caught.value).startswith(message)
    assert isinstance(caught.value, ValueError)


def test_straight_captures_and_the_6x6_board_are_refused() -> None:
    pos = make(
        """
        B B B B B B B B
        B B B . B B B B
        . . . . . . . .
        . . . B . . . .
        . . . W . . . .
        . . . . . . . .
        W W W . W W W W
        W W W W W W W W
        """
    )
    for text in ("d4xd5", "d4-d5"):
        with pytest.raises(IllegalMoveError, match="captures only diagonally forward, never straight ahead"):
            parse_move(pos, text)
    small = start("6x6")
    with pytest.raises(IllegalMoveError, match="g2 is not a square of the 6x6 board"):
        parse_move(small, "g2-g3")
    black = small.play(parse_move(small, "a2-a3"))
    assert format_move(black, parse_move(black, "f5-e4")) == "f5-e4"
    with pytest.raises(IllegalMoveError, match="Black's pawns move towards rank 1"):
        parse_move(black, "f5-f6")


def test_example_moves() -> None:
    assert example_move(start()) == "d2-d3"
    pos = start()
    black = pos.play(parse_move(pos, "d2-d3"))
    assert example_move(black) == "d7-d6"  # (d and e are as central on 8x8: d7-d6 comes first by name)
    assert example_move(start("6x6")) == "c2-c3"
    over = start().without_army(2)
    assert example_move(over) == "d2-d3"


def test_the_stored_string() -> None:
    pos = start()
    assert load(dump(pos)) == pos
    assert dump(CAPTURE) == "BBBBBBBB/BBB1BBBB/8/3B4/2W5/8/WW1WWWWW/WWWWWWWW w"
    assert load("6/6/6/6/6/W5 b").to_move == 2
    # every position fits the column: a full board is the longest
    full = "/".join(["WBWBWBWB"] * 8) + " w"
    assert len(dump(load(full))) == len(full) == 73 <= 200


@pytest.mark.parametrize(
    "text",
    [
        "",
        "BBBBBBBB/BBBBBBBB/8/8/8/8/WWWWWWWW/WWWWWWWW",  # no side to move
        "BBBBBBBB/BBBBBBBB/8/8/8/8/WWWWWWWW/WWWWWWWW x",
        "BBBBBBBB/BBBBBBBB/8/8/8/8/WWWWWWWW w",  # seven ranks
        "BBBBBBBB/BBBBBBBB/8/8/8/8/WWWWWWW/WWWWWWWW w",  # a short rank
        "BBBBBBBB/BBBBBBBB/8/8/8/8/WWWWWWWWW/WWWWWWWW w",  # a long rank
        "BBBBBBBB/BBBBBBBB/8/8/8/8/WWWWWWWX/WWWWWWWW w",
        "BBBBBBBB/BBBBBBBB/8/8/8/9/WWWWWWWW/WWWWWWWW w",
        "BBBBBB/BBBBBB/6/6/WWWWWW/WWWWWW  w",
    ],
)
def test_bad_stored_strings_are_refused(text: str) -> None:
    with pytest.raises(PositionStringError):
        load(text)


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32), plies=st.integers(0, 150), small=st.booleans())
def test_round_trips_over_random_games(seed: int, plies: int, small: bool) -> None:
    game = random_game(start("6x6" if small else "8x8"), random.Random(seed), plies)
    for before, after in itertools.pairwise(game):
        assert load(dump(before)) == before and len(dump(before)) <= 200
        (move,) = [m for m in before.legal_moves() if before.play(m) == after]
        text = format_move(before, move)
        assert parse_move(before, text) == move
        assert parse_move(before, f" {text.upper()} ") == move
        other_sign = text.replace("-", "x") if "-" in text else text.replace("x", "-")
        assert parse_move(before, other_sign) == move
        assert ("x" in text) == (before.material() > after.material())
    assert load(dump(game[-1])) == game[-1]
