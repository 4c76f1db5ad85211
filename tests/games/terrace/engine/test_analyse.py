"""The robot's best moves with their scores and lines (issue 42, ``analyze``):
checked against the rules alone (the brute-force prover in ``solver.py``)."""

from __future__ import annotations

import pytest

from pbmserv_terrace.games.terrace import parse_tpn, start_position
from pbmserv_terrace.games.terrace.engine import position_key
from pbmserv_terrace.games.terrace.engine.analyse import PV_PLIES, analyse, mate_in
from pbmserv_terrace.games.terrace.engine.search import MATE

from .solver import forced_win, winning_moves
from .test_engine import MATE_IN_1, WIN_IN_2
from .test_solve import sparse_positions

NODES = 20_000


def _legal_line(pos, line):
    for move in line:
        assert pos.outcome() is None
        assert move in pos.legal_moves()
        pos = pos.play(move)


@pytest.mark.parametrize(("setup", "n"), [("long", 8), ("short", 6)])
def test_three_distinct_moves_best_first_each_with_a_legal_line(setup, n):
    pos = start_position(setup, n)
    result = analyse(pos, nodes=NODES)
    assert result.depth >= 2 and result.nodes <= NODES and result.moves == len(pos.legal_moves())
    assert len(result.lines) == 3
    assert len({line.move for line in result.lines}) == 3
    scores = [line.score for line in result.lines]
    assert scores == sorted(scores, reverse=True)
    for line in result.lines:
        assert line.pv[0] == line.move and 2 <= len(line.pv) <= PV_PLIES
        _legal_line(pos, line.pv)


def test_the_same_budget_gives_the_same_answer():
    pos = start_position("short", 6)
    assert analyse(pos, nodes=NODES) == analyse(pos, nodes=NODES)


def test_count_is_the_most_lines_and_a_position_with_fewer_moves_gives_them_all():
    pos = start_position("long", 8)
    assert len(analyse(pos, nodes=NODES, count=5).lines) == 5
    assert len(analyse(pos, nodes=NODES, count=1).lines) == 1


@pytest.mark.parametrize("tpn", MATE_IN_1)
def test_a_win_in_one_comes_first_and_is_called_so(tpn):
    pos = parse_tpn(tpn)
    wins = winning_moves(pos, 1)
    result = analyse(pos, nodes=NODES)
    best = result.lines[0]
    assert best.move in wins
    assert mate_in(best.score) == 1
    assert best.pv == (best.move,)  # the game ends with it
    # every move the prover does not call a win in one is scored below it
    for line in result.lines[1:]:
        assert (line.move in wins) == (mate_in(line.score) == 1)


@pytest.mark.parametrize("tpn", WIN_IN_2)
def test_a_win_in_two_is_found_and_its_line_ends_the_game(tpn):
    pos = parse_tpn(tpn)
    assert forced_win(pos, 2) and not forced_win(pos, 1)
    best = analyse(pos, nodes=200_000).lines[0]
    assert mate_in(best.score) == 2
    assert best.move in winning_moves(pos, 2)
    end = pos
    for move in best.pv:
        end = end.play(move)
    assert len(best.pv) == 3 and end.outcome() is not None and end.outcome().winner == pos.to_move


def test_forced_wins_claimed_are_proved_by_the_rules():
    """On sparse endgames: every line scored as a win within two moves is one, by
    the brute-force prover over the rules; a loss in one is one too."""
    checked = 0
    for pos in sparse_positions(12, 4242):
        result = analyse(pos, nodes=NODES)
        for line in result.lines:
            _legal_line(pos, line.pv)
            after = pos.play(line.move)
            found = mate_in(line.score)
            if found is not None and 0 < found <= 2:
                checked += 1
                assert line.move in winning_moves(pos, found)
            if found == -1:
                checked += 1
                assert after.outcome() is None and winning_moves(after, 1)
    assert checked >= 1


def test_mate_in_reads_the_search_scores():
    assert mate_in(MATE - 1) == 1
    assert mate_in(MATE - 3) == 2
    assert mate_in(-(MATE - 2)) == -1
    assert mate_in(-(MATE - 4)) == -2
    assert mate_in(350) is None and mate_in(-350) is None


def test_a_repetition_of_the_game_scores_as_a_draw():
    """A move into a position the game has seen scores 0 (a draw, no contempt),
    whatever it scores otherwise."""
    pos = start_position("short", 6)
    plain = analyse(pos, nodes=NODES, count=len(pos.legal_moves()))
    best = plain.lines[0]
    assert best.score != 0
    again = analyse(pos, nodes=NODES, count=len(pos.legal_moves()), seen=frozenset({position_key(pos.play(best.move))}))
    assert {line.move: line.score for line in again.lines}[best.move] == 0


def test_a_finished_game_has_nothing_to_analyse():
    pos = parse_tpn(MATE_IN_1[0])
    done = pos.play(winning_moves(pos, 1)[0])
    with pytest.raises(ValueError, match="over"):
        analyse(done, nodes=NODES)
