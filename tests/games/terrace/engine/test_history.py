"""The game's history in the search (issue 17): a position already seen in the game
scores as a draw, so a robot that stands better does not shuffle back and forth;
the history changes the choice, and the choice stays deterministic with it."""

from __future__ import annotations

import pytest

from pbmserv_terrace.games.terrace import Move, parse_tpn
from pbmserv_terrace.games.terrace.engine import choose_move, position_key
from pbmserv_terrace.games.terrace.engine.board import SearchBoard, encode
from pbmserv_terrace.games.terrace.engine.search import Limits, Searcher

AHEAD = "6/3T2/6/6/1dc3/t5 1"
"""Army 1 (t, D, C) to move against army 2's lone T: clearly better (about +500)."""
CLEARLY_BETTER = 300


@pytest.mark.parametrize("level", [2, 3])
def test_the_history_changes_the_choice_and_the_advantage_is_kept(level: int) -> None:
    pos = parse_tpn(AHEAD)
    first = choose_move(pos, level=level, ply=30)
    assert first.score > CLEARLY_BETTER
    seen = pos.play(first.move)  # as if the game had been there before
    again = choose_move(pos, level=level, ply=30, history=[seen])
    assert again.move != first.move
    assert pos.play(again.move) != seen
    assert again.score > CLEARLY_BETTER


@pytest.mark.parametrize("level", [2, 3])
def test_when_ahead_the_only_non_repeating_move_is_played(level: int) -> None:
    pos = parse_tpn(AHEAD)
    first = choose_move(pos, level=level, ply=30)
    # a move the robot would not choose by itself, yet one that keeps the advantage
    # (the T steps along the bottom rank, away from any attacker)
    keep = next(m for m in pos.legal_moves() if m != first.move and m.frm == pos.t_square(1))
    history = [pos.play(m) for m in pos.legal_moves() if m != keep]
    res = choose_move(pos, level=level, ply=30, history=history)
    assert res.move == keep
    assert res.score > CLEARLY_BETTER


def test_a_history_given_as_keys_equals_one_given_as_positions() -> None:
    pos = parse_tpn(AHEAD)
    seen = [pos.play(m) for m in pos.legal_moves()[:3]]
    a = choose_move(pos, level=2, ply=30, history=seen)
    b = choose_move(pos, level=2, ply=30, history=[position_key(p) for p in seen])
    assert (a.move, a.score, a.nodes) == (b.move, b.score, b.nodes)


def test_a_move_back_to_a_seen_position_scores_a_draw() -> None:
    pos = parse_tpn(AHEAD)
    move = pos.legal_moves()[0]
    sb = SearchBoard(pos)
    searcher = Searcher(sb, pos.to_move, Limits(3, 10**6), frozenset({position_key(pos.play(move))}))
    assert searcher.root_scores([encode(move)], 3, exact=True) == [(0, encode(move))]


def test_a_repetition_within_the_search_path_scores_a_draw() -> None:
    # two lone T's: after b2-c2, e5-f5 and c2-b2, the move f5-e5 returns to the root
    pos = parse_tpn("6/4T1/6/6/1t4/6 1")
    sb = SearchBoard(pos)
    searcher = Searcher(sb, 1, Limits(8, 10**6))  # the root is on the search path
    for frm, to in ((7, 8), (28, 29), (8, 7)):
        sb.make(frm << 6 | to)
    back = 29 << 6 | 28
    assert searcher.root_scores([back], 4, exact=True) == [(0, back)]
    # without the cycle the same move is not a draw
    fresh = SearchBoard(pos.play(Move(7, 8)).play(Move(28, 29)).play(Move(8, 7)))
    assert Searcher(fresh, 1, Limits(8, 10**6)).root_scores([back], 4, exact=True)[0][0] != 0


@pytest.mark.parametrize("level", [1, 2, 3])
def test_same_inputs_with_history_same_result(level: int) -> None:
    pos = parse_tpn(AHEAD)
    history = [parse_tpn("6/3T2/6/6/1dc3/1t4 2"), parse_tpn("6/2T3/6/6/1dc3/1t4 1")]
    a = choose_move(pos, level=level, ply=30, history=history)
    b = choose_move(pos, level=level, ply=30, history=list(history))
    assert (a.move, a.score, a.depth, a.nodes, a.stopped) == (b.move, b.score, b.depth, b.nodes, b.stopped)


def test_contempt_makes_a_repetition_cost_the_root_army() -> None:
    pos = parse_tpn(AHEAD)
    move = pos.legal_moves()[0]
    seen = frozenset({position_key(pos.play(move))})
    searcher = Searcher(SearchBoard(pos), pos.to_move, Limits(3, 10**6), seen, contempt=25)
    assert searcher.root_scores([encode(move)], 3, exact=True) == [(-25, encode(move))]


def test_the_beginner_ignores_the_history() -> None:
    pos = parse_tpn(AHEAD)
    first = choose_move(pos, level=1, ply=30)
    again = choose_move(pos, level=1, ply=30, history=[pos.play(first.move)])
    assert again.move == first.move
