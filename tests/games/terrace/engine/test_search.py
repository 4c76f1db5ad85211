"""robot3's search (issue 42 part 4): the evaluation's fast form against its plain
definition, a quiescence that never misses a win in one nor a T that cannot escape,
move ordering that tries a winning move first, and robot3's search (evasions,
futility, the unfinished iteration) still proving the known forced wins."""

from __future__ import annotations

import random

import pytest

from pbmserv_terrace.games.terrace import Position, parse_tpn, start_position
from pbmserv_terrace.games.terrace.engine import robot
from pbmserv_terrace.games.terrace.engine.board import SearchBoard, encode, to_move_obj
from pbmserv_terrace.games.terrace.engine.evaluate import (
    BASE,
    ROBOT3,
    Weights,
    army_scores,
    evaluate,
    t_distance,
)
from pbmserv_terrace.games.terrace.engine.search import INF, MATE_BOUND, Limits, Searcher
from pbmserv_terrace.games.terrace.pieces import SIZE

from .test_engine import WIN_IN_2, WIN_IN_3


def plain_scores(sb: SearchBoard, t_road: bool = False, with_road: bool | None = None) -> list[int]:
    """The evaluation as its docstring defines it, written plainly (the engine's
    army_scores is a faster form of the same sum; robot3's weights with ``t_road``)."""
    w = ROBOT3[sb.n] if t_road else BASE
    with_road = t_road if with_road is None else with_road  # (False: robot3's weights without the road term)
    scores = [0] * 5
    for army in (1, 2, 3, 4):
        mine = sb.am[army]
        if not mine:
            continue
        score = mobility = control = 0
        for sq in range(sb.n * sb.n):
            if mine >> sq & 1:
                if sq != sb.tsq[army]:
                    score += w.piece[SIZE[sb.board[sq]]]
                control |= sb.capture[sq]
                mobility += sb.targets(sq).bit_count()
        tsq = sb.tsq[army]
        if tsq >= 0:
            d = t_distance(sb.n, sb.goal[army])[tsq]
            score += w.progress[d] if d < len(w.progress) else 0
            attackers = (sb.attackers_of[tsq] & sb.occ & ~mine).bit_count()
            score -= attackers * (w.threat_owner if sb.to_move == army else w.threat_others)
        score += w.mobility * mobility + w.control * control.bit_count() + (w.tempo if sb.to_move == army else 0)
        if with_road and tsq >= 0:
            dist = t_distance(sb.n, sb.goal[army])
            if dist[tsq] > 1:
                hostile = [to for to in range(sb.n * sb.n) if sb.attackers_of[to] & sb.occ & ~mine]
                road = [to for to in range(sb.n * sb.n) if sb.targets(tsq) >> to & 1 and not mine >> to & 1 and dist[to] < dist[tsq]]
                score += w.t_free if set(road) - set(hostile) else -w.t_stuck
        scores[army] = score
    return scores


def random_positions(count: int, seed: int, variants: tuple[str, ...] = ("short", "long")) -> list[Position]:
    """The last positions of random games that mostly capture other armies' pieces
    (so many are sparse and tactical), two armies unless 3p/4p variants are asked for."""
    rng = random.Random(seed)
    out: list[Position] = []
    while len(out) < count:
        pos = start_position(rng.choice(variants), rng.choice([6, 8]))
        for _ in range(rng.randrange(10, 120)):
            moves = pos.legal_moves()
            captures = [m for m in moves if pos.board[m.to] and pos.board[m.to] >> 3 != pos.to_move]
            nxt = pos.play(rng.choice(captures if captures and rng.random() < 0.9 else moves))
            if nxt.outcome() is not None:
                break
            pos = nxt
        out.append(pos)
    return out


LOST_IN_ONE = [
    "8/8/8/8/8/8/aT6/ta6 1",  # T b2 attacks t a1, whose squares are blocked: Terrace-mate
    "6/6/6/6/aT4/ta4 1",
    "8/8/8/8/8/8/T7/7t 1",  # T a2 steps home to a1 next and nothing can stop it
    "6/6/6/6/T5/5t 1",
]
NOT_LOST = [
    "8/8/8/8/8/8/Ta6/1a5t 1",  # as above, but a b1 can step onto a1 and block it
]


def wins_at_once(pos: Position) -> bool:
    """The side to move has a move that ends the game in its favour (by the rules)."""
    army = pos.to_move
    return any((out := pos.play(m).outcome()) is not None and out.winner == army for m in pos.legal_moves())


def lost_in_one(pos: Position) -> bool:
    """Every move of the side to move lets the other side win at once (two armies)."""
    army = pos.to_move
    for m in pos.legal_moves():
        after = pos.play(m)
        out = after.outcome()
        if out is not None:
            if out.winner is not None and out.winner != army:
                continue  # it lost on the spot (it took its own T)
            return False
        if not wins_at_once(after):
            return False
    return bool(pos.legal_moves())


@pytest.mark.parametrize("seed", range(3))
def test_army_scores_are_the_plain_definition(seed):
    variants = ("short", "long", "3p", "4p") if seed else ("short", "long")
    for pos in random_positions(150, seed, variants):
        sb = SearchBoard(pos)
        assert army_scores(sb) == plain_scores(sb)
        assert army_scores(sb, t_road=True) == plain_scores(sb, t_road=True)


@pytest.mark.parametrize(
    ("open_road", "guarded"),
    [
        # 6x6, t on e1 (its start in short; goal f6), the other T on a6 and a C:
        # on a1 it guards nothing of the t's road; on e2 it guards every square
        # the t could step to nearer home.
        ("T5/6/6/6/6/C3t1 1", "T5/6/6/6/4C1/4t1 1"),
        ("T5/6/6/3t2/6/C5 1", "T5/6/6/3tC1/6/6 1"),
    ],
)
def test_the_t_road_term_rewards_an_open_road(open_road, guarded):
    """robot3's term: a T with a safe square nearer home scores t_free, one whose
    every such square another army's piece could capture on scores -t_stuck."""
    w = ROBOT3[6]
    assert w.t_free > 0 and w.t_stuck > 0
    for tpn, expected in ((open_road, w.t_free), (guarded, -w.t_stuck)):
        sb = SearchBoard(parse_tpn(tpn))
        assert army_scores(sb, t_road=True)[1] - plain_scores(sb, t_road=True, with_road=False)[1] == expected, tpn


def test_robots_1_and_2_evaluate_with_the_hand_set_weights():
    """Robots 1 and 2 (no ``t_road``) keep the weights their pinned ratings were
    measured with; only robot3's (ROBOT3, fitted by bench/texel.py) may change."""
    hand_set = Weights(
        piece=(0, 100, 160, 230, 300),
        progress=(0, 420, 240, 150, 95, 60, 35, 18, 8),
        threat_owner=50,
        threat_others=350,
        mobility=3,
        control=4,
        tempo=12,
        t_free=40,
        t_stuck=40,
    )
    assert hand_set == BASE
    for pos in random_positions(40, 5):
        sb = SearchBoard(pos)
        assert evaluate(sb, 1) == plain_scores(sb)[1] - plain_scores(sb)[2]


@pytest.mark.parametrize("evasion_plies", [0, 2])
def test_quiescence_never_misses_a_win_in_one(evasion_plies):
    """A capture of the other T or the T's step home is always tried at the horizon."""
    found = 0
    for pos in random_positions(300, 11):
        if not wins_at_once(pos):
            continue
        found += 1
        searcher = Searcher(SearchBoard(pos), pos.to_move, Limits(64, 10**6), evasion_plies=evasion_plies)
        assert searcher.quiesce(-INF, INF, 0, 0) >= MATE_BOUND, pos
    assert found >= 20


@pytest.mark.parametrize("tpn", LOST_IN_ONE + NOT_LOST)
def test_quiescence_sees_a_t_that_cannot_escape(tpn):
    """With evasions, a side whose every move lets the other win at once is lost at
    the horizon (a stand-pat would have called it a threat worth a few hundred);
    one that can parry is not."""
    pos = parse_tpn(tpn)
    assert lost_in_one(pos) == (tpn in LOST_IN_ONE)
    searcher = Searcher(SearchBoard(pos), pos.to_move, Limits(64, 10**6), evasion_plies=robot.EVASION_PLIES)
    assert searcher.in_danger()
    score = searcher.quiesce(-INF, INF, 0, 0)
    assert (score <= -MATE_BOUND) == (tpn in LOST_IN_ONE)
    plain = Searcher(SearchBoard(pos), pos.to_move, Limits(64, 10**6)).quiesce(-INF, INF, 0, 0)
    assert plain > -MATE_BOUND  # what robot3 missed before


def test_ordering_puts_a_winning_move_first():
    found = 0
    for pos in random_positions(300, 13):
        if not wins_at_once(pos):
            continue
        found += 1
        sb = SearchBoard(pos)
        first = Searcher(sb, pos.to_move, Limits(64, 10**6)).order(sb.moves(), 0, 0)[0]
        out = pos.play(pos.legal_moves()[[encode(m) for m in pos.legal_moves()].index(first)]).outcome()
        assert out is not None and out.winner == pos.to_move, pos
    assert found >= 20


def test_quiescence_ordering_is_the_full_ordering_of_its_moves():
    """order_tactical (the quiescence's fast path) puts the captures and the T's step
    home in the same order as order() does, so a winning one first."""
    rng = random.Random(15)
    checked = wins = 0
    for _ in range(60):
        pos = start_position(rng.choice(["short", "long"]), rng.choice([6, 8]))
        while pos.outcome() is None:
            sb = SearchBoard(pos)
            tactical = sb.tactical_moves()
            if len(tactical) >= 2:
                checked += 1
                searcher = Searcher(sb, pos.to_move, Limits(64, 10**6))
                ordered = searcher.order_tactical(tactical)
                assert ordered == searcher.order(tactical, 0, 0)
                winning = [m for m in tactical if (out := pos.play(to_move_obj(m)).outcome()) and out.winner == pos.to_move]
                if winning:
                    wins += 1
                    assert ordered[0] in winning, pos
            pos = pos.play(rng.choice(pos.legal_moves()))
    assert checked >= 200 and wins >= 20


@pytest.mark.parametrize("tpn", WIN_IN_2 + WIN_IN_3)
def test_robot3_search_proves_the_known_wins_without_the_solver(tpn):
    """robot3's search alone (evasions, futility, partial iterations) finds them."""
    pos = parse_tpn(tpn)
    res = robot.search(pos, pos.to_move, Limits(64, 60_000))
    assert res.score >= MATE_BOUND


@pytest.mark.parametrize("nodes", [300, 1_000, 5_000, 20_000])
def test_budgets_stopping_mid_iteration_give_legal_reproducible_moves(nodes):
    for pos in random_positions(6, 14):
        legal = {encode(m) for m in pos.legal_moves()}
        first = robot.search(pos, pos.to_move, Limits(64, nodes))
        again = robot.search(pos, pos.to_move, Limits(64, nodes))
        assert first.move in legal
        assert (first.move, first.score, first.depth) == (again.move, again.score, again.depth)
