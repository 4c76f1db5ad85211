"""The search board against the rules: same moves, and a Zobrist hash that is
updated incrementally yet always equals the from-scratch hash, through make and
unmake, along random games of two to four armies."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from pbmserv_terrace.games.terrace import start_position
from pbmserv_terrace.games.terrace.engine.board import SearchBoard, encode, to_move_obj
from pbmserv_terrace.games.terrace.engine.zobrist import full_hash
from pbmserv_terrace.games.terrace.setups import VARIANTS


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**9), n=st.sampled_from([8, 6]), variant=st.sampled_from(VARIANTS), plies=st.integers(0, 200))
def test_incremental_hash_and_moves_follow_the_rules_along_random_games(seed, n, variant, plies):
    rng = random.Random(seed)
    pos = start_position(variant, n)
    sb = SearchBoard(pos)
    trail = []
    for _ in range(plies):
        assert sb.hash == full_hash(pos)
        assert sorted(sb.moves()) == sorted(encode(m) for m in pos.legal_moves())
        assert sb.to_move == pos.to_move
        out = pos.outcome()
        assert sb.winner == (out.winner or 0 if out else 0)
        moves = sb.moves()
        if not moves:
            break
        m = rng.choice(moves)
        trail.append((sb.make(m), pos))
        pos = pos.play(to_move_obj(m))
    assert sb.hash == full_hash(pos)
    for undo, before in reversed(trail):
        sb.unmake(undo)
        assert sb.hash == full_hash(before)
        assert sb.board == before.board and sb.am == before.army_mask and sb.le == before.size_mask and sb.occ == before.occ


def test_tactical_moves_are_the_legal_enemy_captures_and_the_step_home():
    rng = random.Random(3)
    for variant in VARIANTS:
        pos = start_position(variant, 6)
        for _ in range(80):
            if pos.is_over():
                break
            sb = SearchBoard(pos)
            army = pos.to_move
            expected = {
                encode(m)
                for m in pos.legal_moves()
                if (pos.board[m.to] and pos.board[m.to] >> 3 != army) or (m.frm == pos.t_square(army) and m.to == sb.goal[army])
            }
            assert set(sb.tactical_moves()) == expected
            pos = pos.play(rng.choice(pos.legal_moves()))
