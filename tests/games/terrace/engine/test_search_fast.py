"""robot3's search hot path (issue 42 item 4): the fast forms equal what they replace.
split_moves is moves() in two parts, order_split orders them as order() does, with
killers and history set as a search leaves them, along random games of two to four
armies (the whole search's identity on fixed positions: bench/search_speed.py --check)."""

from __future__ import annotations

import random

import pytest

from pbmserv_terrace.games.terrace import start_position
from pbmserv_terrace.games.terrace.engine.board import SearchBoard, to_move_obj
from pbmserv_terrace.games.terrace.engine.search import Limits, Searcher
from pbmserv_terrace.games.terrace.setups import VARIANTS


@pytest.mark.parametrize("variant", VARIANTS)
def test_split_moves_and_their_order_equal_moves_and_order(variant):
    rng = random.Random(variant)
    checked = specials = 0
    for game in range(6):
        pos = start_position(variant, 8 if game % 2 else 6)
        while pos.outcome() is None:
            sb = SearchBoard(pos)
            moves = sb.moves()
            quiet, caps = sb.split_moves()
            assert quiet == sorted(quiet) and caps == sorted(caps)
            assert sorted(quiet + caps) == moves
            assert all(not sb.board[m & 63] for m in quiet) and all(sb.board[m & 63] for m in caps)
            if moves:
                assert min(quiet[:1] + caps[:1]) == moves[0]
                searcher = Searcher(sb, pos.to_move, Limits(64, 10**6))
                ply = rng.randrange(4)
                # killers, history and a TT move as a search might have them: some of
                # them this position's moves (quiet, captures, the T's step home)
                pick = [rng.choice(moves), rng.choice(moves), rng.choice(quiet or moves), 0]
                searcher.killers[ply] = [pick[2], rng.choice([*moves, 0])] if pick[2] else [0, 0]
                if searcher.killers[ply][0] == searcher.killers[ply][1]:
                    searcher.killers[ply][1] = 0
                for m in moves:
                    if rng.random() < 0.5:
                        searcher.history[pos.to_move << 12 | m] = rng.randrange(50)
                for tt_move in (0, rng.choice(pick)):
                    want = searcher.order(moves, tt_move, ply)
                    assert searcher.order_split(quiet, caps, tt_move, ply) == want
                    specials += tt_move != 0
                checked += 1
                pos = pos.play(to_move_obj(rng.choice(moves)))
            else:
                break
    assert checked >= 100 and specials >= 50


def test_evasions_drop_only_moves_that_lose_the_t_at_once():
    """When the T can be taken, the quiescence's evasions keep the T's quiet moves
    (and the captures): by the rules, after each quiet move dropped the other army
    has a move that wins at once."""
    rng = random.Random(21)
    dropped = 0
    for game in range(40):
        pos = start_position(rng.choice(["short", "long"]), 8 if game % 2 else 6)
        while pos.outcome() is None:
            sb = SearchBoard(pos)
            quiet, caps = sb.split_moves()
            kept = Searcher(sb, pos.to_move, Limits(64, 10**6)).evasions(quiet, caps)
            assert set(kept) <= set(quiet) and (kept or not quiet or caps)
            for m in set(quiet) - set(kept):
                after = pos.play(to_move_obj(m))
                assert after.outcome() is None
                assert any((out := after.play(r).outcome()) and out.winner == after.to_move for r in after.legal_moves())
                dropped += 1
            moves = pos.legal_moves()
            captures = [m for m in moves if pos.board[m.to] and pos.board[m.to] >> 3 != pos.to_move]
            pos = pos.play(rng.choice(captures if captures and rng.random() < 0.3 else moves))
    assert dropped >= 100
