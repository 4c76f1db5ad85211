"""Ratings when a rated game ends: the Elo rule (COMMANDS.md §4) is :mod:`pbmserv_terrace.elo`,
shared with the web's rating chart; this module applies it to the ratings rows."""

from __future__ import annotations

from ..elo import new_ratings, scores
from ..store import Game, Rating, UnitOfWork


async def apply_ratings(uow: UnitOfWork, game: Game) -> list[str]:
    """Update ratings and records of a finished rated game; lines for its mail."""
    rows: list[Rating] = await uow.ratings.for_update([s.user_id for s in game.seats], game.game_type)
    results = scores([s.seat for s in game.seats], game.winner_seat)
    before = [r.rating for r in rows]
    after = new_ratings(before, [r.games for r in rows], results)
    lines = []
    for seat, row, old, new, score in zip(game.seats, rows, before, after, results, strict=True):
        row.rating = new
        row.games += 1
        if score == 1.0:
            row.won += 1
        elif score == 0.0:
            row.lost += 1
        else:
            row.tied += 1
        lines.append(f"{seat.user.userid}: {round(old)} -> {round(new)} ({round(new) - round(old):+d})")
    return lines
