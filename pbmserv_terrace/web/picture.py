"""The board picture for pages: the mail's drawing (``render.picture.board_svg``) made
fit to sit inside HTML (no XML declaration), plus the squares to ring as threatened."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..rules import Move, Position
from ..rules.pieces import SIZE, piece_text
from .boardview import Frame

try:
    from ..render.picture import board_svg
except ImportError:  # PLACEHOLDER until render.picture lands

    def board_svg(
        pos: Position, last_move: Move | None = None, *, captured: int | None = None, threatened: Sequence[int] = ()
    ) -> str:
        n, cell = pos.n, 36 if pos.n == 8 else 48
        fills = {1: "#E69F00", 2: "#0072B2", 3: "#009E73", 4: "#CC79A7"}
        out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {n * cell} {n * cell}" width="{n * cell}" role="img">']
        for sq in range(n * n):
            x, y = sq % n * cell, (n - 1 - sq // n) * cell
            shade = 250 - pos.geo.height[sq] * 18
            out.append(f'<rect x="{x}" y="{y}" width="{cell}" height="{cell}" fill="rgb({shade},{shade},{shade})"/>')
            p = pos.board[sq]
            if p:
                r = cell * (0.2 + 0.06 * SIZE[p])
                out.append(f'<g class="piece"><title>{piece_text(p)} {pos.geo.name(sq)}</title>')
                out.append(f'<circle cx="{x + cell / 2}" cy="{y + cell / 2}" r="{r}" fill="{fills[p >> 3]}"/>')
                out.append(f'<text x="{x + cell / 2}" y="{y + cell / 2 + 4}" text-anchor="middle">{piece_text(p)}</text></g>')
        out.append("</svg>")
        return "".join(out)


_PROLOGUE = re.compile(r"^\s*(<\?xml[^>]*\?>\s*)?(<!DOCTYPE[^>]*>\s*)?", re.IGNORECASE)


def threatened_squares(pos: Position) -> list[int]:
    """Squares of the T's that RULES.md §6 announces as ``Terrace!``."""
    out = []
    for army in pos.threatened_armies():
        sq = pos.t_square(army)
        if sq is not None:
            out.append(sq)
    return out


def inline_svg(frame: Frame) -> str:
    """The picture of ``frame`` as an ``<svg>`` element (the same drawing as the mail picture)."""
    svg = board_svg(frame.pos, frame.last_move, captured=frame.captured, threatened=threatened_squares(frame.pos))
    return _PROLOGUE.sub("", svg, count=1)
