"""Vacations that stop every clock (issue 40 item 4; COMMANDS.md §4's ``vacation``).

A player has ``timers.vacation_days`` of vacation each calendar year (the
server's setting, 30 by default).  ``vacation U P on [DAYS]`` starts one: the
clock of every board where it is the player's turn is booked up to now and then
stands still (:mod:`.deadlines` counts no time while the player is away); boards
whose turn comes to them meanwhile do not start it.  It ends with ``vacation U P
off``, after DAYS, or when the year's allowance is used up (the timers end it:
:func:`end_vacation`); the clocks then run from that moment.  The opponents on
the player's active boards are told when it starts and when it ends (when, not
why, and no address).  The days used count for the year the vacation began."""

from __future__ import annotations

from datetime import timedelta

from ..gametypes import family_of, game_title
from ..store import Game, User
from .context import CommandError, Ctx
from .deadlines import DAY, away, charge, clock_start, mover, vacation_end, vacation_left
from .plies import schedule


async def _boards(ctx: Ctx, user: User) -> list[Game]:
    """The player's active two-sided boards, each locked for this transaction."""
    found = []
    for game in await ctx.uow.games.active_for_users([user.id]):
        if family_of(game.game_type) != "board":
            continue
        locked = await ctx.uow.games.get(game.game_type, game.board_number, lock=True)
        if locked is not None and locked.status == "active":
            found.append(locked)
    return found


def _tell(ctx: Ctx, user: User, boards: list[Game], subject: str, line: str) -> None:
    """One mail to each opponent of ``user`` on ``boards``, naming their boards."""
    by_user: dict[int, tuple[User, list[Game]]] = {}
    for game in boards:
        for seat in game.seats:
            if seat.user_id != user.id and seat.active and not seat.user.is_robot:
                by_user.setdefault(seat.user_id, (seat.user, []))[1].append(game)
    for other, games in by_user.values():
        names = ", ".join(f"{game_title(g.game_type)} {g.board_number}" for g in games)
        ctx.send([other], subject, f"{line}\n\nYour boards with {user.userid}: {names}.\n")


def days_text(seconds: float) -> str:
    days = seconds / DAY
    return f"{days:.0f} {'day' if round(days) == 1 else 'days'}" if days >= 1 else f"{seconds / 3600:.0f} hours"


async def start_vacation(ctx: Ctx, user: User, days: float | None) -> str:
    """Start (or, while on one, change the length of) the vacation of ``user``;
    the sentence for the player."""
    if user.vacation_year != ctx.now.year and not away(ctx, user):
        user.vacation_year, user.vacation_used_seconds = ctx.now.year, 0.0
    left = vacation_left(ctx, user)
    if left <= 0:
        raise CommandError(
            f"{user.userid} has used the {ctx.config.timers.vacation_days:g} vacation days of {ctx.now.year}; "
            "your clocks keep running"
        )
    already = away(ctx, user)
    boards = await _boards(ctx, user)
    if not already:
        if user.vacation_since is not None:  # an older one ended by itself and was not closed yet
            await end_vacation(ctx, user)
        for game in boards:
            seat = mover(game)
            if seat.user_id == user.id:
                charge(ctx, game, seat)  # its time so far booked; the clock stands still from now
        user.vacation_since = ctx.now
    user.vacation_until = ctx.now + timedelta(days=days) if days else None
    user.vacation = True
    for game in boards:
        schedule(ctx, game)
    end = vacation_end(ctx, user)
    assert end is not None
    until = f"until {end:%Y-%m-%d %H:%M} UTC"
    if not already:
        _tell(ctx, user, boards, f"{ctx.server_name}: {user.userid} is on vacation",
              f"{user.userid} is on vacation {until}: the clocks of their boards stand still meanwhile.")  # fmt: skip
    return (
        f"Vacation for {user.userid} is on {until}: the clocks of all your boards stand still, no reminders "
        f"and no forfeits. You have {days_text(vacation_left(ctx, user, end))} of vacation left in {end.year} after it. "
        f"'vacation {user.userid} PASSWORD off' ends it sooner."
    )


async def end_vacation(ctx: Ctx, user: User) -> str:
    """End the vacation of ``user`` now (or at its own end, if that is past):
    the clocks of their boards run from then; the days it took are counted."""
    since, end = user.vacation_since, vacation_end(ctx, user)
    if since is None or end is None:
        user.vacation, user.vacation_until = False, None
        return f"{user.userid} is not on vacation."
    stop = min(ctx.now, end)
    boards = await _boards(ctx, user)
    for game in boards:
        seat = mover(game)
        if seat.user_id == user.id:
            game.clock_from = max(clock_start(game), stop)
    used = user.vacation_used_seconds if user.vacation_year == since.year else 0.0
    user.vacation_year, user.vacation_used_seconds = since.year, used + max(0.0, (stop - since).total_seconds())
    user.vacation_since = user.vacation_until = None
    user.vacation = False
    for game in boards:
        schedule(ctx, game)
    _tell(ctx, user, boards, f"{ctx.server_name}: {user.userid} is back",
          f"{user.userid}'s vacation has ended: the clocks of their boards run again.")  # fmt: skip
    left = days_text(vacation_left(ctx, user))
    return f"Vacation for {user.userid} is off: your clocks run again. You have {left} of vacation left in {ctx.now.year}."


async def end_due(ctx: Ctx) -> int:
    """End every vacation whose time is up (the timers); how many."""
    ended = 0
    for user in await ctx.uow.users.on_vacation():
        end = vacation_end(ctx, user)
        if end is not None and end <= ctx.now:
            await end_vacation(ctx, user)
            ended += 1
    return ended


def vacation_status(ctx: Ctx, user: User) -> str:
    """The ``status`` line: on (until when) or off, and the days left this year."""
    left = days_text(vacation_left(ctx, user))
    if away(ctx, user):
        end = vacation_end(ctx, user)
        assert end is not None
        return f"on until {end:%Y-%m-%d %H:%M} UTC ({left} left in {end.year})"
    return f"off ({left} left in {ctx.now.year})"
