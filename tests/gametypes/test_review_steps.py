"""A review made in steps (issue 42: ``serve`` puts a robot's move between two steps)
is the review made in one go: the same evaluations, mistakes, reasons and turning
point, whatever the game, since tests and players rely on a review being
reproducible."""

from __future__ import annotations

import pickle

import pytest

from pbmserv_terrace.gametypes import board_rules
from pbmserv_terrace.gametypes.review import ReviewStep
from pbmserv_terrace.service.reviews import compute, data_of, step

NODES = 600
"""search per position: small, the same in both ways"""


def robot_game(game_type: str, plies: int) -> tuple[str, list[str]]:
    """A game of robot1 against itself (its moves as recorded), at most ``plies``."""
    rules = board_rules(game_type)
    pos = rules.start(rules.two_player_setups[0])
    start, moves = rules.dump(pos), []
    while not pos.is_over() and len(moves) < plies:
        text, _ = rules.robot_move(rules.dump(pos), 1, len(moves) + 1)
        move = rules.parse_move(pos, text)
        moves.append(rules.format_move(pos, move))
        pos = rules.play(pos, move)
    return start, moves


def in_steps(game_type: str, start: str, moves: list[str], nodes: int) -> tuple[ReviewStep, int]:
    """The last step and how many steps it took; each step's values go through
    pickle, as they do to and from a worker process."""
    found: tuple[object, ...] = ()
    steps = 0
    while True:
        done = pickle.loads(pickle.dumps(step(game_type, start, moves, nodes, found)))
        steps += 1
        assert steps <= len(moves) + 1 + 6 + 1, "more steps than positions and mistakes"
        if done.done:
            return done, steps
        assert done.left > 0
        found = done.found


BLUNDER = ("1A6/8/8/2tT4/6a1/8/4D3/5b2 1", ["T-c5-c4", "T-d5-c4:T"])
"""a known blunder (tests/service/test_reviews.py): a mistake whose reason the solver proves"""


@pytest.mark.parametrize(("game_type", "plies"), [("terrace", 0), ("terrace6x6", 40), ("terrace", 24)])
def test_a_review_in_steps_is_the_review_in_one_go(game_type: str, plies: int) -> None:
    start, moves = robot_game(game_type, plies) if plies else BLUNDER
    whole = compute(game_type, start, moves, NODES)
    done, steps = in_steps(game_type, start, moves, NODES)
    assert whole is not None and data_of(done) == whole
    assert steps >= len(moves) + 2  # one search per position, then the review
    assert done.review is not None and done.review.nodes == NODES


def test_the_known_blunder_keeps_its_proved_reason_in_steps() -> None:
    done, _ = in_steps("terrace", *BLUNDER, 10_000)
    assert done.review is not None and done.review.turning_point == 1
    first = done.review.of_seat(1)[0]
    assert first.played == "T-c5-c4" and first.reason == "leaves its T to be taken"


def test_a_game_without_a_reviewing_engine_is_done_at_once_with_none() -> None:
    rules = board_rules("breakthrough")
    pos = rules.start(rules.two_player_setups[0])
    moves = [rules.format_move(pos, rules.parse_move(pos, rules.example_move(pos)))]
    done = step("breakthrough", rules.dump(pos), moves, NODES, ())
    assert done.done and done.review is None and data_of(done) is None
    assert compute("breakthrough", rules.dump(pos), moves, NODES) is None
