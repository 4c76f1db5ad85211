"""The robots (issue 17): forced wins found, T safety of the beginner, determinism,
budgets, games of three and four, draw offers.  Forced wins are checked against
the independent brute-force prover in ``solver.py``; the positions were found by
random sparse boards and proved there (a win in k and none in k-1)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pbmserv_terrace.games.terrace import Move, Position, parse_tpn, start_position
from pbmserv_terrace.games.terrace.engine import accepts_draw, choose_move, describe
from pbmserv_terrace.games.terrace.engine.robot import LEVEL_NODES, NODES_PER_SECOND, EngineResult
from pbmserv_terrace.games.terrace.engine.search import MATE_BOUND
from pbmserv_terrace.games.terrace.setups import VARIANTS

from .solver import forced_win, winning_moves

MATE_IN_1 = [
    "6t1/8/8/8/8/8/1T6/8 1",  # t g8-h8 reaches the goal
    "8/8/8/8/8/3d4/2T5/t7 1",  # d3xc2 takes the last enemy T
]
WIN_IN_2 = [
    "6A1/8/1t4c1/7B/7a/2B5/1T6/8 2",
    "3d2/3a2/6/4t1/BT4/2D3 2",
    "6/3A2/3a2/3b2/1T1t2/6 2",
    "2dt2/b5/6/1T2d1/5B/6 1",
]
WIN_IN_3 = [
    "C2t2/3T2/6/1a4/6/3A2 1",
    "2t3/6/d5/1B4/2TC2/6 2",
    "4C1/3b2/6/1T4/5D/1C1b1t 2",
    "8/1t5c/5c2/8/8/2T5/5b2/6D1 2",
]


def test_win_positions_are_what_the_prover_says():
    """Guards the fixtures: each has a forced win of exactly that length."""
    for tpns, k in ((WIN_IN_2, 2), (WIN_IN_3, 3)):
        for tpn in tpns:
            pos = parse_tpn(tpn)
            assert forced_win(pos, k) and not forced_win(pos, k - 1), tpn
    for tpn in MATE_IN_1:
        assert forced_win(parse_tpn(tpn), 1)


@pytest.mark.parametrize("level", [1, 2, 3])
@pytest.mark.parametrize("tpn", MATE_IN_1)
def test_mate_in_one_found_at_every_level(tpn, level):
    pos = parse_tpn(tpn)
    res = choose_move(pos, level=level, ply=10)
    assert res.move in winning_moves(pos, 1)
    assert res.score >= MATE_BOUND
    assert describe(res) == f"robot{level} sees a forced win"


@pytest.mark.parametrize("level", [2, 3])
@pytest.mark.parametrize("tpn", WIN_IN_2)
def test_forced_win_in_two_found(tpn, level):
    pos = parse_tpn(tpn)
    res = choose_move(pos, level=level, ply=0)
    assert res.score >= MATE_BOUND
    assert res.move in winning_moves(pos, 2)


@pytest.mark.parametrize("tpn", WIN_IN_3)
def test_robot3_finds_terrace_mate_in_three_within_its_budget(tpn):
    pos = parse_tpn(tpn)
    res = choose_move(pos, level=3, ply=0)
    assert res.stopped == "mate"
    assert res.score >= MATE_BOUND
    assert res.move in winning_moves(pos, 3)


def _t_safe_after(pos: Position, move: Move) -> bool:
    army = pos.to_move
    after = pos.play(move)
    out = after.outcome()
    if out is not None and out.winner == army:
        return True
    return army in after.armies() and army not in after.threatened_armies() and (out is None or out.winner is None)


def _positions_of_random_games(seed: int, n: int, variant: str, plies: int) -> list[Position]:
    rng = random.Random(seed)
    pos = start_position(variant, n)
    out = [pos]
    for _ in range(plies):
        if pos.is_over():
            break
        pos = pos.play(rng.choice(pos.legal_moves()))
        out.append(pos)
    return [p for p in out if not p.is_over()]


HANGING_T = [
    "8/8/8/8/8/8/1B6/t5T1 1",  # B b2 attacks t a1: the t must step away
    "8/8/8/3D4/2t5/8/8/6T1 1",
    "6/6/2C3/1t4/6/4T1 1",
]


@pytest.mark.parametrize("tpn", HANGING_T)
def test_robot1_never_leaves_its_t_en_prise_in_fixed_positions(tpn):
    pos = parse_tpn(tpn)
    assert any(_t_safe_after(pos, m) for m in pos.legal_moves())
    for ply in range(6):  # several noise seeds
        res = choose_move(pos, level=1, ply=ply)
        assert _t_safe_after(pos, res.move), (tpn, ply)


@settings(max_examples=12, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    n=st.sampled_from([8, 6]),
    variant=st.sampled_from(["long", "short", "medium"]),
    plies=st.integers(4, 60),
)
def test_robot1_never_leaves_its_t_en_prise_when_avoidable_along_random_games(seed, n, variant, plies):
    pos = _positions_of_random_games(seed, n, variant, plies)[-1]
    if not any(_t_safe_after(pos, m) for m in pos.legal_moves()):
        return
    res = choose_move(pos, level=1, ply=plies)
    assert _t_safe_after(pos, res.move)


@pytest.mark.parametrize("level", [1, 2, 3])
def test_same_inputs_same_result(level):
    pos = _positions_of_random_games(5, 8, "long", 12)[-1]
    budget = 0.2 if level == 3 else None
    a = choose_move(pos, level=level, ply=12)
    b = choose_move(pos, level=level, ply=12)
    assert (a.move, a.score, a.depth, a.nodes, a.stopped) == (b.move, b.score, b.depth, b.nodes, b.stopped)
    c = choose_move(pos, level=level, ply=12, time_budget=budget)
    assert c.move in pos.legal_moves()


def test_node_budgets_stop_the_search():
    pos = start_position("long")
    two = choose_move(pos, level=2, ply=0)
    assert two.stopped == "nodes" and two.nodes == LEVEL_NODES[2]
    three = choose_move(pos, level=3, ply=0, time_budget=0.1)
    assert three.stopped in ("nodes", "time")
    assert three.nodes <= int(NODES_PER_SECOND[8] * 0.1)
    assert three.depth >= 1


@pytest.mark.parametrize(("n", "variant"), [(n, v) for n in (8, 6) for v in ("3p", "4p")])
def test_three_and_four_armies_get_legal_moves(n, variant):
    for i, pos in enumerate(_positions_of_random_games(11, n, variant, 30)[::6]):
        for level in (1, 2, 3):
            res = choose_move(pos, level=level, ply=i, time_budget=0.1 if level == 3 else None)
            assert pos.is_legal(res.move)


def test_accepts_draw_only_when_worse():
    pos = parse_tpn("8/8/2dd4/8/8/2dd4/8/t5T1 2")  # army 1: t and four D; army 2: a lone T
    assert accepts_draw(pos, 2, level=2, ply=30)
    assert not accepts_draw(pos, 1, level=2, ply=30)
    start = start_position("long")
    assert not accepts_draw(start, 1, level=2, ply=0) and not accepts_draw(start, 2, level=2, ply=0)


def test_describe_words():
    def res(score: int) -> EngineResult:
        return EngineResult(Move(0, 1), score, 3, 100, 0.1, 2, "nodes")

    assert describe(res(10)) == "robot2 thinks the game is level"
    assert describe(res(60)) == "robot2 thinks it is slightly better"
    assert describe(res(-200)) == "robot2 thinks it is clearly worse"
    assert describe(res(900)) == "robot2 thinks it is winning"
    assert describe(res(-(10**5) + 3)) == "robot2 sees a forced loss"


def test_a_finished_game_has_no_move():
    with pytest.raises(ValueError):
        choose_move(parse_tpn("7t/8/8/8/8/8/8/1T6 2"), level=1, ply=0)


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_start_position_gets_a_move(variant):
    pos = start_position(variant, 6)
    assert pos.is_legal(choose_move(pos, level=1, ply=0).move)
