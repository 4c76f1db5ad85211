"""Moves that make progress: the examples a mail shows and the hint when the solver has none.

Issue 38: the first legal move as the example (and the hint) went round in circles,
``t6-t5``, ``t5-t6``, ``t6-t5`` …, even when ``flip`` was possible.  Here every move
advised makes progress, by these measures taken in turn:

1. :func:`measure` counts what only goes one way: cards in the stock (twice: turned,
   a card still waits in the waste), in the waste and in the reserve, less the cards
   on the foundations, and the one turn of General Patience's stock.  Every move but
   one from a tableau pile to another lowers it (to a foundation, from the waste, a
   stock turn, a space the rules fill); a tableau-to-tableau move (a *shuffle*) leaves
   it as it is.
2. Among shuffles, one that moves a lone card onto another pile makes a space; one
   that moves a card into a space (Redheads' "any card", once its reserve is empty)
   fills one, and is never advised.
3. Any other shuffle is advised only as the first step of the shortest line of
   shuffles (:data:`DEPTH` at most, none filling a space) to a position where a card
   goes to a foundation, or else where the waste's top card goes onto a tableau card
   (:func:`distances`).  The next position is one step nearer that goal.

Each advised move lowers the first measure, or keeps it and makes a space, or keeps
both and brings the goal nearer: a player who follows only the advice (or only the
hint, :func:`.solver.hint`, which takes the solver's move only when it passes
:func:`is_progress`) never sees a position twice, and the game ends or the advice
runs out within a bounded number of moves.

Preference (:func:`progress_moves`): a card to a foundation (the reserve's first),
the waste's card onto a tableau card, a tableau move after which the rules fill the
space it leaves (Signora, Redheads), a shuffle towards a foundation move (else
towards a play of the waste's card), a lone card onto another pile, the waste's
card into a space, and ``flip`` when nothing is better.  (Over the first 8 deals
of every variant, following the advice alone this way brought 3807 cards home and
won 15 of 56 games; flipping before filling a space, 2986 and 4.)
"""

from __future__ import annotations

from collections.abc import Iterator

from .moves import FLIP, Move
from .state import State

DEPTH = 4
"""the longest line of shuffles looked for (deeper lines are rare and not advised)"""
MAX_POSITIONS = 4000
"""positions the search of shuffles may see; past it no shuffle is advised (only moves
that lower the measure, so the advice still never goes round)"""
_UNREACHED = DEPTH + 1


def measure(s: State) -> int:
    """What only goes down as the game goes on (see the module docstring)."""
    second_pass = 0 if s.stock_pass == 2 else 300  # the waste turned over once: 2 x 104 cards at most come back
    return 2 * len(s.stock) + len(s.waste) + len(s.reserve) - s.score + second_pass


def is_shuffle(s: State, move: Move) -> bool:
    """A move from one tableau pile to another that leaves :func:`measure` as it was."""
    return _route(move) == "t-t" and measure(s.play(move)) == measure(s)


def _spaces(s: State) -> int:
    return sum(1 for p in s.tableau if not p)


def _route(move: Move) -> str:
    """``w-t``, ``t-f`` …: the kinds of a move's piles (empty for flip and base)."""
    return f"{move.src.kind}-{move.dst.kind}" if move.src is not None and move.dst is not None else ""


def _to_foundation(s: State, moves: list[Move]) -> list[Move]:
    return [m for m in moves if _route(m).endswith("-f")]


def _waste_to_card(s: State, moves: list[Move]) -> list[Move]:
    return [m for m in moves if _route(m) == "w-t" and m.dst and s.tableau[m.dst.num - 1]]


def _waste_to_space(s: State, moves: list[Move]) -> list[Move]:
    return [m for m in moves if _route(m) == "w-t" and m.dst and not s.tableau[m.dst.num - 1]]


def distances(s: State) -> tuple[int, int, dict[int, Move]]:
    """``(to_foundation, to_waste_play, first_step)``: the fewest shuffles from ``s`` to a
    position where a card goes to a foundation, and to one where the waste's top card goes
    onto a tableau card (:data:`DEPTH` + 1 when none is within :data:`DEPTH`, or when the
    search saw too many positions to be sure); ``first_step`` the first shuffle of such a
    shortest line, by goal (1: foundation, 2: the waste's card)."""
    found: dict[int, int] = {}
    first: dict[int, Move] = {}
    level: list[tuple[State, Move | None]] = [(s, None)]
    seen = {s}
    for depth in range(DEPTH + 1):
        nxt: list[tuple[State, Move | None]] = []
        for state, step in level:
            moves = state.legal_moves(canonical=True)
            for goal, hits in ((1, _to_foundation(state, moves)), (2, _waste_to_card(state, moves))):
                if hits and goal not in found:
                    found[goal] = depth
                    if step is not None:
                        first[goal] = step
            if len(found) == 2 or depth == DEPTH:
                continue
            for move in moves:
                if not is_shuffle(state, move):
                    continue
                child = state.play(move)
                if child in seen or _spaces(child) < _spaces(state):
                    continue
                seen.add(child)
                nxt.append((child, step or move))
            if len(seen) > MAX_POSITIONS:
                return _UNREACHED, _UNREACHED, {}
        if len(found) == 2 or not nxt:
            break
        level = nxt
    return found.get(1, _UNREACHED), found.get(2, _UNREACHED), first


def progress_moves(s: State) -> Iterator[Move]:
    """The moves that make progress (see the module docstring), the best first: each
    legal now, none twice.  Nothing when the game is over or only aimless moves are left."""
    moves = s.legal_moves(canonical=True)
    if not moves:
        return
    if s.choosing_base:
        yield from moves
        return
    given: set[Move] = set()
    settling = [m for m in moves if _route(m) == "t-t" and not is_shuffle(s, m)]
    direct = [*_to_foundation(s, moves), *_waste_to_card(s, moves), *settling]
    for move in direct:
        given.add(move)
        yield move
    if any(is_shuffle(s, m) for m in moves):
        to_foundation, to_waste_play, first = distances(s)
        goals = [1] if to_foundation < _UNREACHED else [2] if to_waste_play < _UNREACHED else []
        for goal in goals:
            step = first.get(goal)
            if step is not None and step not in given:
                given.add(step)
                yield step
    for move in moves:  # a lone card onto another pile: the space it leaves takes the waste's card
        if move not in given and is_shuffle(s, move) and _spaces(s.play(move)) > _spaces(s):
            given.add(move)
            yield move
    yield from _waste_to_space(s, moves)
    if FLIP in moves:
        yield FLIP


def advice(s: State) -> Move | None:
    """The best move of :func:`progress_moves`, or None when there is none."""
    return next(progress_moves(s), None)


def is_progress(s: State, move: Move) -> bool:
    """True when ``move`` (legal in ``s``) makes progress as the advice means it: it lowers
    :func:`measure`, or it is a shuffle that makes a space, or one that neither makes nor
    fills one and brings the goal of :func:`distances` nearer."""
    if not is_shuffle(s, move):
        return True
    gained = _spaces(s.play(move)) - _spaces(s)
    if gained:
        return gained > 0
    before = distances(s)[:2]
    if before == (_UNREACHED, _UNREACHED):
        return False
    after = distances(s.play(move))[:2]
    return after < before


__all__ = ["DEPTH", "advice", "distances", "is_progress", "is_shuffle", "measure", "progress_moves"]
