"""The games this server runs, in one table (:data:`GAME_TYPES`): their command
word, title, family and rules.  Everything that needs one of these facts (the
parser, the replies, the service, the CLI, the web) reads it here; the service
knows no game by name.

The two protocols a game's rules follow are in :mod:`.base`; the adapters of
Terrace (:mod:`.terrace`) and Terrace patience (:mod:`.patience`) implement them
over the pure game packages.  To add a game: its pure package under
``pbmserv_terrace/games/``, an adapter module here, one entry below, its help
template under ``templates/`` — no service file changes.

Each entry declares the game's ids: its ``name`` (what rows store) and its
``key_code`` (what its reply keys carry).  Neither is ever taken from the
entry's place in the table, and neither may change once a board was made: an
entry may go anywhere in the table, but a new game takes a new name and an
unused key code.  :func:`game_table` refuses a table that repeats either.

>>> GAME_TYPES["terrace6x6"].board_size
6
>>> GAME_TYPES["patience"].family
'solitaire'
"""

from __future__ import annotations

import functools
import re
from typing import Any

from ..games.ranking import Ranking as SolitaireRanking
from ..games.ranking import Result as SolitaireResult
from ..games.ranking import rank as rank_solitaire
from .base import KEY_CODES, BoardRules, Family, GameType, IllegalMoveError, SolitaireRules
from .breakthrough import BreakthroughRules
from .patience import PatienceRules
from .terrace import TerraceRules

NAME_LENGTH = 16
"""the longest name a game may have: the ``game_type`` columns are ``String(16)``"""


class GameTableError(ValueError):
    """A game table whose ids are not unique (or a key code out of range)."""


def game_table(*games: GameType) -> dict[str, GameType]:
    """The table of ``games`` by name, in the order given; :class:`GameTableError`
    when two share a name or a key code, a key code is not 0–127, or a name does
    not fit the rows (raised at import for :data:`GAME_TYPES`)."""
    table: dict[str, GameType] = {}
    codes: dict[int, str] = {}
    for g in games:
        if g.name in table:
            raise GameTableError(f"two games called {g.name!r}")
        if not 0 < len(g.name) <= NAME_LENGTH:
            raise GameTableError(f"{g.name!r}: a game's name is 1–{NAME_LENGTH} characters (the rows' game_type)")
        if g.key_code not in KEY_CODES:
            raise GameTableError(f"{g.name}: key_code {g.key_code!r} is not in 0–{len(KEY_CODES) - 1}")
        if g.key_code in codes:
            raise GameTableError(f"{g.name} and {codes[g.key_code]} both have key_code {g.key_code}")
        table[g.name] = g
        codes[g.key_code] = g.name
    return table


ROBOT_ELO_8X8 = {1: 1600.0 - 223, 2: 1600.0, 3: 1600.0 + 597}
ROBOT_ELO_6X6 = {1: 1600.0 - 512, 2: 1600.0, 3: 1600.0 + 394}
"""The robots' ratings, pinned (issue 42): robot2 at the scale's start, the others by
the Elo differences ``bench/robot.py`` measured at the robots' own budgets on
2026-11-28 (8x8 long / 6x6 short): robot2 v robot1 +223 [+112, +405] (30 games) /
+512 [+345, +1200] (30); robot3 v robot2 +597 [+401, +1200] (16) / +394 [+253, +1200]
(16).  Measure again when an engine changes (``--pairs 2-1,3-2``)."""

GAME_TYPES: dict[str, GameType] = game_table(
    GameType("terrace", "Terrace", "board", TerraceRules(8), help_topics=("terrace", "rules"),
             help_template="help_terrace.txt", key_code=0, robot_ratings=ROBOT_ELO_8X8),
    GameType("terrace6x6", "Terrace6x6", "board", TerraceRules(6), help_topics=("terrace6x6",),
             help_template="help_terrace.txt", key_code=1, robot_ratings=ROBOT_ELO_6X6),
    GameType("patience", "Patience", "solitaire", PatienceRules(), help_topics=("patience", "solitaire"), key_code=2),
    GameType("breakthrough", "Breakthrough", "board", BreakthroughRules(8), help_topics=("breakthrough",),
             help_template="help_breakthrough.txt", key_code=3),
)
"""every game, by name; each entry's ``name`` and ``key_code`` are its ids (never
change them; see the module's docstring)"""
DEFAULT_GAME_TYPE = "terrace"
"""the server's main game: ``move 101 …`` means ``terrace move 101 …``"""


def game_type(name: str | None) -> GameType:
    """The game type called ``name`` (the default one for None)."""
    return GAME_TYPES[name or DEFAULT_GAME_TYPE]


def game_title(name: str | None) -> str:
    return GAME_TYPES.get(name or DEFAULT_GAME_TYPE, GAME_TYPES[DEFAULT_GAME_TYPE]).title


def board_size(name: str) -> int:
    """8 for terrace, 6 for terrace6x6 (0 for a game without a board)."""
    return GAME_TYPES[name].board_size


def board_rules(name: str | None) -> BoardRules[Any, Any]:
    """The rules of board game ``name`` (AssertionError for a solitaire)."""
    return game_type(name).board


def board_games() -> list[str]:
    """The names of the board games (the ones with ratings, challenges and robots)."""
    return [g.name for g in GAME_TYPES.values() if g.family == "board"]


def family_of(name: str | None) -> Family:
    return game_type(name).family


def board_game_of(position: str, wanted: str | None = None) -> str:
    """The board game ``wanted`` if its rules read ``position``, else the first board
    game whose rules read it (a position string may say its own game: Terrace's its
    board size); ValueError with the first game's reason when none does."""
    names = [wanted] if wanted else board_games()
    first: ValueError | None = None
    for name in names:
        try:
            GAME_TYPES[name].board.load(position)
        except ValueError as exc:
            first = first or exc
            continue
        return name
    raise first or ValueError("there is no board game")


@functools.cache
def move_example(name: str) -> str:
    """A move of board game ``name``, to show how one is written: the first player's
    example at the start of its first two-player setup (``b2-c3`` in Terrace)."""
    rules = GAME_TYPES[name].board
    return rules.example_move(rules.start(rules.two_player_setups[0]))


TITLES_PATTERN = "|".join(sorted((re.escape(g.title) for g in GAME_TYPES.values()), key=len, reverse=True))
"""the games' titles as alternatives of a regular expression (the longest first),
for reading the subjects of the server's own mails (``Patience Board 5 Error``)"""


def game_titled(title: str) -> GameType:
    """The game whose title is ``title`` (any case; KeyError if none)."""
    return next(g for g in GAME_TYPES.values() if g.title.lower() == title.lower())


__all__ = [
    "DEFAULT_GAME_TYPE",
    "GAME_TYPES",
    "TITLES_PATTERN",
    "BoardRules",
    "Family",
    "GameTableError",
    "GameType",
    "IllegalMoveError",
    "SolitaireRanking",
    "SolitaireResult",
    "SolitaireRules",
    "board_game_of",
    "board_games",
    "board_rules",
    "board_size",
    "family_of",
    "game_table",
    "game_title",
    "game_titled",
    "game_type",
    "move_example",
    "rank_solitaire",
]
