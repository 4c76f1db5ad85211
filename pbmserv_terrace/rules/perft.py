"""Perft (RULES.md §9): count the leaf nodes of the legal-move tree.

The last ply is bulk-counted with :meth:`Position.count_moves`, which gives the
same number as generating the moves (the tests compare both with a slow reference).
"""

from __future__ import annotations

from .notation import format_move
from .position import Position


def perft(pos: Position, depth: int) -> int:
    """Number of move sequences of length ``depth`` from ``pos``; finished games have none."""
    if depth == 0:
        return 1
    if depth == 1:
        return pos.count_moves()
    total = 0
    for move in pos.legal_moves():
        total += perft(pos.play(move), depth - 1)
    return total


def divide(pos: Position, depth: int) -> dict[str, int]:
    """perft split by first move (canonical notation), for debugging counts."""
    return {format_move(pos, m): perft(pos.play(m), depth - 1) for m in pos.legal_moves()}
