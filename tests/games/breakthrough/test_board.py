"""The ASCII board of a mail: framed like Terrace's, pawns ``W``/``B``, ``.`` empty."""

from __future__ import annotations

from pbmserv_terrace.games.breakthrough import army_letters, board_text, parse_move, start

START = """\
        a   b   c   d   e   f   g   h
      +---+---+---+---+---+---+---+---+
    8 | B | B | B | B | B | B | B | B | 8
      +---+---+---+---+---+---+---+---+
    7 | B | B | B | B | B | B | B | B | 7
      +---+---+---+---+---+---+---+---+
    6 | . | . | . | . | . | . | . | . | 6
      +---+---+---+---+---+---+---+---+
    5 | . | . | . | . | . | . | . | . | 5
      +---+---+---+---+---+---+---+---+
    4 | . | . | . | . | . | . | . | . | 4
      +---+---+---+---+---+---+---+---+
    3 | . | . | . | . | . | . | . | . | 3
      +---+---+---+---+---+---+---+---+
    2 | W | W | W | W | W | W | W | W | 2
      +---+---+---+---+---+---+---+---+
    1 | W | W | W | W | W | W | W | W | 1
      +---+---+---+---+---+---+---+---+
        a   b   c   d   e   f   g   h"""


def test_the_start_board() -> None:
    assert board_text(start()) == START
    assert army_letters(1) == "W" and army_letters(2) == "B"


def test_a_move_shows_and_the_board_stays_monospaced() -> None:
    pos = start()
    pos = pos.play(parse_move(pos, "e2-f3"))
    lines = board_text(pos).splitlines()
    assert lines[12] == "    3 | . | . | . | . | . | W | . | . | 3"
    assert lines[14] == "    2 | W | W | W | W | . | W | W | W | 2"
    assert {len(line) for line in lines} == {37, 39, 41} and all(line.isascii() for line in lines)
    small = board_text(start("6x6")).splitlines()
    assert len(small) == 15 and small[2] == "    6 | B | B | B | B | B | B | 6"
