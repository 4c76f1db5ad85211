"""The board picture for pages: the mail's drawing (the game's
:meth:`~..gametypes.BoardRules.picture_svg`) made fit to sit inside HTML (no XML
declaration)."""

from __future__ import annotations

import re

from ..gametypes import board_rules
from .boardview import Frame

_PROLOGUE = re.compile(r"^\s*(<\?xml[^>]*\?>\s*)?(<!DOCTYPE[^>]*>\s*)?", re.IGNORECASE)


def inline_svg(game_type: str, frame: Frame) -> str:
    """The picture of ``frame`` as an ``<svg>`` element (the same drawing as the mail picture)."""
    svg = board_rules(game_type).picture_svg(frame.pos, frame.last_move)
    return _PROLOGUE.sub("", svg, count=1)
