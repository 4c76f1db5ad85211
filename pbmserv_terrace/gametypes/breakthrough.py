"""Breakthrough behind :class:`.base.BoardRules`: the pure package
(:mod:`pbmserv_terrace.games.breakthrough`) on one board size.

The table has one entry, the standard 8x8 game: ``BreakthroughRules(8)`` plays
only the ``8x8`` setup and reads only 8x8 position strings.  The package plays
6x6 too; a second entry (``BreakthroughRules(6)``, its own name and key code)
would offer it with its own ratings, as Terrace6x6 does.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..games.breakthrough import (
    ARMY_NAMES,
    BLACK,
    MOVE_FORMS,
    WHITE,
    Move,
    Position,
    PositionStringError,
    accepts_draw,
    army_letters,
    board_png,
    board_svg,
    board_text,
    dump,
    example_move,
    format_move,
    legal_moves,
    load,
    looks_like_move,
    material,
    parse_move,
    perft,
    picture_alt,
    play,
    robot_move,
    setup_for,
    square_name,
    start,
)
from ..games.breakthrough.picture import FILL, SIZE
from ..games.breakthrough.robot import example_move as safe_example
from .analysis import PositionAnalysis
from .base import BoardRules, Outcome
from .review import GameReview, ReviewStep

COLOUR_NAMES = {WHITE: "white", BLACK: "black"}
"""the pawns' colours in words, for the board mail's list of players"""


@functools.lru_cache(maxsize=1024)
def _example_move(pos: Position) -> str:
    """(cached by position: a board mail asks for its board's example several times)"""
    move = safe_example(pos)
    return example_move(pos) if move is None else format_move(pos, move)


@dataclass(frozen=True)
class BreakthroughRules:
    """Breakthrough on a ``size`` x ``size`` board (8 or 6)."""

    size: int
    move_forms: str = MOVE_FORMS
    picture_width: int = SIZE // 2
    """the mail shows the PNG (drawn :data:`SIZE` pixels wide) at half its width"""

    @property
    def two_player_setups(self) -> tuple[str, ...]:
        return (f"{self.size}x{self.size}",)

    def setup_for(self, players: int, setup: str | None) -> str:
        chosen = setup_for(players, setup)
        if chosen not in self.two_player_setups:
            raise ValueError(f"this board is {self.size}x{self.size}; Breakthrough here has no setup -{chosen}.")
        return chosen

    def start(self, setup: str) -> Position:
        return start(setup)

    def load(self, text: str) -> Position:
        pos = load(text)  # (cached: equal strings share one position)
        if pos.n != self.size:
            raise PositionStringError(f"{text!r} is a {pos.n}x{pos.n} position, not {self.size}x{self.size}")
        return pos

    def dump(self, pos: Position) -> str:
        return dump(pos)

    def parse_move(self, pos: Position, text: str) -> Move:
        return parse_move(pos, text)

    def format_move(self, pos: Position, move: Move) -> str:
        return format_move(pos, move)

    def play(self, pos: Position, move: Move) -> Position:
        return play(pos, move)

    def looks_like_move(self, text: str) -> bool:
        return looks_like_move(text)

    def board_text(self, pos: Position) -> str:
        return board_text(pos)

    def army_letters(self, army: int) -> str:
        """``W`` for White's pawns, ``B`` for Black's."""
        return army_letters(army)

    def material(self, pos: Position) -> int:
        """The pawns on the board (it never grows)."""
        return material(pos)

    def example_move(self, pos: Position) -> str:
        """A legal move of the side to move (``d2-d3`` at the start), one that does
        not lose at once when another move does not."""
        return _example_move(pos)

    def move_choices(self, pos: Position) -> list[tuple[str, list[tuple[str, str, bool]]]]:
        """The legal moves by pawn (``("W d4", [("e5", "d4-e5", True), …])``), pawns by
        square from a1; a move's text is FROM-TO, a capture's too (:func:`parse_move`
        reads ``d4-e5`` as the capture ``d4xe5``; a reply's first line ``d4xe5`` is
        not read as a move by :mod:`pbmserv_terrace.commands.reply`, ``d4-e5`` is)."""
        n = pos.n
        groups: dict[int, list[tuple[str, str, bool]]] = {}
        for move in legal_moves(pos):
            frm, to = square_name(move.frm, n), square_name(move.to, n)
            groups.setdefault(move.frm, []).append((to, f"{frm}-{to}", pos.is_capture(move)))
        letter = army_letters(pos.to_move)
        return [(f"{letter} {square_name(sq, pos.n)}", sorted(groups[sq])) for sq in sorted(groups)]

    def robot_move(self, text: str, level: int, ply: int, history: Sequence[str] = ()) -> tuple[str, str]:
        """The robot's move in the position ``text`` and its comment, deterministic
        for its arguments (the ply seeds the choice among equal moves; Breakthrough
        positions never repeat, so the history does not matter)."""
        self.load(text)  # (a position of another board size is refused here)
        return robot_move(text, level, ply)

    def robot_accepts_draw(self, pos: Position, army: int, level: int, ply: int) -> bool:
        """Only when the robot's own search says it stands clearly worse."""
        return accepts_draw(pos, army, level, ply)

    def can_review(self, players: int) -> bool:
        return False  # no reviewing engine (issue 42 reviews Terrace)

    def review(self, start: str, moves: Sequence[str], nodes: int) -> GameReview | None:
        return None

    def review_step(self, start: str, moves: Sequence[str], nodes: int, found: tuple[Any, ...]) -> ReviewStep:
        return ReviewStep((), True, None)

    def can_analyse(self, players: int) -> bool:
        return False  # no analysing engine (issue 42 analyses Terrace)

    def analyse(self, text: str, history: Sequence[str], nodes: int, count: int = 3) -> PositionAnalysis | None:
        return None

    def help_values(self) -> dict[str, object]:
        return {"n": self.size, "board": board_text(self.start(self.two_player_setups[0]))}

    def perft(self, pos: Position, depth: int) -> int:
        return perft(pos, depth)

    def picture_png(self, pos: Position, last_move: str = "") -> bytes:
        return board_png(pos, last_move or None)

    def picture_svg(self, pos: Position, last_move: str = "") -> str:
        return board_svg(pos, last_move or None)

    def picture_alt(self, pos: Position) -> str:
        return picture_alt(pos)

    def army_colour(self, army: int) -> tuple[str, str]:
        return COLOUR_NAMES[army], FILL[army]

    def why_won(self, outcome: Outcome, players: int) -> str:
        if "reached" in outcome.reason:
            return "broke through to the far row"
        if "no pawns" in outcome.reason:
            return "captured every enemy pawn"
        return "left the opponent without a move"

    def why_drawn(self, outcome: Outcome) -> str:
        return "has no legal move"  # (never: Breakthrough has no draws by rule)

    def army_out(self, army: int) -> str:
        return f" lost every {ARMY_NAMES[army]} pawn."


if TYPE_CHECKING:  # mypy checks the adapter against the protocol, over the game's own types
    CHECKED: BoardRules[Position, Move] = BreakthroughRules(8)
