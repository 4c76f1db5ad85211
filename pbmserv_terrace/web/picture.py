"""The board picture for pages: the mail's drawing (``render.picture.board_svg``) made
fit to sit inside HTML (no XML declaration), with the threatened T's ringed."""

from __future__ import annotations

import re

from ..render.picture import board_svg, threatened_squares
from .boardview import Frame

_PROLOGUE = re.compile(r"^\s*(<\?xml[^>]*\?>\s*)?(<!DOCTYPE[^>]*>\s*)?", re.IGNORECASE)


def inline_svg(frame: Frame) -> str:
    """The picture of ``frame`` as an ``<svg>`` element (the same drawing as the mail picture)."""
    svg = board_svg(frame.pos, frame.last_move, captured=frame.captured, threatened=threatened_squares(frame.pos))
    return _PROLOGUE.sub("", svg, count=1)
