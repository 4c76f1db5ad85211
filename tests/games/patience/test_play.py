"""Whole games: legal moves agree with apply(), illegal moves change nothing, the render fits,
the solver's verdicts hold, and a solver-won deal replays to 104 on the foundations."""

from __future__ import annotations

import random

import pytest

from pbmserv_terrace.games.patience import (
    VARIANTS,
    IllegalMove,
    Move,
    Pile,
    State,
    format_move,
    hint,
    new_game,
    render,
    replay,
    solve,
)

from .helpers import make, total_cards

ALL = list(VARIANTS)


def candidates(s: State) -> list[Move]:
    """Every move a player could write that names real piles (``f`` and ``s-`` shorthands aside)."""
    n = s.variant.piles
    srcs = [Pile("r"), Pile("w")] + [Pile("t", i) for i in range(1, n + 1)] + [Pile("f", i) for i in range(1, 9)]
    dsts = [Pile("f", i) for i in range(1, 9)] + [Pile("t", i) for i in range(1, n + 1)] + [Pile("r"), Pile("w")]
    return [Move("move", a, b) for a in srcs for b in dsts] + [Move("flip")]


def playout(key: str, deal: int, steps: int, seed: int) -> list[State]:
    """States of a random game (random legal moves), the start included."""
    rng = random.Random(seed)
    s = new_game(key, deal)
    states = [s]
    for _ in range(steps):
        moves = s.legal_moves()
        if not moves:
            break
        s = s.apply(rng.choice(moves))
        states.append(s)
    return states


@pytest.mark.parametrize("key", ALL)
def test_legal_moves_are_exactly_the_moves_apply_accepts(key: str) -> None:
    for s in playout(key, 3, 150, seed=1)[::5]:
        if s.choosing_base:
            continue
        legal = set(s.legal_moves())
        for move in candidates(s):
            try:
                s.apply(move)
                accepted = True
            except IllegalMove:
                accepted = False
            assert accepted == (move in legal), (format_move(move), render(s))
        assert set(s.legal_moves(canonical=True)) <= legal


@pytest.mark.parametrize("key", ALL)
def test_cards_are_never_lost_or_made(key: str) -> None:
    for s in playout(key, 11, 300, seed=2):
        assert total_cards(s) == 104


@pytest.mark.parametrize("key", ALL)
def test_illegal_moves_raise_a_sentence_and_change_nothing(key: str) -> None:
    for s in playout(key, 5, 60, seed=3)[1::6]:
        before = (s, render(s))
        for move in candidates(s):
            if move in s.legal_moves():
                continue
            with pytest.raises(IllegalMove) as err:
                s.apply(move)
            text = str(err.value)
            assert text[0].isupper() and text.endswith(".") and len(text) > 15
        assert (s, render(s)) == before


@pytest.mark.parametrize("key", ALL)
def test_render_fits_72_columns_and_shows_every_pile(key: str) -> None:
    states = playout(key, 9, 400, seed=4)
    pile = "Ks Qh Js 10h 9s 8h 7s 6h 5s 4h 3s 2h As Kh Qs Jh 10s 9h 8s 7h 6s 5h 4s 3h 2s Ah"
    long = make(key, tableau=[pile] + ["5c"] * (VARIANTS[key].piles - 1), reserve="Kd " * 21)
    for s in [*states, long]:
        text = render(s)
        assert max(len(line) for line in text.splitlines()) <= 72, text
        assert f"Stock {len(s.stock)}" in text and f"Reserve {len(s.reserve)}" in text
        for i in range(1, s.variant.piles + 1):
            assert f"t{i}:" in text
        assert all(f"f{i} " in text for i in range(1, 9))
    assert render(long).count("Kd") == 21 + 1 and render(long).count("h") >= 13  # the row, and its top named


def test_resign_ends_the_game() -> None:
    s = new_game("wood", 1).apply("resign")
    assert s.is_over() and s.outcome() == "resigned" and "Resigned" in render(s)
    with pytest.raises(IllegalMove, match="game is over"):
        s.apply("flip")


def test_a_game_with_no_move_left_is_over() -> None:
    s = make("wood", tableau=["9s", "5c"], reserve="2d", waste="Kd", stock="")
    assert s.legal_moves() == [] and s.outcome() == "stuck" and s.is_over()
    assert hint(s) is None


def test_the_solver_proves_a_dead_end_lost_and_a_last_move_won() -> None:
    full = ["7h 8s 9d 10c Jh Qs Kd Ac 2h 3s 4d 5c 6h"] * 7
    # f8 needs a red five then a black six; the 6s lies on the 5h in the reserve: lost
    dead = make(
        "wood", tableau=["Kc"], foundations=[*full, "7s 8d 9c 10h Js Qd Kc Ah 2s 3h 4c"], reserve="5h 6s", stock="", waste=""
    )
    assert dead.score == 102 and solve(dead).verdict == "lost"
    near = make(
        "wood", tableau=["Kc"], foundations=[*full, "7s 8d 9c 10h Js Qd Kc Ah 2s 3h 4c"], reserve="6s 5h", stock="", waste=""
    )
    result = solve(near)
    assert result.verdict == "won" and [format_move(m) for m in result.line] == ["r-f8", "r-f8"]
    assert replay_line(near, result.line).score == 104


def replay_line(s: State, line: list[Move]) -> State:
    for move in line:
        s = s.apply(format_move(move))  # through the text, as a player would send it
    return s


def test_the_solver_gives_up_within_its_budget() -> None:
    result = solve(new_game("terrace", 1), max_nodes=50, max_seconds=5)
    assert result.verdict == "unknown" and result.nodes == 50


@pytest.mark.parametrize("key", [k for k in ALL if k != "generalpatience"])
def test_a_solver_won_deal_replays_move_by_move_to_a_win(key: str) -> None:
    for deal in range(1, 40):
        start = new_game(key, deal)
        result = solve(start, max_nodes=30_000, max_seconds=3600)  # (bounded by nodes: the same on any machine)
        if result.verdict == "won":
            break
    else:
        pytest.fail(f"no deal of {key} in 1..39 solved in 30,000 nodes")
    end = replay_line(start, result.line)
    assert end.outcome() == "won" and end.score == 104 and end.is_over()
    assert replay(key, deal, [format_move(m) for m in result.line]) == end
    assert "Won" in render(end)


def test_general_patience_won_through_the_second_pass() -> None:
    """No General Patience deal in 1..100 was solved within 1 s (see the report), so its
    won game is a built ending: the waste must be turned over once to reach the 5s."""
    suits = ["7h 8h 9h 10h Jh Qh Kh Ah 2h 3h 4h 5h 6h", "7c 8c 9c 10c Jc Qc Kc Ac 2c 3c 4c 5c 6c"] * 3
    full = [*suits, "7d 8d 9d 10d Jd Qd Kd Ad 2d 3d 4d 5d 6d"]
    s = make("generalpatience", tableau=["Kc"], foundations=[*full, "7s 8s 9s 10s Js Qs Ks As 2s 3s 4s"], waste="5s 6s", stock="")
    result = solve(s)
    assert result.verdict == "won" and [format_move(m) for m in result.line] == ["flip", "w-f8", "w-f8"]
    end = replay_line(s, result.line)
    assert end.stock_pass == 2 and end.outcome() == "won" and end.score == 104


@pytest.mark.parametrize("key", ALL)
def test_hint_is_a_legal_move(key: str) -> None:
    s = new_game(key, 2)
    move = hint(s, max_seconds=0.1)
    assert move is not None and move in s.legal_moves()
    s.apply(move)
