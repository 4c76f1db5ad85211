"""The robot's best moves in one position, each with its score and principal
variation (issue 42: ``analyze N[#k]``).

Unlike a robot's move, which needs only the best move (alpha-beta gives the others
mere bounds), an analysis needs the best ``count`` scored exactly: each iteration
of the deepening searches every root move with the window above the ``count``-th
best exact score found so far, so the best ``count`` get true scores at the depth
reached and the others are refuted as cheaply as alpha-beta refutes a move.  A node budget (deterministic: the same position and budget give the same
answer) stops it; the last completed iteration counts.  Each move's line is then
read from the transposition table (the best move stored for each position, as long
as it is legal, the game is not over and no position repeats), at most PV_PLIES
plies.

Scores are from the point of view of the side to move at the analysed position;
a forced result is MATE minus the plies to it (:func:`mate_in`).  Repetitions of
the game's earlier positions (``seen``) score as draws, with no contempt: an
analysis has no side to favour.
"""

from __future__ import annotations

from dataclasses import dataclass

from pbmserv_terrace.games.terrace import Move, Position

from .board import SearchBoard, to_move_obj
from .search import INF, MATE, MATE_BOUND, Limits, Searcher, Stop

PV_PLIES = 8
"""the longest line given for a move (the move itself included)"""
MAX_DEPTH = 64


@dataclass(frozen=True, slots=True)
class Line:
    """One root move: its score (the mover's view) and the line that follows it."""

    move: Move
    score: int
    pv: tuple[Move, ...]
    """the move itself, then the best replies as the search saw them"""


@dataclass(frozen=True, slots=True)
class Analysis:
    lines: tuple[Line, ...]
    """the best moves, best first (at most the ``count`` asked for)"""
    depth: int
    """the deepest iteration completed (0: the static view only)"""
    nodes: int
    moves: int
    """how many legal moves the position has"""


def mate_in(score: int) -> int | None:
    """The moves of the winner to a forced result: positive when the side to move
    wins in that many of its moves, negative when it loses after that many of the
    other side's; None when the score is no forced result."""
    if score >= MATE_BOUND:
        return (MATE - score + 1) // 2
    if score <= -MATE_BOUND:
        return -((MATE + score) // 2)
    return None


def _line(sb: SearchBoard, tt: dict[int, tuple[int, int, int, int]], first: int, seen: frozenset[int]) -> tuple[Move, ...]:
    """``first``, then the moves the transposition table ``tt`` holds for the
    positions that follow it from ``sb`` (each checked legal), at most PV_PLIES in all."""
    undos = []
    line = [first]
    visited = set(seen) | {sb.hash}
    undos.append(sb.make(first))
    try:
        while len(line) < PV_PLIES and not sb.winner and sb.hash not in visited:
            visited.add(sb.hash)
            entry = tt.get(sb.hash)
            if entry is None:
                break
            move = entry[3]
            if move not in sb.moves():
                break
            line.append(move)
            undos.append(sb.make(move))
    finally:
        for undo in reversed(undos):
            sb.unmake(undo)
    return tuple(to_move_obj(m) for m in line)


def _root_scores(searcher: Searcher, moves: list[int], depth: int, count: int) -> list[tuple[int, int]]:
    """Each root move's score at ``depth`` (the mover's view): exact for the best
    ``count``, and for the others a bound at most the ``count``-th best score (each
    is searched with the window above that score: what cannot enter the best
    ``count`` is refuted cheaply, as alpha-beta refutes all but the best move)."""
    sb = searcher.sb
    me_root = sb.to_move == searcher.root
    best: list[int] = []
    """the exact scores so far, best first (at most ``count``)"""
    out = []
    for m in moves:
        floor = best[count - 1] if len(best) >= count else -INF
        undo = sb.make(m)
        if (sb.to_move == searcher.root) != me_root:
            score = -searcher.negamax(depth - 1, -INF, -floor, 1)
        else:
            score = searcher.negamax(depth - 1, floor, INF, 1)
        sb.unmake(undo)
        if score > floor:
            best = sorted([*best, score], reverse=True)[:count]
        out.append((score, m))
    return out


def analyse(pos: Position, *, nodes: int, count: int = 3, seen: frozenset[int] = frozenset()) -> Analysis:
    """The ``count`` best moves of the side to move in ``pos`` with their scores and
    lines, searched within ``nodes`` nodes.  ``seen``: keys
    (:func:`..robot.position_key`) of the game's earlier positions, a return to
    which is a draw.  ValueError when the game is over."""
    if pos.outcome() is not None:
        raise ValueError("the game is over: there is no move to analyse")
    sb = SearchBoard(pos)
    moves = sb.moves()
    if not moves:
        raise ValueError("the side to move has no legal move")
    root = sb.to_move
    searcher = Searcher(sb, root, Limits(MAX_DEPTH, nodes), seen - {sb.hash}, 0)
    order = searcher.order(moves, 0, 0)
    ranked: list[tuple[int, int]] = []
    done = 0
    for depth in range(1, MAX_DEPTH + 1):
        try:
            scored = _root_scores(searcher, order, depth, count)
        except Stop:
            break
        ranked = sorted(scored, key=lambda sm: -sm[0])  # stable: ties keep the search's order
        order = [m for _, m in ranked]
        done = depth
        if all(abs(s) >= MATE_BOUND for s, _ in ranked):
            break  # every move's result is forced: deeper tells nothing more
    if not ranked:  # not one iteration within the budget: the moves in the search's order, unscored
        ranked = [(0, m) for m in order]
    # (a search stopped by the budget leaves its board mid-line: the lines are read on a fresh one)
    fresh = SearchBoard(pos)
    lines = tuple(Line(to_move_obj(m), s, _line(fresh, searcher.tt, m, seen)) for s, m in ranked[:count])
    return Analysis(lines, done, searcher.nodes, len(moves))


__all__ = ["PV_PLIES", "Analysis", "Line", "analyse", "mate_in"]
