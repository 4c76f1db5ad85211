"""The pbmserv ASCII board (COMMANDS.md §5, SETUPS.txt), character for character.

Walls (``|`` between files, ``---`` between ranks) stand only between squares of
different height; ``+`` marks every corner except the board's four corners, which
show ``H`` (high) or ``L`` (low).  Files are printed above and below, ranks on both
sides; pieces of armies 3 and 4 carry a prime.
"""

from __future__ import annotations

from .geometry import FILES
from .pieces import piece_text
from .position import Position


def render_board(pos: Position) -> str:
    """The diagram of ``pos`` as the server mails it (no trailing newline)."""
    geo = pos.geo
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
            p = pos.board[sq]
            cell = f" {piece_text(p):<2}" if p else "   "
            row.append(wall + cell)
        row.append(f"| {y + 1}")
        lines.append("".join(row))
        lines.append(rule(y, y - 1) if y > 0 else rule(0, None))
    lines.append(files)
    return "\n".join(lines)
