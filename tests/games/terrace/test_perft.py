"""§9 perft: the published counts, pinned depth-3 counts, and the fast generator
checked against the slow reference generator of ``reference.py``."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pbmserv_terrace.games.terrace import format_tpn, parse_tpn, start_position
from pbmserv_terrace.games.terrace.perft import divide, perft
from pbmserv_terrace.games.terrace.setups import VARIANTS

from .reference import pieces, slow_moves, slow_perft


def test_s9_published_counts_long_start():
    pos = start_position("long")
    assert perft(pos, 0) == 1
    assert perft(pos, 1) == 50
    assert perft(pos, 2) == 2450


# Pinned after checking each against slow_perft (test below) at depth 3.
DEPTH3 = {
    (8, "long"): 127166,
    (8, "medium"): 33286,
    (8, "short"): 32970,
    (8, "master"): 52114,
    (8, "3p"): 18339,
    (8, "4p"): 14499,
    (6, "long"): 17557,
    (6, "medium"): 5774,
    (6, "short"): 5672,
    (6, "master"): 8326,
    (6, "3p"): 2670,
    (6, "4p"): 1976,
}


@pytest.mark.parametrize(("n", "variant"), list(DEPTH3))
def test_s9_depth3_pinned(n, variant):
    assert perft(start_position(variant, n), 3) == DEPTH3[(n, variant)]


@pytest.mark.parametrize(("n", "variant"), [(n, v) for n in (8, 6) for v in VARIANTS if (n, v) != (8, "long")])
def test_s9_depth3_agrees_with_slow_reference(n, variant):
    pos = start_position(variant, n)
    assert slow_perft(n, pieces(pos), pos.to_move, 3) == DEPTH3[(n, variant)]


def test_s9_long_depth2_agrees_with_slow_reference_and_divide_sums():
    pos = start_position("long")
    assert slow_perft(8, pieces(pos), 1, 2) == 2450
    assert sum(divide(pos, 2).values()) == 2450


def test_s9_finished_positions_have_no_moves():
    won = parse_tpn("7t/8/8/8/8/8/8/1T6 2")  # army 1's t stands on its goal h8
    assert perft(won, 1) == 0 and perft(won, 2) == 0 and perft(won, 0) == 1


def _random_game_positions(seed: int, n: int, variant: str, plies: int):
    rng = random.Random(seed)
    pos = start_position(variant, n)
    out = [pos]
    for _ in range(plies):
        moves = pos.legal_moves()
        if not moves:
            break
        pos = pos.play(rng.choice(moves))
        out.append(pos)
    return out


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10**9),
    n=st.sampled_from([8, 6]),
    variant=st.sampled_from(VARIANTS),
    plies=st.integers(0, 120),
)
def test_fast_generator_equals_slow_reference_along_random_games(seed, n, variant, plies):
    for pos in _random_game_positions(seed, n, variant, plies):
        geo = pos.geo
        fast = {((m.frm % n, m.frm // n), (m.to % n, m.to // n)) for m in pos.legal_moves()}
        assert fast == slow_moves(n, pieces(pos), pos.to_move), format_tpn(pos)
        assert pos.count_moves() == len(fast)
        assert parse_tpn(format_tpn(pos), geo.n) == pos


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**9), n=st.sampled_from([8, 6]))
def test_random_positions_match_reference(seed, n):
    """Sparse random boards (not reachable by play) stress blocked terraces and captures."""
    rng = random.Random(seed)
    board = [0] * (n * n)
    armies = rng.sample([1, 2, 3, 4], rng.randint(2, 4))
    free = list(range(n * n))
    rng.shuffle(free)
    for army in armies:
        board[free.pop()] = army << 3  # its T
        for _ in range(rng.randint(0, 6)):
            board[free.pop()] = army << 3 | rng.randint(1, 4)
    from pbmserv_terrace.games.terrace import Position

    pos = Position(n, board, rng.choice(armies))
    fast = {((m.frm % n, m.frm // n), (m.to % n, m.to // n)) for m in pos.legal_moves()}
    assert fast == slow_moves(n, pieces(pos), pos.to_move), format_tpn(pos)
    assert perft(pos, 2) == slow_perft(n, pieces(pos), pos.to_move, 2)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10**9),
    n=st.sampled_from([8, 6]),
    variant=st.sampled_from(VARIANTS),
    plies=st.integers(0, 150),
)
def test_bulk_two_ply_count_equals_slow_reference_along_random_games(seed, n, variant, plies):
    """The incremental two-ply count (captures, T captures, T home, 3–4 armies) against
    the reference, on the last position of a random game and its predecessor."""
    for pos in _random_game_positions(seed, n, variant, plies)[-2:]:
        assert perft(pos, 2) == slow_perft(n, pieces(pos), pos.to_move, 2), format_tpn(pos)


@pytest.mark.parametrize(
    "tpn",
    [
        "6t1/8/8/8/8/8/1T6/8 1",  # army 1 can step its T home (g8-h8): no replies after it
        "8/8/8/8/8/3d4/2T5/t7 1",  # d3xc2 captures the enemy T and ends the game
        "1d'c'c'b'b't'1/D'6T/C'6B/C'6B/B'6C/B'6C/T'6D/1tbbccd1 1",
    ],
)
def test_bulk_count_edge_positions_match_reference(tpn):
    pos = parse_tpn(tpn)
    for depth in (2, 3):
        assert perft(pos, depth) == slow_perft(pos.n, pieces(pos), pos.to_move, depth)
