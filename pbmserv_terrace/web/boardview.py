"""What a board page shows, computed from store rows with the game's rules only
(no I/O): every game fact comes from its :class:`~..gametypes.BoardRules` (replaying
its moves, its ASCII board, its picture, its armies' letters and colours).

The replay and the status block are the mail's own (:mod:`..gametypes.view`, one
board view for both): this module only hands it the archive's rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import Any

from ..gametypes import board_rules, game_title
from ..gametypes import view as board_view
from ..render import move_table
from ..store.archive import GameRow, ListedGame, MoveRow, SeatRow


@dataclass
class Frame:
    """The position after some ply, and how it got there (for the picture)."""

    ply: int
    pos: Any
    """the game's position (what its rules' ``load`` makes)"""
    last_move: str = ""
    """the ply that led here in canonical notation ('' for none, a resignation, a forfeit)"""
    move_text: str = ""
    seat: int | None = None
    played_at: datetime | None = None


def frames(game: GameRow, moves: list[MoveRow]) -> Iterator[Frame]:
    """The start and the position after each ply, in order (one pass over the moves)."""
    steps = board_view.replay(game.game_type, game.start_position, ((m.ply, m.seat, m.move) for m in moves))
    yield Frame(0, next(steps).pos)
    for record, step in zip(moves, steps, strict=True):
        yield Frame(step.ply, step.pos, step.last_move, record.move + (" (Auto)" if record.auto else ""), record.seat,
                    record.played_at)  # fmt: skip


def replay(game: GameRow, moves: list[MoveRow], upto: int) -> Frame:
    """The position after the first ``upto`` plies, with the last move and capture."""
    last = Frame(0, board_rules(game.game_type).load(game.start_position))
    for frame in frames(game, [m for m in moves if m.ply <= upto]):
        last = frame
    return last


def facts(game: GameRow) -> board_view.BoardFacts:
    """The archive's row as the shared board view reads it."""
    return board_view.BoardFacts(
        game.game_type,
        game.board_number,
        game.status,
        game.result or "",
        game.ply,
        tuple(board_view.SeatFacts(s.userid, s.seat, s.active, s.resign_pending) for s in game.seats),
        game.winner_seat,
        tuple(game.draw_votes),
        tuple(game.undo_votes),
    )


@dataclass
class PlayerLine:
    userid: str
    seat: int
    letters: str
    colour: str
    fill: str
    rating: float | None
    state: str


def players(game: GameRow, ratings: dict[str, float]) -> list[PlayerLine]:
    out = []
    rules = board_rules(game.game_type)
    board = facts(game)
    for s in board.seats:
        state = board_view.player_state(board, s) or ("playing" if s.active and game.status == "active" else "")
        colour, fill = rules.army_colour(s.seat)
        out.append(PlayerLine(s.userid, s.seat, rules.army_letters(s.seat), colour, fill, ratings.get(s.userid), state))
    return out


def seat_for_army(game: GameRow | ListedGame, army: int) -> SeatRow | None:
    return next((s for s in game.seats if s.seat == army), None)


def status_lines(game: GameRow, frame: Frame) -> list[str]:
    """Whose turn, the result, announcements and votes, as the mail's status block says them."""
    return board_view.status_lines(facts(game), frame.pos, frame.ply)


def legal_moves(game: GameRow, frame: Frame) -> dict[str, dict[str, Any]]:
    """Where each piece of the side to move can go in ``frame``'s position, for the
    board page's tap-a-piece marks (issue 39): ``{from square: {"piece": "C d2", "to":
    [squares], "takes": [squares of captures]}}``, from the rules' ``move_choices``
    (each legal move once).  Only for the position shown; empty when nobody is to move
    there: a finished (or removed) board at its last ply, or a position that is over."""
    if frame.ply >= game.ply and game.status != "active":
        return {}
    out: dict[str, dict[str, Any]] = {}
    for piece, targets in board_rules(game.game_type).move_choices(frame.pos):
        square = piece.rsplit(" ", 1)[-1]  # (the piece is written letter, space, square: "C d2")
        out[square] = {
            "piece": piece,
            "to": [to for to, _text, capture in targets if not capture],
            "takes": [to for to, _text, capture in targets if capture],
        }
    return out


@lru_cache(maxsize=8192)
def army_to_move(position: str, game_type: str) -> int:
    """The army to move in a stored position.  Cached: a list page asks it for every
    active board it shows, and a position stays until its board's next move."""
    return int(board_rules(game_type).load(position).to_move)


def to_move(game: GameRow | ListedGame) -> str:
    """The userid to move, or the game's state when it is over."""
    if game.status != "active":
        return "finished" if game.status != "removed" else "removed"
    seat = seat_for_army(game, army_to_move(game.position, game.game_type))
    return seat.userid if seat else "?"


@dataclass
class Cell:
    ply: int
    text: str


@dataclass
class Round:
    number: int
    cells: list[Cell | None] = field(default_factory=list)


def move_rounds(game: GameRow, moves: list[MoveRow]) -> list[Round]:
    """The move table of the mail (render.move_table decides the rows), with each
    cell's ply number kept so the page can link it."""
    names = [s.userid for s in game.seats]
    rows, _omitted, _width = move_table(names, [(m.seat, str(i)) for i, m in enumerate(moves)])
    out = []
    for row in rows:
        cells: list[Cell | None] = []
        for text in row.cells:
            if text:
                m = moves[int(text)]
                cells.append(Cell(m.ply, m.move + (" (Auto)" if m.auto else "")))
            else:
                cells.append(None)
        out.append(Round(row.number, cells))
    return out


@dataclass
class Comment:
    author: str
    text: str
    hidden: bool


def latest_comment(game: GameRow) -> Comment | None:
    """The comment kept with the game (``"U writes:\\n…"``), hidden when its author
    chose ``public_comments`` off.  A comment whose author cannot be told is hidden too."""
    if not game.comment:
        return None
    head, _, text = game.comment.partition("\n")
    author = head.removesuffix(" writes:") if head.endswith(" writes:") else ""
    seat = next((s for s in game.seats if s.userid == author), None)
    if seat is None or not seat.public_comments:
        return Comment(author or "a player", "", True)
    return Comment(author, text, False)


def text_record(game: GameRow, moves: list[MoveRow], final: Any) -> str:
    """The game as plain text: header lines, the moves in the server's notation, the
    final position as its stored string."""
    rules = board_rules(game.game_type)
    lines = [
        f"Game: {game_title(game.game_type)} board {game.board_number}",
        f"Players: {', '.join(f'{s.userid} (army {s.seat}, {rules.army_letters(s.seat)})' for s in game.seats)}",
        f"Setup: {game.variant}{'' if game.rated else ', unrated'}",
        f"Start: {game.start_position}",
        f"Result: {game.result or ('in progress' if game.status == 'active' else game.status)}",
        f"Date: {game.created_at:%Y-%m-%d %H:%M} UTC",
    ]
    if game.finished_at:
        lines.append(f"Finished: {game.finished_at:%Y-%m-%d %H:%M} UTC")
    lines += [f"Plies: {game.ply}", ""]
    names = {s.seat: s.userid for s in game.seats}
    lines += [f"{m.ply}. {names.get(m.seat, m.seat)}: {m.move}{' (Auto)' if m.auto else ''}" for m in moves]
    lines += ["", f"Final position: {rules.dump(final)}", "", rules.board_text(final), ""]
    return "\n".join(lines)
