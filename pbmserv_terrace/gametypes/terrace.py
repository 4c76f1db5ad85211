"""Terrace and Terrace6x6 behind :class:`.base.BoardRules`: the rules core
(:mod:`pbmserv_terrace.games.terrace`) on an 8x8 or a 6x6 board."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..games.terrace import (
    MOVE_FORMS,
    Move,
    Position,
    format_move,
    format_tpn,
    geometry,
    looks_like_move,
    parse_move,
    parse_tpn,
    render_board,
    start_position,
    variant_for_players,
)
from ..games.terrace.engine import accepts_draw, choose_move, describe, position_key
from ..games.terrace.engine.analyse import analyse, mate_in
from ..games.terrace.engine.review import CLIP, Review, review_game, review_next
from ..games.terrace.example import example_move
from ..games.terrace.perft import perft
from ..games.terrace.picture import ARMY_COLOUR_NAME, ARMY_FILL, WIDTH, mail_png, page_svg, picture_alt
from ..games.terrace.pieces import KINDS, piece_text
from .analysis import AnalysedMove, PositionAnalysis
from .base import BoardRules, Outcome
from .review import GameReview, ReviewMistake, ReviewStep

TWO_PLAYER_SETUPS = ("long", "medium", "short", "master")


@functools.lru_cache(maxsize=4096)
def _load(text: str, size: int) -> Position:
    return parse_tpn(text, size)


@functools.lru_cache(maxsize=1024)
def _example_move(pos: Position) -> str:
    """(cached by position object: a board mail asks for its board's example
    several times, and positions are shared through :func:`_load`)"""
    move = example_move(pos)
    if move is None:
        return "d2-e3"
    return f"{pos.geo.names[move.frm]}-{pos.geo.names[move.to]}"


@functools.lru_cache(maxsize=256)
def _move_choices(pos: Position) -> list[tuple[str, list[tuple[str, str, bool]]]]:
    """(cached by position object: each player's copy of a board mail asks once)"""
    if pos.is_over():
        return []
    names, board = pos.geo.names, pos.board
    groups: dict[int, list[tuple[str, str, bool]]] = {}
    for frm_sq, to_sq in pos.legal_moves():
        frm, to = names[frm_sq], names[to_sq]
        groups.setdefault(frm_sq, []).append((to, f"{frm}-{to}", bool(board[to_sq])))
    order = sorted(groups, key=lambda sq: (board[sq] & 7, names[sq]))
    return [(f"{KINDS[board[sq] & 7]} {names[sq]}", sorted(groups[sq])) for sq in order]


def height_map(n: int) -> str:
    """The squares' heights as a small table, ranks from the top (RULES.md §1), for
    the help in mails and on the web."""
    geo = geometry(n)
    rows = [f"  {y + 1} | " + " ".join(str(geo.height[y * n + x]) for x in range(n)) for y in reversed(range(n))]
    return "\n".join([*rows, "      " + " ".join("abcdefgh"[:n])])


@dataclass(frozen=True)
class TerraceRules:
    """The Terrace rules on a ``size`` x ``size`` board."""

    size: int
    move_forms: str = MOVE_FORMS
    two_player_setups: tuple[str, ...] = TWO_PLAYER_SETUPS
    picture_width: int = WIDTH

    def setup_for(self, players: int, setup: str | None) -> str:
        return variant_for_players(players, setup)

    def start(self, setup: str) -> Position:
        return start_position(setup, self.size)

    def load(self, text: str) -> Position:
        # positions are immutable: a board mail loads its board's several times
        # (body, reply hints, picture), and the next mail starts where it ended
        return _load(text, self.size)

    def dump(self, pos: Position) -> str:
        return format_tpn(pos)

    def parse_move(self, pos: Position, text: str) -> Move:
        return parse_move(pos, text)

    def format_move(self, pos: Position, move: Move) -> str:
        return format_move(pos, move)

    def play(self, pos: Position, move: Move) -> Position:
        return pos.play(move)

    def looks_like_move(self, text: str) -> bool:
        return looks_like_move(text)

    def board_text(self, pos: Position) -> str:
        return render_board(pos)

    def army_letters(self, army: int) -> str:
        """How army ``army``'s pieces are written (``T`` …, ``t`` …, primes for 3 and 4)."""
        return piece_text(army << 3)

    def material(self, pos: Position) -> int:
        """The pieces on the board: a position with fewer can never repeat an earlier one."""
        return pos.occ.bit_count()

    def example_move(self, pos: Position) -> str:
        """A move that is legal for the army to move, for hints: one that brings a
        piece nearest its goal corner (``b2-c3`` at the long start) and does not
        lose at once when another move does not (:mod:`..games.terrace.example`),
        or ``d2-e3`` when the army has no move."""
        return _example_move(pos)

    def move_choices(self, pos: Position) -> list[tuple[str, list[tuple[str, str, bool]]]]:
        """The legal moves by piece, the T first, then A, B, C, D, each kind by square
        (``("C d2", [("e3", "d2-e3", False), …])``); a move's text is its short form
        ``d2-e3``, which names it alone (one piece stands on a square)."""
        return _move_choices(pos)

    def robot_move(self, text: str, level: int, ply: int, history: Sequence[str] = ()) -> tuple[str, str]:
        """The robot's move in the position ``text`` and its one-line comment
        (deterministic for its arguments)."""
        pos = self.load(text)
        result = choose_move(pos, level=level, ply=ply, history=[self.load(h) for h in history])
        return format_move(pos, result.move), describe(result)

    def help_values(self) -> dict[str, object]:
        return {"n": self.size, "board": render_board(self.start(self.two_player_setups[0])), "heights": height_map(self.size)}

    def perft(self, pos: Position, depth: int) -> int:
        return perft(pos, depth)

    def picture_png(self, pos: Position, last_move: str = "") -> bytes:
        return mail_png(pos, last_move)

    def picture_svg(self, pos: Position, last_move: str = "") -> str:
        return page_svg(pos, last_move)

    def picture_alt(self, pos: Position) -> str:
        return picture_alt(pos)

    def army_colour(self, army: int) -> tuple[str, str]:
        return ARMY_COLOUR_NAME[army], ARMY_FILL[army]

    def why_won(self, outcome: Outcome, players: int) -> str:
        if "goal" in outcome.reason:
            return "reached the goal with the T"
        return "captured the T" if players == 2 else "is the last army on the board"

    def why_drawn(self, outcome: Outcome) -> str:
        return "has no legal move"

    def army_out(self, army: int) -> str:
        return f"'s T was captured: army {army} leaves the board."

    def robot_accepts_draw(self, pos: Position, army: int, level: int, ply: int) -> bool:
        """Whether the robot playing ``army`` accepts a draw offer: only when its own
        search says it stands worse."""
        return accepts_draw(pos, army, level=level, ply=ply)

    def can_review(self, players: int) -> bool:
        return players == 2  # the engine's review is for two armies

    def review(self, start: str, moves: Sequence[str], nodes: int) -> GameReview | None:
        """The engine's review (:func:`..games.terrace.engine.review.review_game`)
        with its moves written as the players write them."""
        pos = self.load(start)
        if len(pos.armies()) != 2:
            return None
        played: list[Move] = []
        before: list[Position] = []
        for text in moves:
            move = parse_move(pos, text)
            before.append(pos)
            played.append(move)
            pos = pos.play(move)
        return self._game_review(review_game(self.load(start), played, nodes), [*before, pos], nodes)

    def review_step(self, start: str, moves: Sequence[str], nodes: int, found: tuple[Any, ...]) -> ReviewStep:
        """One step of :meth:`review`: while positions are unscored, the next one's
        search (``found`` holds each scored position's (score, best move encoded));
        then, while a chosen mistake has no reason looked for, its proof (``found``
        then holds those reasons too); then the review: the engine's own steps
        (:func:`..games.terrace.engine.review.review_next`, which
        :func:`..games.terrace.engine.review.review_game` takes in one go)."""
        pos = self.load(start)
        if len(pos.armies()) != 2:
            return ReviewStep((), True, None)
        played: list[Move] = []
        positions = [pos]
        for text in moves:
            move = parse_move(pos, text)
            played.append(move)
            pos = pos.play(move)
            positions.append(pos)
        found, review, left = review_next(positions, played, nodes, found)
        if review is None:
            return ReviewStep(found, False, None, left)
        return ReviewStep((), True, self._game_review(review, positions, nodes))

    def _game_review(self, result: Review, positions: Sequence[Position], nodes: int) -> GameReview:
        """The engine's review with its moves written as the players write them."""
        mistakes = tuple(
            ReviewMistake(m.ply, m.army, format_move(positions[m.ply - 1], m.played),
                          format_move(positions[m.ply - 1], m.better), m.swing, m.reason)
            for army in sorted(result.mistakes)
            for m in result.mistakes[army]
        )  # fmt: skip
        return GameReview(result.evaluations, mistakes, result.turning_point, CLIP, nodes)

    def can_analyse(self, players: int) -> bool:
        return True  # two armies by negamax, three or four by the paranoid search

    def analyse(self, text: str, history: Sequence[str], nodes: int, count: int = 3) -> PositionAnalysis | None:
        """The engine's best moves (:func:`..games.terrace.engine.analyse.analyse`),
        each line written as the players write moves."""
        pos = self.load(text)
        if pos.is_over() or not pos.legal_moves():
            return None
        seen = frozenset(position_key(self.load(h)) for h in history)
        result = analyse(pos, nodes=nodes, count=count, seen=seen)
        found = []
        for line in result.lines:
            texts, at = [], pos
            for move in line.pv:
                texts.append(format_move(at, move))
                at = at.play(move)
            found.append(AnalysedMove(texts[0], line.score, tuple(texts), mate_in(line.score)))
        return PositionAnalysis(tuple(found), result.depth, result.nodes, result.moves)


if TYPE_CHECKING:  # mypy checks the adapter against the protocol, over the game's own types
    CHECKED: BoardRules[Position, Move] = TerraceRules(8)
