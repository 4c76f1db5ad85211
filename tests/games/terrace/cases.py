"""Positions the picture tests and the golden-image script share.

Mid-game positions are reached by playing legal moves chosen by a seeded random
generator, so they are real positions and the same on every run.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field

from pbmserv_terrace.games.terrace import Move, Position, format_move, render_board, start_position
from pbmserv_terrace.games.terrace.pieces import KIND_T, piece_text
from pbmserv_terrace.render import CommentView, GameView, MoveRow, PlayerView

SIZES = (8, 6)
SETUPS = ("long", "medium", "short", "master", "3p", "4p")


@dataclass
class Case:
    """A picture to draw: the position after ``last_move`` plus its marks."""

    pos: Position
    last_move: Move | None = None
    captured: int | None = None
    threatened: list[int] = field(default_factory=list)
    history: list[str] = field(default_factory=list)


def play_out(variant: str, n: int, plies: int, seed: int) -> Case:
    """Play ``plies`` random legal moves that neither end the game nor take a T;
    prefers a capture for the last move when one is on offer (to show the mark)."""
    rng = random.Random(seed)
    pos = start_position(variant, n)
    case = Case(pos)
    for ply in range(plies):
        moves = [m for m in pos.legal_moves() if pos.board[m.to] & 7 != KIND_T or not pos.board[m.to]]
        moves = [m for m in moves if not pos.play(m).is_over()]
        if not moves:
            break
        captures = [m for m in moves if pos.board[m.to]]
        move = rng.choice(captures if captures and ply == plies - 1 else moves)
        case.history.append(format_move(pos, move))
        captured = move.to if pos.board[move.to] else None
        pos = pos.play(move)
        case = Case(pos, move, captured, [], case.history)
    case.threatened = [sq for a in pos.threatened_armies() if (sq := pos.t_square(a)) is not None]
    return case


def random_game(variant: str, n: int, plies: int, rng: random.Random) -> Iterator[tuple[Position, Move, int | None]]:
    """A game of random legal moves that do not end it, as its mails show it: after
    each move the position, the move and the square of its capture (None: none)."""
    pos = start_position(variant, n)
    for _ in range(plies):
        moves = [m for m in pos.legal_moves() if not pos.play(m).is_over()]
        if not moves:
            return
        move = rng.choice(moves)
        captured = move.to if pos.board[move.to] else None
        pos = pos.play(move)
        yield pos, move, captured


def examples() -> dict[str, Case]:
    """The three example renders kept in tests/data/pictures for people to look at."""
    return {
        "example-8x8-long-midgame": play_out("long", 8, 24, seed=7),
        "example-4p": play_out("4p", 8, 20, seed=0),
        "example-6x6": play_out("long", 6, 14, seed=32),
    }


def golden_cases() -> dict[str, Case]:
    """One golden picture per setup and board size (no marks), plus the examples
    (which carry last-move, capture and Terrace! marks)."""
    cases = {f"golden-{n}x{n}-{v}": Case(start_position(v, n)) for n in SIZES for v in SETUPS}
    cases.update(examples())
    return cases


def game_view(case: Case, names: list[str] | None = None) -> GameView:
    """A GameView like the mail service builds, for the HTML tests."""
    pos = case.pos
    armies = list(range(1, max(pos.armies()) + 1))
    names = names or [f"player{a}" for a in armies]
    players = [PlayerView(name, a, piece_text(a << 3 | KIND_T)) for name, a in zip(names, armies, strict=False)]
    width = len(players)
    rows = [MoveRow(i // width + 1, case.history[i : i + width]) for i in range(0, len(case.history), width)]
    for row in rows:
        row.cells += [""] * (width - len(row.cells))
    return GameView(
        title="Terrace" if pos.n == 8 else "Terrace6x6",
        board_number=42,
        variant="long",
        players=players,
        status_lines=[f"It is {names[pos.to_move - 1]}'s turn."],
        move_header=names,
        move_rows=rows,
        board=render_board(pos),
        subscribers=["watcher"],
    )


HOSTILE = [
    CommentView("mallory", "<script>alert('x')</script>"),
    CommentView("<b>eve</b>", '<img src=x onerror="alert(1)"> & {{ 7*7 }}'),
]
