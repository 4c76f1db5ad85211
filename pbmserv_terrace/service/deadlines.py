"""The clocks of a board and when its timers fall due (COMMANDS.md §4; issue 40
items 3-5).

The clock of the player to move runs from ``Game.clock_from`` (the last ply, or
the end of that player's vacation); what ran before that in the same turn is in
``Seat.turn_seconds`` (a vacation that began mid-turn stopped it there).  The
limits are pbmserv's — ``forfeittime`` days without a move, ``totaltime`` days of
thinking in all — or, on a ``--clock`` board, the seat's time bank
(``Seat.bank_seconds``), which gains the increment after each move.  A player on
vacation has every clock stopped; with ``--weekends`` the clock stops on
Saturdays and Sundays in the player's time zone (their digest's, else UTC).

The reminder to the player to move comes after ``nagtime`` days (pbmserv), or,
for a player who chose ``change remind U P HOURS``, once less than HOURS are left
(``change remind U P off``: none); one per board and turn (``Seat.nagged_at``,
cleared by every ply); none while a queued move of the player's waits to answer."""

from __future__ import annotations

from datetime import datetime, timedelta

from .. import clocks
from ..clocks import Clock, clock_of, duration, runs_out_at
from ..store import Game, Seat, User
from .context import Ctx
from .seating import position, seat_by_army

DAY = 86400.0


def mover(game: Game) -> Seat:
    """The seat to move on an active board."""
    return seat_by_army(game, position(game).to_move)


def zone_name(user: User) -> str | None:
    """The player's time zone (their digest's), None = UTC."""
    return str(user.digest.get("zone")) if user.digest and user.digest.get("zone") else None


# ------------------------------------------------------------------ vacation
def vacation_left(ctx: Ctx, user: User, at: datetime | None = None) -> float:
    """Seconds of vacation ``user`` has left in the calendar year (of ``at``), the
    running vacation counted up to ``at``."""
    at = at or ctx.now
    allowance = ctx.config.timers.vacation_days * DAY
    used = user.vacation_used_seconds if user.vacation_year == at.year else 0.0
    end = vacation_end(ctx, user)
    if user.vacation_since is not None and end is not None:
        used += max(0.0, (min(at, end) - user.vacation_since).total_seconds())
    return max(0.0, allowance - used)


def vacation_end(ctx: Ctx, user: User) -> datetime | None:
    """When the running vacation ends by itself (its last day, or the year's
    allowance used up); None when the player is not on vacation."""
    return clocks.vacation_end(user.vacation_since, user.vacation_until, user.vacation_used_seconds, user.vacation_year,
                               ctx.config.timers.vacation_days)  # fmt: skip


def away(ctx: Ctx, user: User) -> bool:
    """``user`` is on vacation now: every clock of theirs is stopped."""
    end = vacation_end(ctx, user)
    return end is not None and ctx.now < end


# -------------------------------------------------------------------- clocks
def clock_start(game: Game) -> datetime:
    return game.clock_from or game.last_move_at


def turn_of(ctx: Ctx, game: Game, seat: Seat) -> clocks.Turn:
    """The state of the clock of ``seat`` (to move)."""
    user = seat.user
    return clocks.Turn(clock_start(game), seat.turn_seconds, seat.clock_seconds, seat.bank_seconds,
                       user.vacation_since, vacation_end(ctx, user), zone_name(user))  # fmt: skip


def running(ctx: Ctx, game: Game, seat: Seat) -> float:
    """Seconds the clock of ``seat`` (to move) has run since :func:`clock_start`."""
    return clocks.ran(turn_of(ctx, game, seat), ctx.now, weekends=bool(game.options.get("weekends")))


def bank_of(game: Game, seat: Seat) -> tuple[Clock, float] | None:
    """The board's clock and the seat's bank at the start of its running clock."""
    clock = clock_of(game.options)
    if clock is None:
        return None
    return clock, clock.bank if seat.bank_seconds is None else seat.bank_seconds


def seconds_left(ctx: Ctx, game: Game, seat: Seat) -> float:
    """Seconds before ``seat`` (to move) runs out of time: its bank, or pbmserv's
    forfeit and total time (negative: it has run out)."""
    return clocks.left(turn_of(ctx, game, seat), ctx.now, game.options, ctx.config.timers.forfeittime)


def charge(ctx: Ctx, game: Game, seat: Seat) -> float:
    """Book the time the clock of ``seat`` (to move) ran up to now into the seat
    (its turn, its total, its bank) and restart the clock from now; the seconds."""
    ran = running(ctx, game, seat)
    seat.turn_seconds += ran
    seat.clock_seconds += ran
    banked = bank_of(game, seat)
    if banked is not None:
        seat.bank_seconds = banked[1] - ran
    game.clock_from = ctx.now
    return ran


def after_move(ctx: Ctx, game: Game, seat: Seat) -> None:
    """``seat`` has just played a ply (the position not yet updated): its time
    booked, its bank credited with the increment, the next player's clock
    started now.  A ply of a seat not to move (a forfeit of a deleted account)
    leaves the running clock alone."""
    if game.status != "active" or mover(game) is not seat:
        return
    charge(ctx, game, seat)
    banked = bank_of(game, seat)
    if banked is not None:
        seat.bank_seconds = banked[0].after_move(banked[1])
    seat.flagged_at = None
    for s in game.seats:
        s.turn_seconds = 0.0
        s.nagged_at = None
    game.clock_from = ctx.now


def time_line(ctx: Ctx, game: Game) -> str | None:
    """The board mail's line of each player's time left on a ``--clock`` board
    (``Time left: ann 9d 4h (to move), ben 11d``); None on other boards."""
    if game.status != "active" or clock_of(game.options) is None:
        return None
    to_move = mover(game)
    parts = []
    for s in game.seats:
        if not s.active:
            continue
        if s is to_move:
            left = seconds_left(ctx, game, s)
            state = "on vacation" if away(ctx, s.user) else "to move"
            text = "out of time" if left <= 0 else duration(left)
            parts.append(f"{s.user.userid} {text} ({state})")
        else:
            banked = bank_of(game, s)
            assert banked is not None
            parts.append(f"{s.user.userid} {duration(banked[1])}")
    return "Time left: " + ", ".join(parts) + "."


# ------------------------------------------------------------------- timers
def forfeit_at(ctx: Ctx, game: Game, seat: Seat | None = None) -> datetime | None:
    """When the player to move (``seat``) runs out of time (None: never while on
    vacation)."""
    seat = seat or mover(game)
    if away(ctx, seat.user):
        return None
    left = seconds_left(ctx, game, seat)
    if left <= 0:
        return ctx.now + timedelta(seconds=left)
    return runs_out_at(ctx.now, left, weekends=bool(game.options.get("weekends")), zone=zone_name(seat.user))


def remind_at(ctx: Ctx, game: Game, seat: Seat | None = None) -> datetime | None:
    """When the player to move gets their reminder (None: none is due this turn:
    sent already, turned off, on vacation, out of time already, or a queued move
    answers for them)."""
    seat = seat or mover(game)
    if seat.nagged_at is not None or seat.queued_moves or seat.flagged_at is not None:
        return None
    due = forfeit_at(ctx, game, seat)
    if due is None:
        return None
    hours = seat.user.remind_hours
    if hours is None:
        weekends, zone = bool(game.options.get("weekends")), zone_name(seat.user)
        nag = float(game.options.get("nagtime", ctx.config.timers.nagtime)) * DAY - seat.turn_seconds - running(ctx, game, seat)
        at = runs_out_at(ctx.now, nag, weekends=weekends, zone=zone)
        banked = bank_of(game, seat)
        if banked is not None:  # on a bank clock: also when a day (or half the bank) is left
            lead = min(DAY, banked[1] / 2)
            at = min(at, runs_out_at(ctx.now, seconds_left(ctx, game, seat) - lead, weekends=weekends, zone=zone))
        return min(at, due)
    if hours <= 0:
        return None
    return max(clock_start(game), due - timedelta(hours=hours))


def next_deadline(ctx: Ctx, game: Game) -> datetime | None:
    """The next time the scheduler must look at this board (None: never again,
    or not before a move: a flagged player's opponent decides)."""
    if game.status != "active":
        return None
    seat = mover(game)
    if away(ctx, seat.user):
        return vacation_end(ctx, seat.user)
    if seat.flagged_at is not None:
        return None
    due = forfeit_at(ctx, game, seat)
    nag = remind_at(ctx, game, seat)
    if due is None:
        return nag
    return min(due, nag) if nag is not None else due
