"""The rules: start positions, move counts against an independent generator, and
the edge cases (no straight capture, diagonal captures, winning on the goal row
with a capture too, all pawns lost, a blocked pawn, no move)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pbmserv_terrace.games.breakthrough import (
    BLACK,
    SETUPS,
    WHITE,
    IllegalMoveError,
    Move,
    dump,
    format_move,
    legal_moves,
    material,
    outcome,
    parse_move,
    perft,
    play,
    setup_for,
    start,
    to_move,
)

from .helpers import brute_moves, brute_perft, grid_of, make, random_game, side_letter


def names(pos, moves=None) -> set[str]:
    return {format_move(pos, m) for m in (pos.legal_moves() if moves is None else moves)}


def test_the_start_positions() -> None:
    pos = start()
    assert pos.n == 8 and to_move(pos) == WHITE and material(pos) == 32
    assert dump(pos) == "BBBBBBBB/BBBBBBBB/8/8/8/8/WWWWWWWW/WWWWWWWW w"
    small = start("-6x6")
    assert small.n == 6 and material(small) == 24
    assert dump(small) == "BBBBBB/BBBBBB/6/6/WWWWWW/WWWWWW w"
    assert SETUPS[0] == "8x8" and start("8x8") == pos == start("standard")
    assert outcome(pos) is None and pos.armies() == [WHITE, BLACK]
    # the 22 first moves: 8 straight steps and 14 diagonal ones from rank 2
    assert len(legal_moves(pos)) == 22
    assert "a2-a3" in names(pos) and "b2-c3" in names(pos) and "a1-a2" not in names(pos)


def test_setups_and_players() -> None:
    assert setup_for(2, None) == "8x8"
    assert setup_for(2, "-6x6") == "6x6"
    with pytest.raises(ValueError, match="two players"):
        setup_for(3, None)
    with pytest.raises(ValueError, match="no setup -long"):
        setup_for(2, "-long")


@pytest.mark.parametrize(("setup", "depth"), [("8x8", 3), ("6x6", 4)])
def test_perft_from_the_start_agrees_with_an_independent_generator(setup: str, depth: int) -> None:
    pos = start(setup)
    expected = [brute_perft(grid_of(pos), pos.n, "W", d) for d in range(1, depth + 1)]
    assert [perft(pos, d) for d in range(1, depth + 1)] == expected
    if setup == "8x8":
        assert expected == [22, 484, 11132]  # as published for Breakthrough, and as counted above


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32), plies=st.integers(0, 120), small=st.booleans())
def test_moves_of_random_positions_agree_with_an_independent_generator(seed: int, plies: int, small: bool) -> None:
    pos = random_game(start("6x6" if small else "8x8"), random.Random(seed), plies)[-1]
    n = pos.n
    theirs = {((f1 + n * r1), (f2 + n * r2)) for (f1, r1), (f2, r2) in brute_moves(grid_of(pos), n, side_letter(pos))}
    assert {tuple(m) for m in pos.legal_moves()} == theirs
    assert perft(pos, 2) == brute_perft(grid_of(pos), n, side_letter(pos), 2)
    assert (outcome(pos) is None) == bool(theirs)
    for m in pos.legal_moves():
        assert pos.is_legal(m)


def test_no_straight_capture_and_a_blocked_pawn() -> None:
    pos = make(
        """
        . . . . . . B B
        . . . . . . . B
        . . . . . . . .
        . . . . . . . .
        . . . B . . . .
        . . . W . . . .
        . . . . . . . .
        W . . . . . . .
        """
    )
    # d3 faces d4 (an enemy): no straight step, no capture straight ahead; diagonals free
    assert {m for m in names(pos) if m.startswith("d3")} == {"d3-c4", "d3-e4"}
    with pytest.raises(IllegalMoveError, match="captures only diagonally forward, never straight ahead"):
        parse_move(pos, "d3xd4")
    with pytest.raises(IllegalMoveError, match="captures only diagonally"):
        parse_move(pos, "d3-d4")
    blocked = make(
        """
        . . . . . . B B
        . . . . . . . B
        . . . . . . . .
        . . . . . . . .
        . . W B W . . .
        . . W W W . . .
        . . . . . . . .
        . . . . . . . .
        """
    )
    # d3 is blocked ahead by an enemy and on both diagonals by its own pawns: no move at all
    assert {m for m in names(blocked) if m.startswith("d3")} == set()
    with pytest.raises(IllegalMoveError, match="c4 holds White's own pawn"):
        parse_move(blocked, "d3-c4")
    with pytest.raises(IllegalMoveError, match="never straight ahead"):
        parse_move(blocked, "d3-d4")


def test_captures_are_diagonal_forward_only_and_not_compulsory() -> None:
    pos = make(
        """
        . . . . . . . .
        . . . . . . . B
        . . . . . . . .
        . . . . . . . .
        . . B . B . . .
        . . . W . . . .
        . . B . . . . .
        W . . . . . . .
        """
    )
    moves = names(pos)
    assert {"d3xc4", "d3xe4", "d3-d4"} <= moves  # captures, or a quiet step instead
    assert not any(m.startswith("d3") and m[3:] in ("c2", "c3", "e3") for m in moves)  # never back or sideways
    after = play(pos, parse_move(pos, "d3xc4"))
    assert material(after) == material(pos) - 1 and after.army_at(parse_square_of(after, "c4")) == WHITE
    # Black captures downwards
    black = after.with_turn(BLACK)
    assert {m for m in names(black) if m.startswith("e4")} == {"e4-d3", "e4-e3", "e4-f3"}  # never up the board


def parse_square_of(pos, name: str) -> int:
    return "abcdefgh".index(name[0]) + (int(name[1:]) - 1) * pos.n


def test_reaching_the_goal_row_wins_also_with_a_capture() -> None:
    pos = make(
        """
        . . B B B . . .
        . . . W . . . .
        . . . . . . . .
        . . . . . . . .
        . . . . . . . .
        . . . . . . . .
        B . . . . . . .
        . . . . . . . .
        """
    )
    # d7 is blocked straight ahead; both diagonals are captures onto rank 8
    assert names(pos) >= {"d7xc8", "d7xe8"} and "d7-d8" not in names(pos)
    won = play(pos, parse_move(pos, "d7xc8"))
    result = outcome(won)
    assert result is not None and result.winner == WHITE and "reached rank 8" in result.reason
    assert won.legal_moves() == [] and won.is_over()
    # Black reaching rank 1 wins for Black
    race = make(
        """
        . . . . . . . .
        . . . . . . . B
        . . . . . . . .
        . . . . . . . .
        . . . . . . . .
        . . . . . . . .
        B . . . . . . .
        . W . . . . . .
        """,
        "b",
    )
    final = play(race, parse_move(race, "a2xb1"))
    assert outcome(final).winner == BLACK and outcome(final).reason == "a Black pawn reached rank 1"


def test_losing_all_pawns_loses() -> None:
    pos = make(
        """
        . . . . . . . .
        . . . . . . . .
        . . . . . . . .
        . . . B . . . .
        . . W . . . . .
        . . . . . . . .
        . . . . . . . .
        . . . . . . . .
        """
    )
    after = play(pos, parse_move(pos, "c4xd5"))
    result = outcome(after)
    assert result is not None and result.winner == WHITE and result.reason == "Black has no pawns left"
    assert after.legal_moves() == []
    resigned = start().without_army(WHITE)
    assert outcome(resigned).winner == BLACK


@settings(max_examples=200, deadline=None)
@given(data=st.data(), small=st.booleans())
def test_an_army_with_pawns_always_has_a_move(data: st.DataObject, small: bool) -> None:
    """The rule "no legal move loses" never decides a game: the rearmost pawn of an
    army always has a diagonal step (onto an empty square or an enemy pawn)."""
    n = 6 if small else 8
    middle = range(n, n * n - n)  # no pawn on a goal row: the game goes on
    white = data.draw(st.sets(st.sampled_from(middle), min_size=1, max_size=12))
    black = data.draw(st.sets(st.sampled_from([sq for sq in middle if sq not in white]), min_size=1, max_size=12))
    side = data.draw(st.sampled_from(["w", "b"]))
    rows = []
    for rank in range(n - 1, -1, -1):
        rows.append(" ".join("W" if sq in white else "B" if sq in black else "." for sq in range(rank * n, rank * n + n)))
    pos = make("\n".join(rows), side)
    assert pos.legal_moves() and outcome(pos) is None


def test_no_legal_move_would_lose() -> None:
    """(Reachable only without pawns, which counts first.)"""
    pos = make(
        """
        . . . . . .
        . . . . . .
        B . . . . .
        W . . . . .
        . . . . . .
        . . . . . .
        """,
        "b",
    ).without_army(BLACK)
    assert pos.legal_moves() == [] and outcome(pos).winner == WHITE
    with pytest.raises(IllegalMoveError, match="the game is over"):
        parse_move(pos, "a4-a3")


def test_play_refuses_an_illegal_move_and_positions_are_values() -> None:
    pos = start()
    with pytest.raises(IllegalMoveError):
        pos.play(Move(8, 24))  # a2-a4
    a = play(pos, parse_move(pos, "e2-e3"))
    b = play(start(), parse_move(start(), "e2-e3"))
    assert a == b and hash(a) == hash(b) and pos == start()
    assert a.announcements() == []


def test_announcement_of_a_pawn_one_step_from_the_goal_row() -> None:
    pos = make(
        """
        B B . . . . . .
        . . W . . . . .
        . . . . . . . .
        . . . . . . . .
        . . . . . . . .
        . . . . . . . .
        . . . . . . . .
        W . . . . . . .
        """,
        "b",
    )
    assert pos.announcements() == ["White's pawn on c7 threatens to break through; Black is to move."]
