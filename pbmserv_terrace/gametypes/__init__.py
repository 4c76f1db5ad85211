"""The games this server runs, in one table (:data:`GAME_TYPES`): their command
word, title, family and rules.  Everything that needs one of these facts (the
parser, the replies, the service, the CLI, the web) reads it here; the service
knows no game by name.

The two protocols a game's rules follow are in :mod:`.base`; the adapters of
Terrace (:mod:`.terrace`) and Terrace patience (:mod:`.patience`) implement them
over the pure game packages.  To add a game: its pure package under
``pbmserv_terrace/games/``, an adapter module here, one entry below, its help
template under ``templates/`` — no service file changes.

>>> GAME_TYPES["terrace6x6"].board_size
6
>>> GAME_TYPES["patience"].family
'solitaire'
"""

from __future__ import annotations

from ..games.ranking import Result as SolitaireResult
from ..games.ranking import rank as rank_solitaire
from .base import BoardRules, Family, GameType, IllegalMoveError, SolitaireRules
from .patience import PATIENCE_PASSWORD_AT, PATIENCE_VERBS, PatienceRules
from .terrace import BOARD_VERBS, TerraceRules

BOARD_PASSWORD_AT = {"challenge": 1}
"""``challenge USERID PASSWORD OPPONENT…`` (issue 36): the second word is masked in
quotes and logs whichever form it is (it is a password unless it names a player)"""
GAME_TYPES: dict[str, GameType] = {
    g.name: g
    for g in (
        GameType(
            "terrace",
            "Terrace",
            "board",
            TerraceRules(8),
            ("terrace", "rules"),
            BOARD_VERBS,
            "help_terrace.txt",
            password_at=BOARD_PASSWORD_AT,
        ),
        GameType(
            "terrace6x6",
            "Terrace6x6",
            "board",
            TerraceRules(6),
            ("terrace6x6",),
            BOARD_VERBS,
            "help_terrace.txt",
            password_at=BOARD_PASSWORD_AT,
        ),
        GameType(
            "patience",
            "Patience",
            "solitaire",
            PatienceRules(),
            ("patience", "solitaire"),
            PATIENCE_VERBS,
            password_at=PATIENCE_PASSWORD_AT,
        ),
    )
}
DEFAULT_GAME_TYPE = "terrace"
"""the server's main game: ``move 101 …`` means ``terrace move 101 …``"""
GAME_VERBS: tuple[str, ...] = tuple(dict.fromkeys(v for g in GAME_TYPES.values() for v in g.verbs))
"""every game command word of every game"""


def game_type(name: str | None) -> GameType:
    """The game type called ``name`` (the default one for None)."""
    return GAME_TYPES[name or DEFAULT_GAME_TYPE]


def game_title(name: str | None) -> str:
    return GAME_TYPES.get(name or DEFAULT_GAME_TYPE, GAME_TYPES[DEFAULT_GAME_TYPE]).title


def board_size(name: str) -> int:
    """8 for terrace, 6 for terrace6x6 (0 for a game without a board)."""
    return GAME_TYPES[name].board_size


def board_rules(name: str | None) -> BoardRules:
    """The rules of board game ``name`` (AssertionError for a solitaire)."""
    return game_type(name).board


def board_games() -> list[str]:
    """The names of the board games (the ones with ratings, challenges and robots)."""
    return [g.name for g in GAME_TYPES.values() if g.family == "board"]


def family_of(name: str | None) -> Family:
    return game_type(name).family


__all__ = [
    "DEFAULT_GAME_TYPE",
    "GAME_TYPES",
    "GAME_VERBS",
    "BoardRules",
    "Family",
    "GameType",
    "IllegalMoveError",
    "SolitaireResult",
    "SolitaireRules",
    "board_games",
    "board_rules",
    "board_size",
    "family_of",
    "game_title",
    "game_type",
    "rank_solitaire",
]
