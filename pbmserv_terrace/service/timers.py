"""Timers (COMMANDS.md §4): nag after ``nagtime`` days without a move, forfeit
after ``forfeittime`` days (or when ``totaltime`` is used up), nothing while the
player to move is on vacation; pending draw/undo votes are nagged too.  Run by the
scheduler inside ``serve`` once a configured interval."""

from __future__ import annotations

from datetime import datetime, timedelta

from ..mail.message import InboundMail
from ..render import render
from ..store import Game, UnitOfWork
from .boards import FORFEIT, after_ply, game_view, mail_game, position, resign_seat, schedule, seat_by_army, subject_for
from .core import Ctx, Service


async def run_timers(service: Service, now: datetime, *, batch: int = 100) -> int:
    """Handle every game whose deadline has passed; returns how many were handled."""
    handled = 0
    while True:
        async with UnitOfWork(service.db) as uow:
            games = await uow.games.due(now, limit=batch)
            if not games:
                return handled
            placeholder = InboundMail(sender=service.config.server.address, subject="", body="", message_id="<timer>")
            ctx = Ctx(service, uow, placeholder, now)
            for game in games:
                await _one(ctx, game)
                handled += 1
            service._queue_replies(ctx, False, now)
            await uow.commit()
        if len(games) < batch:
            return handled


async def _one(ctx: Ctx, game: Game) -> None:
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
            from .play import _first_round_removal

            await _first_round_removal(ctx, game, seat, f"forfeited ({reason})", None)
            return
        pos, notes = await resign_seat(ctx, game, seat, pos, FORFEIT)
        notes.append(f"{seat.user.userid} {reason}.")
        notes += await after_ply(ctx, game, pos)
        await mail_game(ctx, game, headline=f"{seat.user.userid} forfeits on time", notes=notes)
        return
    if seat.nagged_at is None:
        seat.nagged_at = now
        view = await game_view(ctx, game)
        left = max(0.0, forfeit - idle.total_seconds() / 86400)
        body = render(
            "nag.txt", game=view, days=int(idle.total_seconds() // 86400), user=seat.user.userid, forfeit_in=f"{left:.0f}"
        )
        ctx.send([seat.user], subject_for(game) + " reminder", body)
        if game.draw_votes or game.undo_votes:
            votes = game.draw_votes or game.undo_votes
            waiting = [s.user for s in game.seats if s.active and s.seat not in votes and s is not seat]
            if waiting:
                ctx.send(waiting, subject_for(game) + " reminder", body)
    schedule(ctx, game)
