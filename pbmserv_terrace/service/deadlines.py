"""When a board's timers fall due (COMMANDS.md §4, issue 40 item 5): the forfeit
(``forfeittime`` days without a move, or ``totaltime`` used up) and the reminder
to the player to move — after ``nagtime`` days, as pbmserv, or, for a player who
chose ``change remind U P HOURS``, once less than HOURS are left before the
forfeit (``change remind U P off``: none).  One reminder per board and turn
(``Seat.nagged_at``, cleared by every ply); none while a queued move of the
player's is waiting to answer for them."""

from __future__ import annotations

from datetime import datetime, timedelta

from ..store import Game, Seat
from .boards import position, seat_by_army
from .context import Ctx


def mover(game: Game) -> Seat:
    """The seat to move on an active board."""
    return seat_by_army(game, position(game).to_move)


def forfeit_at(ctx: Ctx, game: Game, seat: Seat | None = None) -> datetime:
    """When the player to move (``seat``) forfeits without a move."""
    seat = seat or mover(game)
    forfeit = float(game.options.get("forfeittime", ctx.config.timers.forfeittime))
    at = game.last_move_at + timedelta(days=forfeit)
    total = game.options.get("totaltime")
    if total:
        left = float(total) * 86400 - seat.clock_seconds
        at = min(at, game.last_move_at + timedelta(seconds=max(0.0, left)))
    return at


def remind_at(ctx: Ctx, game: Game, seat: Seat | None = None) -> datetime | None:
    """When the player to move gets their reminder (None: none is due this turn:
    sent already, turned off, or a queued move answers for them)."""
    seat = seat or mover(game)
    if seat.nagged_at is not None or seat.queued_moves:
        return None
    hours = seat.user.remind_hours
    if hours is None:
        return game.last_move_at + timedelta(days=float(game.options.get("nagtime", ctx.config.timers.nagtime)))
    if hours <= 0:
        return None
    return max(game.last_move_at, forfeit_at(ctx, game, seat) - timedelta(hours=hours))


def next_deadline(ctx: Ctx, game: Game) -> datetime | None:
    """The next time the scheduler must look at this board (None: never again)."""
    if game.status != "active":
        return None
    seat = mover(game)
    due = forfeit_at(ctx, game, seat)
    nag = remind_at(ctx, game, seat)
    return min(due, nag) if nag is not None else due
