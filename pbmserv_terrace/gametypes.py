"""The game types this server runs, in one table: their command word, their title
in subjects and headings, and their board size.  Everything that needs one of
these facts (the parser, the replies, the service, the CLI) reads it here.

>>> GAME_TYPES["terrace6x6"].board_size
6
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GameType:
    name: str
    """the command word: ``terrace move 101 …``"""
    title: str
    """in subjects and headings: ``Terrace Board 101``"""
    board_size: int


GAME_TYPES: dict[str, GameType] = {
    "terrace": GameType("terrace", "Terrace", 8),
    "terrace6x6": GameType("terrace6x6", "Terrace6x6", 6),
}
DEFAULT_GAME_TYPE = "terrace"
"""the server's main game: ``move 101 …`` means ``terrace move 101 …``"""


def game_type(name: str | None) -> GameType:
    """The game type called ``name`` (the default one for None)."""
    return GAME_TYPES[name or DEFAULT_GAME_TYPE]


def game_title(name: str | None) -> str:
    return GAME_TYPES.get(name or DEFAULT_GAME_TYPE, GAME_TYPES[DEFAULT_GAME_TYPE]).title


def board_size(name: str) -> int:
    """8 for terrace, 6 for terrace6x6."""
    return GAME_TYPES[name].board_size
