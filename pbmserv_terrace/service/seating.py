"""Where a board stands: its position and who sits where (used by the clocks in
:mod:`.deadlines` and by the board mails in :mod:`.boards`)."""

from __future__ import annotations

from ..gametypes import board_rules
from ..gametypes.base import BoardPosition
from ..store import Game, Seat, User


def position(game: Game) -> BoardPosition:
    return board_rules(game.game_type).load(game.position)  # type: ignore[no-any-return]


def seat_of(game: Game, user: User) -> Seat | None:
    for seat in game.seats:
        if seat.user_id == user.id:
            return seat
    return None


def seat_by_army(game: Game, army: int) -> Seat:
    for seat in game.seats:
        if seat.seat == army:
            return seat
    raise LookupError(army)
