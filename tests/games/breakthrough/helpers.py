"""Positions drawn as diagrams, and an independent move generator for the tests.

The generator below knows nothing of the package's bitmasks: a dict of pawns by
(file, rank), the rules read straight off the rule text.  Perft counts from it
are what the package's own counts are checked against.
"""

from __future__ import annotations

import random

from pbmserv_terrace.games.breakthrough import BLACK, WHITE, Position, dump, load

Grid = dict[tuple[int, int], str]


def make(diagram: str, to_move: str = "w") -> Position:
    """A position from rows of ``W``, ``B`` and ``.`` (the top rank first), through
    the stored string (so the test reads like the board a mail shows)."""
    rows = [line.split() for line in diagram.strip().splitlines()]
    n = len(rows)
    assert all(len(r) == n for r in rows), diagram
    text = "/".join("".join(c if c != "." else "1" for c in row) for row in rows)
    # runs of 1s are a legal spelling for load; dump writes the canonical one
    return load(dump(load(f"{text} {to_move}")))


def grid_of(pos: Position) -> Grid:
    n = pos.n
    return {(sq % n, sq // n): "W" if pos.army_at(sq) == WHITE else "B" for sq in range(n * n) if pos.army_at(sq)}


def brute_moves(grid: Grid, n: int, side: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Every move of ``side`` (``W`` or ``B``) read off the rules; none when the game is over."""
    if any(r == n - 1 for (_, r), p in grid.items() if p == "W") or any(r == 0 for (_, r), p in grid.items() if p == "B"):
        return []  # a pawn stands on its goal row: the game is over
    if "W" not in grid.values() or "B" not in grid.values():
        return []  # an army without pawns has lost
    step = 1 if side == "W" else -1
    out = []
    for (f, r), p in grid.items():
        if p != side:
            continue
        for df in (-1, 0, 1):
            tf, tr = f + df, r + step
            if not (0 <= tf < n and 0 <= tr < n):
                continue
            there = grid.get((tf, tr))
            straight_ok = df == 0 and there is None  # straight: onto an empty square only
            diagonal_ok = df != 0 and there != side  # diagonal: empty, or an enemy pawn to capture
            if straight_ok or diagonal_ok:
                out.append(((f, r), (tf, tr)))
    return out


def brute_play(grid: Grid, move: tuple[tuple[int, int], tuple[int, int]]) -> Grid:
    frm, to = move
    after = dict(grid)
    after[to] = after.pop(frm)
    return after


def brute_perft(grid: Grid, n: int, side: str, depth: int) -> int:
    if depth == 0:
        return 1
    moves = brute_moves(grid, n, side)
    nxt = "B" if side == "W" else "W"
    return sum(brute_perft(brute_play(grid, m), n, nxt, depth - 1) for m in moves)


def random_game(pos: Position, rng: random.Random, plies: int) -> list[Position]:
    """``pos`` and the positions after up to ``plies`` random moves (fewer if the game ends)."""
    out = [pos]
    for _ in range(plies):
        moves = pos.legal_moves()
        if not moves:
            break
        pos = pos.play(rng.choice(moves))
        out.append(pos)
    return out


def side_letter(pos: Position) -> str:
    return "W" if pos.to_move == WHITE else "B" if pos.to_move == BLACK else "?"
