"""The robot: a legal move always, an immediate win taken, the one defence found,
the same move for the same seed, the node budget kept, the draw answer, and a
robot that beats a random player."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pbmserv_terrace.games.breakthrough import (
    LEVELS,
    accepts_draw,
    analyse,
    choose_move,
    dump,
    format_move,
    load,
    outcome,
    robot_move,
    start,
)
from pbmserv_terrace.games.breakthrough.robot import MATE_BOUND, evaluate

from .helpers import make, random_game


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32), plies=st.integers(0, 100), small=st.booleans())
def test_the_robot_always_plays_a_legal_move(seed: int, plies: int, small: bool) -> None:
    pos = random_game(start("6x6" if small else "8x8"), random.Random(seed), plies)[-1]
    if pos.is_over():
        with pytest.raises(ValueError, match="over"):
            choose_move(pos, 1, seed)
        return
    move, comment = choose_move(pos, 1, seed)
    assert move in pos.legal_moves()
    assert comment.startswith("robot1 ") and "\n" not in comment


WIN_IN_ONE = make(
    """
    B B . . B B B B
    . . . . W . . B
    . . . . . . . .
    . . . . . . . .
    . . . . . . . .
    . . . . . . . .
    B . . . . . . .
    . W . . . . . .
    """,
)


@pytest.mark.parametrize("level", sorted(LEVELS))
def test_the_robot_takes_an_immediate_win(level: int) -> None:
    move, comment = choose_move(WIN_IN_ONE, level)
    after = WIN_IN_ONE.play(move)
    assert outcome(after) is not None and outcome(after).winner == 1
    assert comment == f"robot{level} sees a forced win"
    # Black's b2 is blocked straight ahead by b1: it wins on a1 or by capturing c1
    blocked = make(
        """
        . . . B B B . .
        . . . . B . . .
        . . . . . . . .
        . . . . . . . .
        . . . . . . . .
        . . . . . . W .
        . B . . . . . .
        . W W . . . . .
        """,
        "b",
    )
    move, _ = choose_move(blocked, level)
    assert format_move(blocked, move) in ("b2-a1", "b2xc1")
    assert outcome(blocked.play(move)).winner == 2


@pytest.mark.parametrize("level", sorted(LEVELS))
def test_the_robot_captures_the_pawn_that_would_win(level: int) -> None:
    # White's pawn on b7 wins next move unless Black captures it, which only a8 or c8 can
    pos = make(
        """
        B . B . . B B B
        . W . . . . B B
        . . . . . . . .
        . . . . . . . .
        . . . . . W . .
        . . . . . . . .
        W W . . . . . .
        W W . . . . . .
        """,
        "b",
    )
    move, _ = choose_move(pos, level)
    assert format_move(pos, move) in ("a8xb7", "c8xb7")


def test_the_robot_sees_a_loss_it_cannot_stop() -> None:
    # two White pawns one step from rank 8: Black can capture only one
    pos = make(
        """
        . . . . . . B B
        . W . . . W . .
        . . . . . . . .
        . . . . . . . .
        . . . . . . . .
        . . . . . . . B
        . . . . . . . .
        W . . . . . . .
        """,
        "b",
    )
    result = analyse(pos, 1)
    assert result.score <= -MATE_BOUND
    assert accepts_draw(pos, 2, 1) and not accepts_draw(pos, 1, 1)


def test_the_same_seed_gives_the_same_move_and_the_budget_holds() -> None:
    pos = random_game(start(), random.Random(7), 12)[-1]
    for level in sorted(LEVELS):
        first = analyse(pos, level, seed=3)
        assert analyse(pos, level, seed=3) == first
        assert first.nodes <= LEVELS[level][1] + 1 and 1 <= first.depth <= LEVELS[level][0]
    seen = {analyse(start(), 1, seed=s).move for s in range(12)}
    assert len(seen) > 1, "the seed picks among equally good moves"


def test_robot_move_on_strings_and_no_draw_at_the_start() -> None:
    text = dump(start())
    move, comment = robot_move(text, 1, 5)
    pos = load(text)
    assert any(format_move(pos, m) == move for m in pos.legal_moves())
    assert comment.startswith("robot1")
    assert not accepts_draw(start(), 1, 1) and not accepts_draw(start(), 2, 1)


def test_the_evaluation_is_symmetric() -> None:
    for pos in random_game(start(), random.Random(3), 40):
        mirrored = sum(1 << ((7 - sq // 8) * 8 + sq % 8) for sq in range(64) if pos.black >> sq & 1)
        mirrored_black = sum(1 << ((7 - sq // 8) * 8 + sq % 8) for sq in range(64) if pos.white >> sq & 1)
        assert evaluate(8, pos.white, pos.black) == -evaluate(8, mirrored, mirrored_black)


@pytest.mark.parametrize("setup", ["6x6", "8x8"])
def test_level_1_beats_a_random_player(setup: str) -> None:
    rng = random.Random(setup)
    for robot_army in (1, 2):
        pos = start(setup)
        while not pos.is_over():
            if pos.to_move == robot_army:
                move, _ = choose_move(pos, 1, seed=dump(pos))
            else:
                move = rng.choice(pos.legal_moves())
            pos = pos.play(move)
        assert outcome(pos).winner == robot_army
