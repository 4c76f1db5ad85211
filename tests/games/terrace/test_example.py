"""The board mail's example move never throws the game away when another move
does not (issue 38 item 6: on board 106 the footer's 'e.g. a1-b2' walked the T
into ``C-c3-b2:T``), and stays cheap."""

from __future__ import annotations

import random

import pytest

from pbmserv_terrace.games.terrace import Move, Position, goal_square, parse_tpn, start_position
from pbmserv_terrace.games.terrace.example import example_move, loses_at_once, reading_order, takes_own
from pbmserv_terrace.games.terrace.setups import VARIANTS
from pbmserv_terrace.gametypes import board_rules


def hands_over(pos: Position, move: Move) -> bool:
    """Brute force, by the rule text alone: after ``move`` the mover's T is gone,
    or some other army, were it to move now, has a move that takes that T or
    wins (its T onto its goal); a game the move ends in the mover's favour or
    drawn is not handed over."""
    army = pos.to_move
    after = pos.play(move)
    if army not in after.armies():
        return True
    outcome = after.outcome()
    if outcome is not None:
        return outcome.winner not in (army, None)
    t = after.t_square(army)
    for other in after.armies():
        if other == army:
            continue
        them = after.with_turn(other)
        for reply in them.legal_moves():
            if reply.to == t:
                return True
            won = them.play(reply).outcome()
            if won is not None and won.winner == other:
                return True
    return False


def example(pos: Position) -> Move:
    rules = board_rules("terrace" if pos.n == 8 else "terrace6x6")
    return rules.parse_move(pos, rules.example_move(pos))


def test_board_106_the_t_is_not_walked_into_a_capture():
    # army 1's t on a1 and a b on h1; army 2's C on c3 takes on b2: a1-b2 (the
    # old example, first by name among the equal steps) loses the T at once
    pos = parse_tpn("7T/8/8/8/8/2C5/8/t6b 1")
    assert hands_over(pos, Move(0, 9))
    assert board_rules("terrace").example_move(pos) == "h1-h2"


def test_an_unavoidable_loss_still_gets_an_example():
    # army 2's T on a2 steps onto a1 unless army 1 takes it, and nothing can (found
    # by a random playout)
    pos = parse_tpn("8/1B6/3C4/7C/2B3D1/7c/Td6/4c2t 1")
    assert all(hands_over(pos, m) for m in pos.legal_moves())
    assert example(pos) in pos.legal_moves()


def test_the_start_examples_stay():
    assert board_rules("terrace").example_move(start_position("long")) == "b2-c3"
    assert board_rules("terrace6x6").example_move(start_position("long", 6)) == "b2-c3"


@pytest.mark.parametrize("n", [8, 6])
def test_random_playouts_the_example_is_safe_whenever_a_safe_move_exists(n: int) -> None:
    rng = random.Random(38 + n)
    seen = unsafe = 0
    for game in range(60):
        pos = start_position(VARIANTS[game % len(VARIANTS)], n)
        for _ in range(rng.randrange(10, 90)):
            moves = pos.legal_moves()
            if not moves:
                break
            chosen = example(pos)
            assert chosen in moves
            seen += 1
            if hands_over(pos, chosen):
                unsafe += 1
                assert all(hands_over(pos, m) for m in moves), f"{pos!r}: the example loses at once, another move does not"
            pos = pos.play(rng.choice(moves))
    assert seen > 1500 and unsafe < seen // 10


def test_the_example_plays_each_legal_move_at_most_once(monkeypatch):
    """Its cost is bounded by the work, not timed (the machines are shared): one
    look (one ``play``) per legal move at most; ``bench/example.py`` prints the time."""
    rng = random.Random(5)
    positions: list[Position] = []
    for game in range(30):
        pos = start_position(VARIANTS[game % len(VARIANTS)])
        for _ in range(rng.randrange(10, 70)):
            moves = pos.legal_moves()
            if not moves:
                break
            pos = pos.play(rng.choice(moves))
            positions.append(pos.copy())  # (fresh objects: no cached legal moves, no cached example)
    rules = board_rules("terrace")
    plays = total = 0
    real_play = Position.play

    def counted(self: Position, move: object) -> Position:
        nonlocal plays, total
        plays += 1
        total += 1
        return real_play(self, move)  # type: ignore[arg-type]

    monkeypatch.setattr(Position, "play", counted)
    for pos in positions:
        legal = len(pos.legal_moves())
        plays = 0
        rules.example_move(pos)
        assert plays <= legal, f"{plays} plays for {legal} legal moves"
    assert total >= len(positions)  # (the count sees the example's looks)


def test_the_example_takes_no_piece_of_its_own_army_when_another_safe_move_exists():
    """Found by playing (issue 38): ben's footer offered d2-c3, played as C-d2-c3:C
    (his own C taken).  Over random playouts: whenever a safe move that takes no
    own piece exists, the example is one."""
    import random

    from pbmserv_terrace.games.terrace.example import example_move, loses_at_once, takes_own
    from pbmserv_terrace.games.terrace.setups import start_position

    rng = random.Random(38)
    checked = 0
    for setup in ("long", "short", "master", "3p", "4p"):
        for _ in range(6):
            pos = start_position(setup)
            for _ply in range(40):
                if pos.is_over():
                    break
                moves = pos.legal_moves()
                clean = [m for m in moves if not loses_at_once(pos, m) and not takes_own(pos, m)]
                example = example_move(pos)
                if clean:
                    assert example in clean, (setup, pos)
                    checked += 1
                pos = pos.play(rng.choice(moves))
    assert checked > 500


def written_order(pos: Position) -> list[Move]:
    """The reading order as issue 38 wrote it, a tuple per move: a one-square move
    first, then the most gain towards the goal, the nearest to it, the first by the
    square names themselves."""
    n = pos.geo.n
    dist = [max(abs(sq % n - goal_square(n, pos.to_move) % n), abs(sq // n - goal_square(n, pos.to_move) // n))
            for sq in range(n * n)]  # fmt: skip

    def rank(m: Move) -> tuple[bool, int, int, str, str]:
        long = max(abs(m.frm % n - m.to % n), abs(m.frm // n - m.to // n)) > 1
        return long, dist[m.to] - dist[m.frm], dist[m.to], pos.geo.name(m.frm), pos.geo.name(m.to)

    return sorted(pos.legal_moves(), key=rank)


def eager_example(pos: Position) -> Move | None:
    """The rule as issue 38 wrote it, every move looked at: the first safe move in
    reading order that takes no piece of its own army, else the first safe one,
    else the first of all."""
    moves = written_order(pos)
    safe = [m for m in moves if not loses_at_once(pos, m)]
    return next((m for m in safe if not takes_own(pos, m)), safe[0] if safe else (moves[0] if moves else None))


@pytest.mark.parametrize("n", [8, 6])
def test_looking_only_until_the_answer_is_known_gives_the_same_example(n: int) -> None:
    """issue 43: ``example_move`` stops at the first move that answers; the move it
    names is the one the whole rule names, on random playouts of every setup."""
    rng = random.Random(43 + n)
    seen = 0
    for game in range(40):
        pos = start_position(VARIANTS[game % len(VARIANTS)], n)
        for _ in range(rng.randrange(10, 90)):
            moves = pos.legal_moves()
            if not moves:
                break
            assert example_move(pos) == eager_example(pos), repr(pos)
            assert reading_order(pos) == written_order(pos), repr(pos)  # its packed integer keys
            seen += 1
            pos = pos.play(rng.choice(moves))
    assert seen > 1000
