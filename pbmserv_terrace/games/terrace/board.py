"""The pbmserv ASCII board (COMMANDS.md §5, SETUPS.txt), character for character.

Walls (``|`` between files, ``---`` between ranks) stand only between squares of
different height; ``+`` marks every corner except the board's four corners, which
show ``H`` (high) or ``L`` (low).  Files are printed above and below, ranks on both
sides; pieces of armies 3 and 4 carry a prime.

The frame (walls, corners, labels) depends on the board size only: it is drawn once
per size with a slot for each square, and a board fills in its pieces.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from operator import itemgetter

from .geometry import FILES, Geometry, geometry
from .pieces import piece_text
from .position import Position


def _cell(p: int) -> str:
    """What a square holding piece int ``p`` (0: empty) shows between its walls."""
    return f" {piece_text(p):<2}" if p else "   "


_CELLS: dict[int, str] = {p: _cell(p) for p in (0, *(p for p in range(8, 40) if p & 7 < 5))}
"""The cell of every valid piece int and of an empty square."""


def _draw(geo: Geometry, cell: Callable[[int], str]) -> str:
    """The diagram with ``cell(sq)`` in each square, ranks from the top."""
    n, height = geo.n, geo.height
    files = "        " + "   ".join(FILES[:n])
    lines = [files]

    def rule(y_above: int | None, y_below: int | None) -> str:
        """The horizontal line between rank index y_above and y_below (None = edge)."""
        out = ["      "]
        edge_row = n - 1 if y_above is None else 0 if y_below is None else None
        for x in range(n):
            corner = "+"
            if x == 0 and edge_row is not None:
                corner = geo.corners[edge_row * n]
            out.append(corner)
            if y_above is None or y_below is None or height[y_above * n + x] != height[y_below * n + x]:
                out.append("---")
            else:
                out.append("   ")
        last = "+" if edge_row is None else geo.corners[edge_row * n + n - 1]
        out.append(last)
        return "".join(out)

    lines.append(rule(None, n - 1))
    for y in range(n - 1, -1, -1):
        row = [f"    {y + 1} "]
        for x in range(n):
            sq = y * n + x
            wall = "|" if x == 0 or height[sq - 1] != height[sq] else " "
            row.append(wall + cell(sq))
        row.append(f"| {y + 1}")
        lines.append("".join(row))
        lines.append(rule(y, y - 1) if y > 0 else rule(0, None))
    lines.append(files)
    return "\n".join(lines)


@cache
def _frame(n: int) -> tuple[str, Callable[[list[int]], tuple[int, ...]]]:
    """The empty diagram of the N x N board as a %-template with one ``%s`` per square
    (the frame has no ``%`` of its own), and a getter of the board's pieces in the
    template's order (ranks from the top, files from a)."""
    frame = _draw(geometry(n), lambda sq: "%s")
    order = [y * n + x for y in range(n - 1, -1, -1) for x in range(n)]
    return frame, itemgetter(*order)


def render_board(pos: Position) -> str:
    """The diagram of ``pos`` as the server mails it (no trailing newline)."""
    geo = pos.geo
    board = pos.board
    frame, in_order = _frame(geo.n)
    try:
        cells = tuple(map(_CELLS.__getitem__, in_order(board)))
    except KeyError:  # a piece int no position string can hold: draw it the long way
        return _draw(geo, lambda sq: _cell(board[sq]))
    return frame % cells
