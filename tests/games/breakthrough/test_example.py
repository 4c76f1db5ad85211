"""Breakthrough's example move (the board mail's 'e.g. d2-d3') never walks into a
loss on the opponent's next move when some move does not (issue 38 item 6)."""

from __future__ import annotations

import random

import pytest

from pbmserv_terrace.games.breakthrough import Move, Position, example_move, start
from pbmserv_terrace.games.breakthrough.robot import loses_at_once
from pbmserv_terrace.gametypes.breakthrough import BreakthroughRules

from .helpers import make


def hands_over(pos: Position, move: Move) -> bool:
    """Brute force: after ``move`` the game is lost, or the opponent has a reply
    that wins it."""
    mover = pos.to_move
    after = pos.play(move)
    outcome = after.outcome()
    if outcome is not None:
        return outcome.winner != mover
    for reply in after.legal_moves():
        won = after.play(reply).outcome()
        if won is not None and won.winner != mover:
            return True
    return False


def example(pos: Position) -> Move:
    rules = BreakthroughRules(pos.n)
    return rules.parse_move(pos, rules.example_move(pos))


def test_the_example_takes_the_pawn_that_breaks_through_next():
    # Black's pawn on c2 steps onto rank 1 next unless taken: d4-d5 (a straight
    # step on the most central file: notation's example) loses, b1xc2 does not
    pos = make(
        """
        . . . . . . B .
        . . . . . . . .
        . . . . . . . .
        . . . . . . . .
        . . . W . . . .
        . . . . . . . .
        . . B . . . . .
        . W . . . . . .
        """
    )
    assert example_move(pos) == "d4-d5" and hands_over(pos, Move(27, 35))
    assert BreakthroughRules(8).example_move(pos) == "b1xc2"


def test_the_start_example_stays():
    assert BreakthroughRules(8).example_move(start()) == "d2-d3"


@pytest.mark.parametrize("setup", ["8x8", "6x6"])
def test_random_playouts_the_example_is_safe_whenever_a_safe_move_exists(setup: str) -> None:
    rng = random.Random(38)
    seen = 0
    for _ in range(80):
        pos = start(setup)
        while not pos.is_over():
            moves = pos.legal_moves()
            chosen = example(pos)
            assert chosen in moves
            assert loses_at_once(pos, chosen) == hands_over(pos, chosen)
            if hands_over(pos, chosen):
                assert all(hands_over(pos, m) for m in moves), f"{pos!r}: the example loses at once, another move does not"
            seen += 1
            pos = pos.play(rng.choice(moves))
    assert seen > 1000


def test_the_example_is_cheap(monkeypatch):
    """Bounded by its work, not timed (the machines are shared): one look (one
    ``play``) per legal move at most."""
    rng = random.Random(9)
    positions = []
    for _ in range(40):
        pos = start()
        while not pos.is_over():
            positions.append(pos)
            pos = pos.play(rng.choice(pos.legal_moves()))
    rules = BreakthroughRules(8)
    plays = total = 0
    real_play = Position.play

    def counted(self: Position, move: object) -> Position:
        nonlocal plays, total
        plays += 1
        total += 1
        return real_play(self, move)  # type: ignore[arg-type]

    for pos in positions:
        fresh = Position(pos.n, pos.white, pos.black, pos.to_move)
        legal = len(fresh.legal_moves())
        monkeypatch.setattr(Position, "play", counted)
        plays = 0
        rules.example_move(fresh)
        monkeypatch.setattr(Position, "play", real_play)
        assert plays <= legal, f"{plays} plays for {legal} legal moves"
    assert total >= len(positions)  # (the count sees the example's looks)
