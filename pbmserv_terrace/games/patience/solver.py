"""A solver for Terrace patience: depth-first search that knows the order of the stock.

It answers "can this deal still be won from here?": ``won`` with a winning line,
``lost`` when the whole game tree was searched without a win, ``unknown`` when the
node or time budget ran out first.  Seeing the stock makes it stronger than a
player (who sees only the turned cards), so ``won`` means a winning line exists,
not that a player would find it.

Search details:
- Moves come from :meth:`State.legal_moves` with ``canonical=True`` (equal foundations
  or spaces tried once), foundation moves first (reserve, waste, tableau), then
  waste and tableau moves, the stock turn last.  The lock rule and every other rule
  are those of :meth:`State.play`, so the solver and the game cannot disagree.
- Duplicate states are found with :func:`state_key`, a canonical key: stock and
  reserve by length (they only lose cards from the top in the first pass), the
  waste as it is, foundations by their top cards (a foundation whose top is one
  rank below the base is complete, so the top says all), the tableau as a sorted
  multiset of piles (piles are interchangeable), plus the lock, pass and base rank.
  Every state is expanded once per search, so no line goes round in circles.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Literal

from .advice import advice, is_progress
from .cards import DECK_SIZE, is_red, rank_of
from .moves import Move, Pile
from .state import State

Verdict = Literal["won", "lost", "unknown"]
_RESERVE = Pile("r")
_COLOUR_CLASS = tuple(rank_of(c) * 2 + is_red(c) for c in range(52))


@dataclass(frozen=True, slots=True)
class SolveResult:
    """``verdict``; ``line`` the winning moves from the state searched (empty unless won);
    ``nodes`` the states generated; ``seconds`` the time taken."""

    verdict: Verdict
    line: list[Move] = field(default_factory=list)
    nodes: int = 0
    seconds: float = 0.0


def state_key(s: State) -> Hashable:
    """A key equal for states with the same future (see the module docstring)."""
    stock: Hashable = len(s.stock) if s.stock_pass == 1 else s.stock
    if s.variant.by_suit:
        foundations = tuple(sorted(f[-1] if f else -1 for f in s.foundations))
    else:  # building by colour: a 7h and a 7d on top lead to the same future
        foundations = tuple(sorted(_COLOUR_CLASS[f[-1]] if f else -1 for f in s.foundations))
    return (stock, s.waste, len(s.reserve), foundations, tuple(sorted(s.tableau)), s.locked, s.stock_pass, s.base_rank)


def _greedy_moves(s: State) -> list[Move]:
    """The heuristic pass's moves: a reserve card that can go to a foundation goes at once."""
    moves = s.legal_moves(canonical=True)
    if moves and moves[0].src == _RESERVE:
        return moves[:1]
    return moves


def solve(state: State, *, max_nodes: int = 1_000_000, max_seconds: float = 1.0) -> SolveResult:
    """Search for a win from ``state`` within ``max_nodes`` generated states and ``max_seconds``.

    A first pass with a fifth of the budget plays reserve cards to the foundations as soon
    as they fit (usually right, and it finds wins much sooner, but it may miss some);
    then the exact search, which alone can prove ``lost``, gets the rest of the budget.
    """
    start = time.perf_counter()
    first = _search(state, _greedy_moves, max_nodes // 5, max_seconds / 5, start)
    if first.verdict == "won" or (first.verdict == "lost" and not state.reserve):
        return first
    rest = _search(state, lambda s: s.legal_moves(canonical=True), max_nodes - first.nodes, max_seconds, start)
    return SolveResult(rest.verdict, rest.line, first.nodes + rest.nodes, rest.seconds)


def _search(
    state: State, moves_of: Callable[[State], list[Move]], max_nodes: int, max_seconds: float, start: float
) -> SolveResult:
    if state.score == DECK_SIZE:
        return SolveResult("won", [], 0, 0.0)
    if state.lost or state.resigned:
        return SolveResult("lost", [], 0, 0.0)
    seen = {state_key(state)}
    stack: list[tuple[State, list[Move], list[int]]] = [(state, moves_of(state), [0])]
    path: list[Move] = []
    nodes = 0
    while stack:
        current, moves, cursor = stack[-1]
        if cursor[0] >= len(moves):
            stack.pop()
            if path:
                path.pop()
            continue
        move = moves[cursor[0]]
        cursor[0] += 1
        child = current.play(move)
        nodes += 1
        if child.score == DECK_SIZE:
            return SolveResult("won", [*path, move], nodes, time.perf_counter() - start)
        if nodes >= max_nodes or (nodes & 127 == 0 and time.perf_counter() - start > max_seconds):
            return SolveResult("unknown", [], nodes, time.perf_counter() - start)
        if child.lost:
            continue
        key = state_key(child)
        if key in seen:
            continue
        seen.add(key)
        stack.append((child, moves_of(child), [0]))
        path.append(move)
    return SolveResult("lost", [], nodes, time.perf_counter() - start)


def hint(state: State, *, max_seconds: float = 0.5) -> Move | None:
    """One good move that makes progress: the first move of a winning line if the solver
    finds one in time and that move makes progress (:func:`.advice.is_progress`: a line
    that wins may start by moving a card to and fro), else the advice
    (:func:`.advice.advice`: foundation moves first, ``flip`` when nothing better).  None
    when the game is over or no move makes progress.  Following only the hints, no
    position comes twice (:mod:`.advice`)."""
    if not state.legal_moves(canonical=True):
        return None
    result = solve(state, max_nodes=200_000, max_seconds=max_seconds)
    if result.verdict == "won" and result.line and is_progress(state, result.line[0]):
        return result.line[0]
    return advice(state)
