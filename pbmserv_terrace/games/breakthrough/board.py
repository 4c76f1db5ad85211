"""The ASCII board of a mail, framed like Terrace's (files above and below, ranks
on both sides, rank 8 at the top): ``W`` a White pawn, ``B`` a Black pawn, ``.``
an empty square.  Whose turn it is the server says, not the board.

>>> from .position import start_position
>>> print(board_text(start_position("6x6")))
        a   b   c   d   e   f
      +---+---+---+---+---+---+
    6 | B | B | B | B | B | B | 6
      +---+---+---+---+---+---+
    5 | B | B | B | B | B | B | 5
      +---+---+---+---+---+---+
    4 | . | . | . | . | . | . | 4
      +---+---+---+---+---+---+
    3 | . | . | . | . | . | . | 3
      +---+---+---+---+---+---+
    2 | W | W | W | W | W | W | 2
      +---+---+---+---+---+---+
    1 | W | W | W | W | W | W | 1
      +---+---+---+---+---+---+
        a   b   c   d   e   f
"""

from __future__ import annotations

from .notation import FILES
from .position import BLACK, WHITE, Position

CELLS = {0: ".", WHITE: "W", BLACK: "B"}
"""what a square shows: empty, a White pawn, a Black pawn"""


def board_text(pos: Position) -> str:
    """The diagram of ``pos`` as a mail shows it (no trailing newline)."""
    n = pos.n
    files = "        " + "   ".join(FILES[:n])
    rule = "      " + "+---" * n + "+"
    lines = [files, rule]
    for rank in range(n - 1, -1, -1):
        cells = " | ".join(CELLS[pos.army_at(rank * n + f)] for f in range(n))
        lines += [f"   {rank + 1:>2} | {cells} | {rank + 1}", rule]
    lines.append(files)
    return "\n".join(lines)


def army_letter(army: int) -> str:
    """How ``army``'s pawns are written on the board (``W`` or ``B``)."""
    return CELLS[army]
