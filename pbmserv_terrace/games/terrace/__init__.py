"""The pure Terrace rules core (RULES.md): no I/O, no imports from the rest of the package."""

from .board import render_board
from .geometry import Geometry, geometry
from .notation import MOVE_FORMS, NotationError, format_move, format_tpn, looks_like_move, parse_move, parse_tpn, why_illegal
from .position import Move, Outcome, Position, goal_square
from .setups import PLAYERS, VARIANTS, setup_tpn, start_position, variant_for_players

__all__ = [
    "MOVE_FORMS",
    "PLAYERS",
    "VARIANTS",
    "Geometry",
    "Move",
    "NotationError",
    "Outcome",
    "Position",
    "format_move",
    "format_tpn",
    "geometry",
    "goal_square",
    "looks_like_move",
    "parse_move",
    "parse_tpn",
    "render_board",
    "setup_tpn",
    "start_position",
    "variant_for_players",
    "why_illegal",
]
