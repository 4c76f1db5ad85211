"""Timers (COMMANDS.md §4): nag after ``nagtime`` days without a move (or, for a
player who chose ``change remind``, once fewer hours than theirs are left), forfeit
after ``forfeittime`` days (or when ``totaltime`` is used up), nothing while the
player to move is on vacation; pending draw/undo votes are nagged too.  Run by
:meth:`Service.run_timers`, which the scheduler inside ``serve`` calls once a
configured interval."""

from __future__ import annotations

from datetime import timedelta

from ..render import render
from ..store import Game
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
from .deadlines import forfeit_at, remind_at
from .plies import (
    after_ply,
    first_round_removal,
    resign_seat,
    schedule,
)


async def handle_due(ctx: Ctx, game: Game) -> None:
    """One game whose deadline has passed: forfeit, nag, or look again later."""
    now = ctx.now
    pos = position(game)
    seat = seat_by_army(game, pos.to_move)
    if seat.user.vacation:
        game.deadline_at = now + timedelta(days=1)  # look again tomorrow
        return
    forfeit = float(game.options.get("forfeittime", ctx.config.timers.forfeittime))
    idle = now - game.last_move_at
    total = game.options.get("totaltime")
    out_of_time = total is not None and seat.clock_seconds + idle.total_seconds() >= float(total) * 86400
    if idle >= timedelta(days=forfeit) or out_of_time:
        reason = "used up the total time" if out_of_time else f"did not move for {forfeit:g} days"
        if game.ply < len(game.seats):
            await first_round_removal(ctx, game, seat, f"forfeited ({reason})", None)
            return
        pos, notes = await resign_seat(ctx, game, seat, pos, FORFEIT)
        notes.append(f"{seat.user.userid} {reason}.")
        notes += await after_ply(ctx, game, pos)
        await mail_game(ctx, game, headline=f"{seat.user.userid} forfeits on time", notes=notes)
        return
    nag = remind_at(ctx, game, seat)
    if nag is not None and nag <= now:
        seat.nagged_at = now
        view = await game_view(ctx, game)
        left = max(0.0, (forfeit_at(ctx, game, seat) - now).total_seconds() / 86400)
        body = render(
            "nag.txt", game=view, days=int(idle.total_seconds() // 86400), user=seat.user.userid, forfeit_in=f"{left:.0f}",
            hours_left=f"{left * 24:.0f}" if left < 2 else None,
        )  # fmt: skip
        await send_board(ctx, game, [seat.user], subject_for(game) + " reminder", body)
        if game.draw_votes or game.undo_votes:
            votes = game.draw_votes or game.undo_votes
            waiting = [s.user for s in game.seats if s.active and s.seat not in votes and s is not seat]
            if waiting:
                await send_board(ctx, game, waiting, subject_for(game) + " reminder", body)
    schedule(ctx, game)
