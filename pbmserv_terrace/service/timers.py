"""Timers (COMMANDS.md §4): nag after ``nagtime`` days without a move (or, for a
player who chose ``change remind``, once fewer hours than theirs are left), forfeit
after ``forfeittime`` days (or when ``totaltime`` is used up), nothing while the
player to move is on vacation; pending draw/undo votes are nagged too.  Run by
:meth:`Service.run_timers`, which the scheduler inside ``serve`` calls once a
configured interval."""

from __future__ import annotations

from ..clocks import clock_of, duration
from ..gametypes.base import BoardPosition
from ..render import render
from ..store import Game, Seat
from .boards import (
    FORFEIT,
    game_view,
    mail_game,
    position,
    seat_by_army,
    send_board,
    subject_for,
)
from .context import Ctx
from .deadlines import DAY, away, remind_at, running, seconds_left
from .plies import (
    after_ply,
    first_round_removal,
    resign_seat,
    schedule,
)
from .vacations import end_vacation


async def handle_due(ctx: Ctx, game: Game) -> None:
    """One game whose deadline has passed: a vacation's end, a forfeit, a flag
    fallen on a ``--clock`` board, a reminder, or look again later."""
    now = ctx.now
    pos = position(game)
    seat = seat_by_army(game, pos.to_move)
    if seat.user.vacation_since is not None and not away(ctx, seat.user):
        await end_vacation(ctx, seat.user)  # it ended by itself: the clocks of all the player's boards run again
    if away(ctx, seat.user):
        schedule(ctx, game)
        return
    left = seconds_left(ctx, game, seat)
    clock = clock_of(game.options)
    if left <= 0 and clock is not None and not clock.auto:
        if seat.flagged_at is None:
            await flag(ctx, game, seat)
        schedule(ctx, game)
        return
    if left <= 0:
        if clock is not None:
            reason = "ran out of time"
        elif game.options.get("totaltime") and seat.clock_seconds + running(ctx, game, seat) >= float(game.options["totaltime"]) * DAY:
            reason = "used up the total time"
        else:
            reason = f"did not move for {float(game.options.get('forfeittime', ctx.config.timers.forfeittime)):g} days"
        await forfeit(ctx, game, seat, pos, reason)
        return
    nag = remind_at(ctx, game, seat)
    if nag is not None and nag <= now:
        seat.nagged_at = now
        view = await game_view(ctx, game)
        days_left = left / DAY
        idle = seat.turn_seconds + running(ctx, game, seat)
        body = render(
            "nag.txt", game=view, days=int(idle // DAY), user=seat.user.userid, forfeit_in=f"{days_left:.0f}",
            hours_left=f"{days_left * 24:.0f}" if days_left < 2 else None, bank=clock is not None,
            auto=clock is not None and clock.auto, left=duration(left),
        )  # fmt: skip
        await send_board(ctx, game, [seat.user], subject_for(game) + " reminder", body)
        if game.draw_votes or game.undo_votes:
            votes = game.draw_votes or game.undo_votes
            waiting = [s.user for s in game.seats if s.active and s.seat not in votes and s is not seat]
            if waiting:
                await send_board(ctx, game, waiting, subject_for(game) + " reminder", body)
    schedule(ctx, game)


async def forfeit(ctx: Ctx, game: Game, seat: Seat, pos: BoardPosition, reason: str, *, claimed_by: str | None = None) -> None:
    """``seat`` (to move) loses on time: removed in the first round, else it
    forfeits (a game of two ends, of three or four goes on without it)."""
    if game.ply < len(game.seats):
        await first_round_removal(ctx, game, seat, f"forfeited ({reason})", None)
        return
    pos, notes = await resign_seat(ctx, game, seat, pos, FORFEIT)
    notes.append(f"{seat.user.userid} {reason}" + (f"; {claimed_by} claimed the win." if claimed_by else "."))
    notes += await after_ply(ctx, game, pos)
    await mail_game(ctx, game, headline=f"{seat.user.userid} forfeits on time", notes=notes)


async def flag(ctx: Ctx, game: Game, seat: Seat) -> None:
    """The bank of ``seat`` (to move) ran out on a ``--clock`` board without
    ``auto``: its opponents are told they may claim the win (by Reply to that
    mail, or ``move N U P claim``) or play on; the player is told they may still
    move while nobody has claimed."""
    seat.flagged_at = ctx.now
    others = [s.user for s in game.seats if s.active and s is not seat]
    view = await game_view(ctx, game)
    body = render("flag.txt", game=view, user=seat.user.userid, claim=True, first_round=game.ply < len(game.seats))
    await send_board(ctx, game, others, subject_for(game) + f" {seat.user.userid} is out of time", body)
    body = render("flag.txt", game=view, user=seat.user.userid, claim=False, others=", ".join(u.userid for u in others))
    await send_board(ctx, game, [seat.user], subject_for(game) + " you are out of time", body)
