"""The endgame solver (issue 42): its proofs agree with the independent brute-force
prover in ``solver.py`` (over the rules alone), on the known wins and on random
sparse positions, and it says "unknown" rather than guess when its budget runs out."""

from __future__ import annotations

import random

import pytest

from pbmserv_terrace.games.terrace import Position, parse_tpn, start_position
from pbmserv_terrace.games.terrace.engine.board import SearchBoard, to_move_obj
from pbmserv_terrace.games.terrace.engine.solve import prove_loss, prove_win

from .solver import forced_win, winning_moves
from .test_engine import MATE_IN_1, WIN_IN_2, WIN_IN_3


@pytest.mark.parametrize(("tpn", "k"), [(t, 1) for t in MATE_IN_1] + [(t, 2) for t in WIN_IN_2] + [(t, 3) for t in WIN_IN_3])
def test_known_wins_are_proved_with_their_length_and_a_winning_move(tpn, k):
    pos = parse_tpn(tpn)
    proof = prove_win(SearchBoard(pos), 3, 2_000_000)
    assert proof is not None
    assert proof.winner == pos.to_move
    assert proof.moves == k
    assert to_move_obj(proof.move) in winning_moves(pos, k)


def sparse_positions(count: int, seed: int) -> list[Position]:
    """Positions from random games, thinned by random captures: few pieces, as in
    the endgames the solver is for."""
    rng = random.Random(seed)
    out: list[Position] = []
    while len(out) < count:
        pos = start_position(rng.choice(["short", "long"]), rng.choice([6, 8]))
        for _ in range(rng.randrange(20, 90)):
            moves = pos.legal_moves()
            captures = [m for m in moves if pos.board[m.to] and pos.outcome() is None]
            nxt = pos.play(rng.choice(captures if captures and rng.random() < 0.7 else moves))
            if nxt.outcome() is not None:
                break
            pos = nxt
        if pos.outcome() is None and pos.legal_moves() and sum(1 for p in pos.board if p) <= 12:
            out.append(pos)
    return out


@pytest.mark.parametrize("seed", range(6))
def test_solver_agrees_with_the_brute_force_prover(seed):
    for pos in sparse_positions(15, seed):
        for k in (1, 2):
            proof = prove_win(SearchBoard(pos), k, 10_000_000)
            # The brute-force prover counts a stuck defender as beaten; the rules
            # (and the solver) call it a draw: skip positions where that could matter.
            truth = forced_win(pos, k)
            if proof is None and truth:
                assert _stuck_somewhere(pos, k), pos
                continue
            assert (proof is not None) == truth, (pos, k)
            if proof is not None:
                assert proof.moves <= k
                assert to_move_obj(proof.move) in winning_moves(pos, proof.moves)


def _stuck_somewhere(pos: Position, k: int) -> bool:
    """Whether a side can be left without a move within 2k plies of ``pos``."""
    frontier = [pos]
    for _ in range(2 * k):
        nxt = []
        for p in frontier:
            if p.outcome() is not None:
                continue
            moves = p.legal_moves()
            if not moves:
                return True
            nxt.extend(p.play(m) for m in moves)
        frontier = nxt
    return any(p.outcome() is None and not p.legal_moves() for p in frontier)


def test_a_lost_position_is_proved_lost_for_the_side_to_move():
    # After each known win-in-2 move, the other side is lost within 2 of the winner's moves.
    for tpn in WIN_IN_2:
        pos = parse_tpn(tpn)
        after = pos.play(winning_moves(pos, 2)[0])
        proof = prove_loss(SearchBoard(after), 2, 2_000_000)
        assert proof is not None
        assert proof.winner == pos.to_move and proof.move is None
        assert proof.moves <= 2


def test_the_start_is_neither_won_nor_lost_and_a_tiny_budget_proves_nothing():
    sb = SearchBoard(start_position("short", 6))
    assert prove_win(sb, 2, 1_000_000) is None
    assert prove_loss(sb, 1, 1_000_000) is None
    pos = parse_tpn(WIN_IN_3[0])
    assert prove_win(SearchBoard(pos), 3, 50) is None  # out of nodes: unknown, not "no win"


def test_three_armies_are_refused():
    pos = start_position("3p", 8)
    assert len(pos.armies()) == 3
    with pytest.raises(ValueError, match="two-army"):
        prove_win(SearchBoard(pos), 1, 10)
