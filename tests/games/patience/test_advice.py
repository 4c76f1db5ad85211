"""Hints and examples make progress (issue 38 items 2 and 11).

Before: the example was the first legal move and the hint, without a winning line in
time, the first move in the solver's order, so following either went ``t6-t5``,
``t5-t6``, ``t6-t5`` … even when ``flip`` was possible; the status line offered
"r-f1, w-t2, t4-t1, flip" whether those were legal or not."""

from __future__ import annotations

import random
import re
from collections.abc import Callable

import pytest

from pbmserv_terrace.games.patience import VARIANTS, State, format_move, new_game, status_line
from pbmserv_terrace.games.patience.advice import is_progress, measure, progress_moves
from pbmserv_terrace.gametypes import GAME_TYPES

from .helpers import make

ALL = list(VARIANTS)
RULES = GAME_TYPES["patience"].solitaire
BOUND = 500
"""more moves than a game can last when every move makes progress (none took 260)"""


def follow(start: State, advise: Callable[[State], str | None]) -> tuple[State, int]:
    """Play only what ``advise(state)`` (a move text or None) says, through the
    adapter as the mail service does: no position may come twice, and the game ends
    or the advice runs out within :data:`BOUND` moves.  The last state and the moves."""
    s, seen = start, {start}
    for n in range(BOUND):
        if RULES.ending(s) is not None:
            return s, n
        text = advise(s)
        if text is None:
            return s, n
        before = measure(s)
        s, _ = RULES.play(s, text)
        assert s not in seen, f"move {n + 1} ({text}) came back to an earlier position"
        assert measure(s) <= before
        seen.add(s)
    pytest.fail(f"still going after {BOUND} moves")


@pytest.mark.parametrize("key", ALL)
def test_following_only_the_example_makes_progress(key: str) -> None:
    for deal in (1, 2, 3):
        end, moves = follow(new_game(key, deal), RULES.example_move)
        assert moves > 50 and end.score > 10, (deal, moves, end.score)


FAST = ("terrace", "generalpatience", "redheads")
"""variants whose rules differ most (base chosen, the stock turned once, spaces filled
from the reserve): the others' hint runs are marked slow (a second or more each)"""


@pytest.mark.parametrize("key", [k if k in FAST else pytest.param(k, marks=pytest.mark.slow) for k in ALL])
def test_following_only_the_hint_makes_progress(key: str) -> None:
    end, moves = follow(new_game(key, 1), lambda s: RULES.hint(s, 0.005))
    assert moves > 50 and end.score > 10, (moves, end.score)


def test_following_the_hint_on_a_deal_the_solver_wins_makes_progress() -> None:
    """The solver's line may start by moving a card to and fro; such a first move is
    not given as the hint unless it brings something nearer (:func:`is_progress`)."""
    follow(new_game("terrace", 4), lambda s: RULES.hint(s, 0.05))


def test_a_foundation_move_comes_first_and_flip_when_nothing_is_better() -> None:
    # the 5h can go to and fro between the 6s on t1 and the 6c on t2: that helps nothing
    idle = make("wood", tableau=["9d 6s 5h", "6c"] + ["Kc"] * 7, foundations=["2s"], stock="9c 9c", waste="Qc", base="2s")
    assert "t1-t2" in [format_move(m) for m in idle.legal_moves()]  # the example before issue 38
    assert not is_progress(idle, next(m for m in idle.legal_moves() if format_move(m) == "t1-t2"))
    assert [format_move(m) for m in progress_moves(idle)] == ["flip"]
    assert RULES.example_move(idle) == "flip" and RULES.hint(idle, 0.01) == "flip"
    # a card that goes home comes first
    home = make("wood", tableau=["9d 6s 5h", "6c", "3d"] + ["Kc"] * 6, foundations=["2s"], stock="9c 9c", waste="Qc", base="2s")
    assert RULES.example_move(home) == "t3-f1"
    # then a lone card onto another pile (it leaves a space), then the waste's card into it
    assert [format_move(m) for m in progress_moves(home.apply("t3-f1"))] == ["w-t3", "flip"]
    lone = make("wood", tableau=["5h", "6c"] + ["Kc"] * 7, foundations=["2s"], stock="9c 9c", waste="Qc", base="2s")
    assert [format_move(m) for m in progress_moves(lone)] == ["t1-t2", "flip"]
    assert [format_move(m) for m in progress_moves(lone.apply("t1-t2"))] == ["w-t1", "flip"]


def test_a_shuffle_is_advised_only_on_the_way_to_a_card_going_home() -> None:
    # f1 wants a red three: the 3h lies under the 7c on t1, which may go onto the 8d on t2
    s = make("wood", tableau=["3h 7c", "8d"] + ["Kc"] * 7, foundations=["2s"], stock="9c 9c", waste="Qc", base="2s")
    assert RULES.example_move(s) == "t1-t2" and is_progress(s, s.legal_moves()[0])
    assert RULES.example_move(s.apply("t1-t2")) == "t1-f1"
    # with nothing under the 7c that goes home, the same move is no progress
    idle = make("wood", tableau=["4h 7c", "8d"] + ["Kc"] * 7, foundations=["2s"], stock="9c 9c", waste="Qc", base="2s")
    assert "t1-t2" in [format_move(m) for m in idle.legal_moves()]
    assert RULES.example_move(idle) == "flip"


def shown_examples(s: State) -> list[str]:
    """The moves the status line offers after "e.g.", as a player reads them."""
    m = re.search(r"e\.g\. ([^()]+?)(?: \(|\)|\.$)", status_line(s))
    if m is None:
        return []
    return [t.strip() for t in re.split(r",| or ", m.group(1)) if t.strip()]


def states(key: str, count: int, seed: int) -> list[State]:
    """States of random games (random legal moves, resign aside)."""
    rng = random.Random(seed)
    out: list[State] = []
    for deal in range(1, 4):
        s = new_game(key, deal)
        for _ in range(count):
            out.append(s)
            moves = s.legal_moves()
            if not moves:
                break
            s = s.apply(rng.choice(moves))
    return out


@pytest.mark.parametrize("key", ALL)
def test_every_example_shown_is_legal_now(key: str) -> None:
    offered = 0
    for s in states(key, 120, seed=38):
        shown = shown_examples(s)
        example = RULES.example_move(s)
        if not s.is_over() and not s.choosing_base and example is not None:
            assert shown[:1] == [example], status_line(s)
        for text in shown:
            s.apply(text)  # raises if illegal
            offered += 1
    assert offered > 200


def test_the_status_line_says_what_is_left_when_nothing_helps() -> None:
    # only the 5h to and fro between the two black sixes; the stock is empty
    s = make("wood", tableau=["9d 6s 5h", "6c"] + ["Kc"] * 7, foundations=["7s"], stock="", waste="", base="7s")
    assert s.legal_moves() and list(progress_moves(s)) == []
    assert RULES.example_move(s) is None and RULES.hint(s, 0.01) is None
    assert "Only moves to and fro between tableau piles are left" in status_line(s)
    assert "e.g." not in status_line(s)
