"""One board view for the mail and the web: replaying a board game's plies and
the status block (whose turn, how it ended, announcements, votes), worded once.

The service (board mails) and the web archive (board pages) hold different rows
(the service its ORM objects, the web its archive rows), so both hand this module
the same plain facts: a :class:`BoardFacts` and the position to describe.  The
mail adds only what is the mail's own business (how to answer a vote by mail);
the web only its links.

Conventions (issue 38): a ply number always names one ply of the move list —
"ply 6" is the sixth ply played.  The status of a board still being played says
which ply is to be played next ("It is ann's turn …, ply 6."); a position of the
past says which ply it follows ("Position after ply 8 of 18; ben to move.").
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from . import board_rules
from .base import BoardPosition

NOT_MOVES = ("Resign", "Forfeit")
"""plies that take an army off the board instead of moving a piece"""


@dataclass(frozen=True)
class SeatFacts:
    """One seat of a board as the views need it."""

    userid: str
    seat: int
    active: bool
    resign_pending: bool = False


@dataclass(frozen=True)
class BoardFacts:
    """What the status block of a board says, whichever rows it was read from."""

    game_type: str
    board_number: int
    status: str
    """``active``, ``won``, ``drawn`` or ``removed``"""
    result: str
    ply: int
    """plies played on the board"""
    seats: tuple[SeatFacts, ...]
    winner_seat: int | None = None
    draw_votes: tuple[int, ...] = ()
    undo_votes: tuple[int, ...] = ()

    def seat(self, army: int) -> SeatFacts | None:
        return next((s for s in self.seats if s.seat == army), None)

    def waiting_for(self, votes: Sequence[int]) -> list[SeatFacts]:
        """The players still in the game who have not voted."""
        return [s for s in self.seats if s.active and s.seat not in votes]


@dataclass(frozen=True)
class Replayed:
    """The position after one ply and the ply that led there."""

    ply: int
    pos: Any
    """the game's position (what its rules' ``load`` makes)"""
    last_move: str = ""
    """the ply in canonical notation ('' at the start and after a resignation or forfeit)"""


def replay(game_type: str, start: str, plies: Iterable[tuple[int, int, str]]) -> Iterator[Replayed]:
    """The start position of a board, then the position after each of ``plies``
    ((ply, seat, move text as recorded)), in order: one pass over the moves."""
    rules = board_rules(game_type)
    pos = rules.load(start)
    yield Replayed(0, pos)
    for ply, seat, move in plies:
        last = ""
        if move in NOT_MOVES:
            pos = pos.without_army(seat)
        else:
            parsed = rules.parse_move(pos, move)
            last = rules.format_move(pos, parsed)
            pos = rules.play(pos, parsed)
        yield Replayed(ply, pos, last)


def position_after(game_type: str, start: str, plies: Iterable[tuple[int, int, str]]) -> Any:
    """The position after all of ``plies``."""
    last: Any = None
    for step in replay(game_type, start, plies):
        last = step.pos
    return last


def named(text: str, board: BoardFacts) -> str:
    """A rules' announcement with its armies named by their players."""
    for s in board.seats:
        text = text.replace(f"Army {s.seat}'s T", f"{s.userid}'s T (army {s.seat})")
    return text


def status_lines(board: BoardFacts, pos: BoardPosition, shown: int | None = None) -> list[str]:
    """The status block of ``board`` showing ``pos``: ``shown`` is the number of
    plies played in ``pos`` (None: the board as it is; fewer: a position of the
    past; more: a preview of a move not yet played)."""
    played = board.ply if shown is None else shown
    if played < board.ply:
        mover = board.seat(pos.to_move)
        return [f"Position after ply {played} of {board.ply}" + (f"; {mover.userid} to move." if mover else ".")]
    if board.status == "removed":
        return [f"This board was removed: {board.result}."]
    if board.status != "active":
        return [f"Game over: {board.result}."]
    lines = []
    mover = board.seat(pos.to_move)
    if mover is not None:
        letters = board_rules(board.game_type).army_letters(mover.seat)
        lines.append(f"It is {mover.userid}'s turn (army {mover.seat}, {letters}), ply {played + 1}.")
    lines += [named(a, board) for a in pos.announcements()]
    for kind, votes in (
        ("A draw has been proposed", board.draw_votes),
        ("Undoing the last ply has been requested", board.undo_votes),
    ):
        if votes:
            lines.append(f"{kind}; still waiting for: {', '.join(s.userid for s in board.waiting_for(votes))}.")
    lines += [f"{s.userid} will resign on their turn." for s in board.seats if s.resign_pending]
    return lines


def player_state(board: BoardFacts, seat: SeatFacts) -> str:
    """What the players list says after a player's name: ``winner``; ``out`` for an
    army that left a game that goes on (or a game of three or four, where it tells
    who lasted); nothing in a finished two-player game (the status says how it
    ended) or for a player still playing."""
    if board.status == "won" and board.winner_seat == seat.seat:
        return "winner"
    if not seat.active and (board.status == "active" or len(board.seats) > 2):
        return "out"
    return ""
