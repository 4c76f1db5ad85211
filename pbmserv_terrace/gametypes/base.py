"""What the service needs from a game, as two protocols, and the table entry
that names a game and says which protocol its rules follow.

A *board* game (:class:`BoardRules`) is played by two to four people at one
board, taking turns: Terrace and Terrace6x6.  The service runs every board
command (challenge, move and its votes, queue, submit, show, …) through it.

A *solitaire* (:class:`SolitaireRules`) is one player and a numbered deal:
Terrace patience.  The service runs the solitaire commands (new, move, show,
hint, undo, resign, deal-of-the-day, standings) through it; a solitaire's extra
verbs that are only moves (patience's ``base`` and ``flip``) are declared in
:attr:`SolitaireRules.move_verbs`, so the service needs no handler for them.

A third game is a package under :mod:`pbmserv_terrace.games` plus an adapter
module here and one entry in :data:`~pbmserv_terrace.gametypes.GAME_TYPES`;
nothing in the service changes.  The entry fixes the game's two ids, which never
change once a board of it was made: :attr:`GameType.name` (stored in every row)
and :attr:`GameType.key_code` (packed into its reply keys).
"""

from __future__ import annotations

import datetime
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeVar, cast

from .analysis import PositionAnalysis
from .review import GameReview, ReviewStep

Family = Literal["board", "solitaire"]


class IllegalMoveError(ValueError):
    """A move the game's rules refuse; the message is a sentence for the player."""


class Outcome(Protocol):
    @property
    def winner(self) -> int | None: ...

    @property
    def reason(self) -> str: ...


class BoardPosition(Protocol):
    """A board game's position as the service uses it (an immutable value)."""

    @property
    def to_move(self) -> int: ...

    def armies(self) -> Sequence[int]:
        """The armies still on the board, in turn order."""
        ...

    def without_army(self, army: int) -> BoardPosition:
        """The position with ``army`` gone (its player resigned or forfeited)."""
        ...

    def outcome(self) -> Outcome | None: ...

    def is_over(self) -> bool: ...

    def announcements(self) -> list[str]:
        """Sentences about the position for the status block (a threatened T …)."""
        ...


P = TypeVar("P", bound=BoardPosition)
"""a board game's position type (Terrace's ``Position`` …)"""
M = TypeVar("M")
"""a board game's move type (what its ``parse_move`` makes and its ``play`` takes)"""
S = TypeVar("S")
"""a solitaire's state type"""


class BoardRules(Protocol[P, M]):
    """The rules of a turn-based board game for 2–4 players, over its own position
    type ``P`` and move type ``M`` (each adapter says which: ``TerraceRules`` is a
    ``BoardRules[Position, Move]``, checked by mypy where the game table is built)."""

    @property
    def size(self) -> int:
        """board edge in squares (for pictures and the web)"""
        ...

    @property
    def move_forms(self) -> str:
        """how a move is written, for error replies"""
        ...

    @property
    def two_player_setups(self) -> tuple[str, ...]:
        """the setups a two-player challenge may name (``-long`` …); the first is the default"""
        ...

    def setup_for(self, players: int, setup: str | None) -> str:
        """The setup a challenge of ``players`` plays (ValueError with a sentence)."""
        ...

    def start(self, setup: str) -> P:
        """The start position of ``setup``."""
        ...

    def load(self, text: str) -> P:
        """A stored position string → position."""
        ...

    def dump(self, pos: P) -> str:
        """A position → its stored string (at most 200 characters)."""
        ...

    def parse_move(self, pos: P, text: str) -> M:
        """``text`` as a legal move in ``pos``; :class:`IllegalMoveError` (or a subclass
        of ValueError) with a sentence when it is not."""
        ...

    def format_move(self, pos: P, move: M) -> str:
        """The canonical text of ``move`` in ``pos``."""
        ...

    def play(self, pos: P, move: M) -> P: ...

    def looks_like_move(self, text: str) -> bool:
        """``text`` has the shape of a move (without a position to check it on)."""
        ...

    def board_text(self, pos: P) -> str:
        """The position as ASCII for a mail."""
        ...

    def army_letters(self, army: int) -> str:
        """How army ``army``'s pieces are written, for the status line."""
        ...

    def material(self, pos: P) -> int:
        """A count that never grows during a game (a repetition needs equal counts)."""
        ...

    def example_move(self, pos: P) -> str:
        """A legal move of the side to move, for the reply hint."""
        ...

    def move_choices(self, pos: P) -> list[tuple[str, list[tuple[str, str, bool]]]]:
        """Every legal move of the side to move, grouped by the piece that makes it,
        for the board mail's move links (issue 39): ``(piece, targets)`` with the
        piece as its letter and square (``"C d2"``) and each target as ``(square,
        move text, is capture)`` (``("e3", "d2-e3", False)``).  Each legal move
        appears once; its text is what a player writes, and :meth:`parse_move`
        reads it back as that move.  Empty when the game is over."""
        ...

    def robot_move(self, text: str, level: int, ply: int, history: Sequence[str] = ()) -> tuple[str, str]:
        """The robot's move in the position string ``text`` and its comment (runs in
        a worker process: strings in and out)."""
        ...

    def robot_accepts_draw(self, pos: P, army: int, level: int, ply: int) -> bool: ...

    def can_review(self, players: int) -> bool:
        """Whether a finished game that ``players`` began can be reviewed
        (:meth:`review`; issue 42): a game without a reviewing engine says False."""
        ...

    def review(self, start: str, moves: Sequence[str], nodes: int) -> GameReview | None:
        """The engine's review of the game played from the position string ``start``
        by the recorded move texts ``moves`` (its moves only: no resignation),
        searching ``nodes`` per position; None when it cannot review it.  Strings in,
        a plain value out: it runs in a worker process, deterministic for its
        arguments."""
        ...

    def review_step(self, start: str, moves: Sequence[str], nodes: int, found: tuple[Any, ...]) -> ReviewStep:
        """The same review as :meth:`review` made in short steps, each a bounded part
        of the work (Terrace: one position's search, or one mistake's proof): given
        what the steps so far found (``()`` for the first), do the next one.  Called
        again with each answer's ``found`` until one says ``done``; that one's
        ``review`` equals :meth:`review`'s.  Plain values in and out, each step in
        whichever worker process is free."""
        ...

    def can_analyse(self, players: int) -> bool:
        """Whether the engine can name the best moves of a position of a game that
        ``players`` began (:meth:`analyse`; ``analyze N[#k]``, issue 42): a game
        without such an engine says False, and ``analyze`` refuses its boards."""
        ...

    def analyse(self, text: str, history: Sequence[str], nodes: int, count: int = 3) -> PositionAnalysis | None:
        """The ``count`` best moves of the side to move in the position string
        ``text``, each with its score and line, searching at most ``nodes`` nodes
        (``history``: the game's earlier positions, a return to which is a draw);
        None when the game is over there or the game has no such engine.  Strings
        in, a plain value out: it runs in a worker process, deterministic for its
        arguments."""
        ...

    @property
    def picture_width(self) -> int:
        """CSS pixels the board mail's picture is shown at (the PNG has twice as many)"""
        ...

    def help_values(self) -> dict[str, object]:
        """What the game's help template shows besides the server's facts (its ASCII
        start board …)."""
        ...

    def perft(self, pos: P, depth: int) -> int:
        """The number of move sequences of ``depth`` plies from ``pos`` (a rules check)."""
        ...

    def picture_png(self, pos: P, last_move: str = "") -> bytes:
        """The board mail's picture of ``pos`` (``last_move``: the ply that led to it,
        in canonical notation as recorded, marked on the board)."""
        ...

    def picture_svg(self, pos: P, last_move: str = "") -> str:
        """The same drawing as a standalone SVG document (the web's board pages)."""
        ...

    def picture_alt(self, pos: P) -> str:
        """The position in words (the picture's alt text, for screen readers)."""
        ...

    def army_colour(self, army: int) -> tuple[str, str]:
        """(name, #RRGGBB) of the colour army ``army``'s pieces have in the pictures."""
        ...

    def why_won(self, outcome: Outcome, players: int) -> str:
        """Why ``outcome``'s winner won, for "bob wins (WHY)" (``players`` at the start)."""
        ...

    def why_drawn(self, outcome: Outcome) -> str:
        """What ended the game in a draw, after the name of the side to move
        ("draw: bob WHY")."""
        ...

    def army_out(self, army: int) -> str:
        """What happened to an army that left the board during the game, after its
        player's name ("ann WHAT")."""
        ...


class SolitaireRules(Protocol[S]):
    """The rules of a one-player game played from a numbered deal."""

    @property
    def variants(self) -> Mapping[str, str]:
        """variant id → its name; the first is the default"""
        ...

    @property
    def max_score(self) -> int: ...

    @property
    def move_verbs(self) -> Mapping[str, tuple[str, ...]]:
        """extra command words that are moves, and the names of the words each takes
        (``base`` → ``("CARD",)``, ``flip`` → ``()``): ``patience base 5 U P 7h`` plays ``base 7h``"""
        ...

    @property
    def notation(self) -> str:
        """how moves are written, for error replies"""
        ...

    def variant(self, name: str) -> str:
        """The id of the variant called ``name`` (ValueError listing the variants)."""
        ...

    def deal_number(self, text: str) -> int:
        """``--deal=N`` → N (ValueError with the range)."""
        ...

    def random_deal(self, rng: random.Random) -> int: ...

    def deal_of_the_day(self, date: datetime.date, variant: str) -> int: ...

    def start(self, variant: str, deal: int) -> S: ...

    def replay(self, variant: str, deal: int, moves: Sequence[str]) -> S:
        """The state after ``moves`` (already checked when they were played)."""
        ...

    def split_moves(self, words: Sequence[str]) -> list[str]:
        """The words of ``move N U P …`` after the password → one text per move."""
        ...

    def play(self, state: S, text: str) -> tuple[S, str]:
        """Play ``text``: the new state and the move's canonical text;
        :class:`IllegalMoveError` (a ValueError) with a sentence when illegal."""
        ...

    def resign(self, state: S) -> S: ...

    def score(self, state: S) -> int: ...

    def ending(self, state: S) -> str | None:
        """None while the game goes on; else ``won``, ``lost``, ``stuck`` or ``resigned``."""
        ...

    def next_step(self, state: S) -> str:
        """One sentence: what the player can do now (or how the game ended)."""
        ...

    def table_text(self, state: S) -> str:
        """The whole table as ASCII, at most 72 columns."""
        ...

    def picture(self, state: S) -> bytes:
        """The table as a PNG for the HTML part of a board mail (drawn when the mail is
        sent, from the state :meth:`replay` gives)."""
        ...

    def picture_alt(self, state: S) -> str:
        """The table in words, short: the picture's alt text."""
        ...

    def example_move(self, state: S) -> str | None:
        """A move the rules allow now, for the reply line (cheap; None when none)."""
        ...

    def useful_moves(self, state: S) -> list[str]:
        """The moves that make progress now, the best first, as a player writes them
        (each one :meth:`play` accepts): the board mail's move links (issue 39).
        Empty when the game is over or no move makes progress."""
        ...

    def hint(self, state: S, seconds: float) -> str | None:
        """One good move's text, or None when the solver finds none in time."""
        ...

    def help_text(self, variant: str | None = None) -> str: ...


KEY_CODES = range(0x80)
"""the numbers a :attr:`GameType.key_code` may be (7 bits: the packed game type's
high bit says whether a reply key names a board version)"""


@dataclass(frozen=True)
class GameType:
    """One game the server runs: its command word, title and rules, and its two
    stable ids (:attr:`name` and :attr:`key_code`), declared in its table entry
    and never derived from where the entry stands."""

    name: str
    """the command word: ``terrace move 101 …``, and the game's id in every row
    that names a game (``games.game_type``, ratings, history, subscriptions, board
    counters, outbox picture specs, confirmation payloads): never renamed"""
    title: str
    """in subjects and headings: ``Terrace Board 101``"""
    family: Family
    rules: BoardRules[Any, Any] | SolitaireRules[Any]
    """:class:`BoardRules` for ``board``, :class:`SolitaireRules` for ``solitaire``
    (each adapter over its own position or state type: the table holds games of
    different types, so the entry's parameters are open; the adapter modules fix
    them, and mypy checks each adapter against the protocol here)"""
    help_topics: tuple[str, ...] = ()
    """``help TOPIC`` words that mean this game's help"""
    help_template: str = ""
    """the template of ``help GAME`` (board games; a solitaire's help is its rules' text)"""
    key_code: int = field(kw_only=True)
    """the game's number in its reply keys (:mod:`pbmserv_terrace.service.replykeys`),
    0–127, unique in the table: terrace 0, terrace6x6 1, patience 2 (what their
    keys carried when the number was the entry's position).  Never change or reuse
    one: every key mailed for the game carries it.  A new game takes an unused one."""
    robot_ratings: Mapping[int, float] = field(default_factory=dict, kw_only=True)
    """robot level → its Elo, pinned on the ratings list (issue 42): measured by
    ``bench/robot.py`` between the levels, the middle one at the scale's start; a
    robot's rating never moves, people are rated against it.  Empty: the robots'
    ratings move as anyone's."""

    def pinned_rating(self, robot_level: int | None) -> float | None:
        """The fixed rating of the robot of ``robot_level`` (None: not pinned, or not a robot)."""
        return self.robot_ratings.get(robot_level) if robot_level is not None else None

    @property
    def board_size(self) -> int:
        """8 for terrace, 6 for terrace6x6 (board games only)."""
        return self.board.size if self.family == "board" else 0

    @property
    def board(self) -> BoardRules[Any, Any]:
        assert self.family == "board", self.name
        return cast("BoardRules[Any, Any]", self.rules)

    @property
    def solitaire(self) -> SolitaireRules[Any]:
        assert self.family == "solitaire", self.name
        return cast("SolitaireRules[Any]", self.rules)
