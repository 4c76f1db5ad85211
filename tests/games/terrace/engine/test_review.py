"""Reviews of finished games (issue 42): on games whose decisive mistake is known by
construction, the review names that move, the better one, and the proved reason."""

from __future__ import annotations

import pytest

from pbmserv_terrace.games.terrace import Move, Position, parse_tpn, start_position
from pbmserv_terrace.games.terrace.engine import choose_move
from pbmserv_terrace.games.terrace.engine.board import SearchBoard
from pbmserv_terrace.games.terrace.engine.review import CLIP, MIN_SWING, review_game
from pbmserv_terrace.games.terrace.engine.solve import prove_loss, prove_win

from .solver import winning_moves
from .test_engine import MATE_IN_1
from .test_solve import sparse_positions

NODES = 3_000


def _blunder_games(count: int) -> list[tuple[Position, Move, Move, str]]:
    """(start, blunder, the opponent's winning reply, what kind of win it is): the
    mover was neither winning nor lost in two, had a move that loses nothing at once,
    and played one after which the other side wins in one."""
    found = []
    for seed in range(40):
        for pos in sparse_positions(10, 1000 + seed):
            sb = SearchBoard(pos)
            if prove_win(sb, 2, 200_000) is not None or prove_loss(sb, 2, 200_000) is not None:
                continue
            for move in pos.legal_moves():
                after = pos.play(move)
                if after.outcome() is not None:
                    continue
                wins = winning_moves(after, 1)
                if wins:
                    kind = "taken" if after.board[wins[0].to] else "corner"
                    found.append((pos, move, wins[0], kind))
                    break
            if len(found) >= count:
                return found
    return found


BLUNDERS = _blunder_games(4)


def test_the_fixture_has_games():
    assert len(BLUNDERS) >= 3


@pytest.mark.parametrize("case", range(len(BLUNDERS)))
def test_the_losing_move_is_named_with_its_proved_reason(case):
    start, blunder, reply, kind = BLUNDERS[case]
    review = review_game(start, [blunder, reply], nodes=NODES)
    mover = start.to_move
    mistakes = review.mistakes[mover]
    assert mistakes, review
    top = mistakes[0]
    assert top.ply == 1 and top.played == blunder
    assert top.better != blunder
    # the better move does not lose in one
    assert not winning_moves(start.play(top.better), 1)
    assert top.reason in (
        ("lets the opponent's T reach its corner",) if kind == "corner" else ("leaves its T to be taken", "lets the opponent take a T")
    )
    assert review.turning_point == 1
    assert review.evaluations[-1] == (-CLIP if mover == 1 else CLIP)  # army 1's view: the mover lost


def test_a_missed_terrace_in_one():
    pos = parse_tpn(MATE_IN_1[0])
    win = winning_moves(pos, 1)
    other = next(m for m in pos.legal_moves() if m not in win and pos.play(m).outcome() is None)
    review = review_game(pos, [other], nodes=NODES)
    top = review.mistakes[pos.to_move][0]
    assert top.ply == 1 and top.better in win
    assert top.reason in ("misses a Terrace in 1", "misses taking the T")
    assert top.reason == ("misses taking the T" if pos.board[win[0].to] else "misses a Terrace in 1")


def test_a_clean_game_between_equal_robots_has_evaluations_for_every_ply():
    pos = start_position("short", 6)
    moves = []
    for ply in range(12):
        m = choose_move(pos, level=2, ply=ply).move
        moves.append(m)
        pos = pos.play(m)
    review = review_game(start_position("short", 6), moves, nodes=NODES)
    assert len(review.evaluations) == len(moves) + 1
    assert all(-CLIP <= e <= CLIP for e in review.evaluations)
    for ms in review.mistakes.values():
        assert len(ms) <= 3
        assert all(m.swing >= MIN_SWING for m in ms)
        assert [m.swing for m in ms] == sorted((m.swing for m in ms), reverse=True)


def test_three_armies_are_refused():
    with pytest.raises(ValueError, match="two-army"):
        review_game(start_position("3p", 8), [])


def test_the_review_is_reproducible():
    start, blunder, reply, _ = BLUNDERS[0]
    assert review_game(start, [blunder, reply], nodes=NODES) == review_game(start, [blunder, reply], nodes=NODES)
