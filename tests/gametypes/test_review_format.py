"""The review's JSON form (issue 42): what the mail and the web both read."""

from __future__ import annotations

import json

import pytest

from pbmserv_terrace.gametypes import GAME_TYPES, board_rules
from pbmserv_terrace.gametypes.review import GameReview, ReviewMistake, review_from_json, review_to_json

REVIEW = GameReview(
    evaluations=(0, 30, -20, 2000),
    mistakes=(
        ReviewMistake(2, 2, "C-c5-c4", "T-d6-d5", 1900, "leaves its T to be taken"),
        ReviewMistake(1, 1, "A-b2-b3", "B-c2-c3", 70, None),
    ),
    turning_point=2,
    scale=2000,
    nodes=5000,
)


def test_round_trip_through_json_text() -> None:
    data = json.loads(json.dumps(review_to_json(REVIEW)))
    assert review_from_json(data) == REVIEW
    assert data["format"] == 1 and data["evaluations"] == [0, 30, -20, 2000]
    assert REVIEW.of_seat(2)[0].reason == "leaves its T to be taken"
    assert REVIEW.evaluation_for(2, 3) == -2000 and REVIEW.plies == 3


@pytest.mark.parametrize("broken", [
    {"format": 2},
    {"format": 1, "evaluations": [], "mistakes": [], "scale": 1, "nodes": 1},
    {"format": 1, "evaluations": [1], "mistakes": [{"ply": "1"}], "scale": 1, "nodes": 1},
    {"format": 1, "evaluations": [True], "mistakes": [], "scale": 1, "nodes": 1},
])  # fmt: skip
def test_refuses_what_it_does_not_know(broken: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        review_from_json(broken)


def test_only_games_with_a_reviewing_engine_say_so() -> None:
    boards = [t for t in GAME_TYPES.values() if t.family == "board"]
    assert any(t.board.can_review(2) for t in boards)
    for kind in boards:
        rules = board_rules(kind.name)
        if not rules.can_review(2):
            start = rules.dump(rules.start(rules.two_player_setups[0]))
            assert rules.review(start, [], 100) is None
        assert not rules.can_review(4) or kind.board.can_review(4)


def test_a_reviewable_game_reviews_in_its_move_text() -> None:
    kind = next(t for t in GAME_TYPES.values() if t.family == "board" and t.board.can_review(2))
    rules = kind.board
    pos = rules.start(rules.two_player_setups[0])
    start, moves = rules.dump(pos), []
    for _ in range(4):
        text = rules.example_move(pos)
        move = rules.parse_move(pos, text)
        moves.append(rules.format_move(pos, move))
        pos = rules.play(pos, move)
    review = rules.review(start, moves, 300)
    assert review is not None and review.plies == 4 and review.nodes == 300
    assert review_from_json(review_to_json(review)) == review
    for m in review.mistakes:
        assert m.played == moves[m.ply - 1] and m.swing > 0
