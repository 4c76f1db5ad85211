"""Breakthrough (Dan Troyka, 2000): the standard 8x8 game, and the same on 6x6.

Rules.  Each army has its pawns on its two home rows: White (army 1) on ranks 1-2,
Black (army 2) on the top two ranks; White moves first.  A pawn steps one square
straight forward or diagonally forward onto an empty square, or captures an enemy
pawn diagonally forward (never straight ahead); captures are not compulsory.  The
first army to move a pawn onto the enemy's home row wins (with a capture too);
an army that has lost all its pawns, or has no move, loses.  No draws by rule
(players may still agree one).

Pure rules core: standard library only, and Pillow for :mod:`.picture`.  What the
server's adapter needs (shaped after ``gametypes.base.BoardRules``), each a
function of this package:

- :class:`Position` (immutable, hashable: ``n``, ``white``/``black`` pawn
  bitmasks, ``to_move`` 1 or 2; ``armies()``, ``outcome()`` → :class:`Outcome`
  ``(winner, reason)`` or None, ``is_over()``, ``announcements()``,
  ``without_army(army)``, ``legal_moves()``, ``play(move)``);
- :data:`SETUPS` (``8x8``, the default, and ``6x6``), :func:`setup_for`, :func:`start`;
- :func:`load` / :func:`dump`: the stored string, FEN-like, at most 73 characters
  (``BBBBBBBB/BBBBBBBB/8/8/8/8/WWWWWWWW/WWWWWWWW w``, the board size from the ranks);
- :func:`parse_move` (:class:`IllegalMoveError`, a ValueError with a sentence),
  :func:`format_move` (``b2-c3``, ``b4xc5``), :func:`play`, :func:`legal_moves`,
  :func:`looks_like_move`, :data:`MOVE_FORMS`;
- :func:`outcome`, :func:`to_move`, :func:`material`, :func:`example_move`;
- :func:`board_text` (the ASCII board), :func:`army_letters`;
- :func:`choose_move` ``(pos, level, seed) -> (move, comment)``, :func:`accepts_draw`
  (:mod:`.robot`; :func:`robot_move` does it on strings);
- :func:`board_svg`, :func:`board_png`, :func:`picture_alt` (:mod:`.picture`).
"""

from __future__ import annotations

from .board import army_letter, board_text
from .notation import (
    MOVE_FORMS,
    PositionStringError,
    dump,
    example_move,
    format_move,
    load,
    looks_like_move,
    parse_move,
    square_name,
)
from .picture import board_png, board_svg, picture_alt
from .position import (
    ARMIES,
    ARMY_NAMES,
    BLACK,
    SETUPS,
    WHITE,
    IllegalMoveError,
    Move,
    Outcome,
    Position,
    perft,
    start_position,
)
from .robot import LEVELS, SearchResult, accepts_draw, analyse, choose_move, describe

GAME_TYPE = "breakthrough"
TITLE = "Breakthrough"
TWO_PLAYER_SETUPS = SETUPS


def setup_for(players: int, setup: str | None) -> str:
    """The setup a challenge of ``players`` plays (ValueError with a sentence):
    Breakthrough is for two; ``None`` is the default ``8x8``; ``-6x6`` the small board."""
    if players != 2:
        raise ValueError(f"Breakthrough is a game for two players, not {players}.")
    if setup is None:
        return SETUPS[0]
    name = setup.strip().lower().lstrip("-")
    if name in ("standard", "8"):
        name = "8x8"
    if name == "6":
        name = "6x6"
    if name not in SETUPS:
        raise ValueError(f"Breakthrough has no setup -{name}: choose {' or '.join('-' + s for s in SETUPS)}.")
    return name


def start(setup: str = SETUPS[0]) -> Position:
    """The start position of ``setup`` (``8x8`` or ``6x6``)."""
    return start_position(setup_for(2, setup))


def play(pos: Position, move: Move) -> Position:
    return pos.play(move)


def legal_moves(pos: Position) -> list[Move]:
    return pos.legal_moves()


def outcome(pos: Position) -> Outcome | None:
    """How the game ended (the winner army and why), or None while it goes on."""
    return pos.outcome()


def to_move(pos: Position) -> int:
    return pos.to_move


def material(pos: Position) -> int:
    """The pawns on the board: never grows (Breakthrough positions never repeat anyway)."""
    return pos.material()


def army_letters(army: int) -> str:
    """How ``army``'s pawns are written on the ASCII board (``W``, ``B``)."""
    return army_letter(army)


def robot_move(text: str, level: int = 1, seed: int | str = 0) -> tuple[str, str]:
    """The robot's move in the stored position ``text`` as its canonical text, and
    its comment (strings in and out, for a worker process)."""
    pos = load(text)
    move, comment = choose_move(pos, level, seed)
    return format_move(pos, move), comment


__all__ = [
    "ARMIES",
    "ARMY_NAMES",
    "BLACK",
    "GAME_TYPE",
    "LEVELS",
    "MOVE_FORMS",
    "SETUPS",
    "TITLE",
    "TWO_PLAYER_SETUPS",
    "WHITE",
    "IllegalMoveError",
    "Move",
    "Outcome",
    "Position",
    "PositionStringError",
    "SearchResult",
    "accepts_draw",
    "analyse",
    "army_letters",
    "board_png",
    "board_svg",
    "board_text",
    "choose_move",
    "describe",
    "dump",
    "example_move",
    "format_move",
    "legal_moves",
    "load",
    "looks_like_move",
    "material",
    "outcome",
    "parse_move",
    "perft",
    "picture_alt",
    "play",
    "robot_move",
    "setup_for",
    "square_name",
    "start",
    "start_position",
    "to_move",
]
