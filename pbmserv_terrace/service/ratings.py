"""Ratings when a rated game ends: the Elo rule (COMMANDS.md §4) is :mod:`pbmserv_terrace.elo`,
shared with the web's rating chart; this module applies it to the ratings rows."""

from __future__ import annotations

from ..elo import new_ratings, scores
from ..gametypes import GAME_TYPES, game_type
from ..store import Game, Rating, UnitOfWork
from ..store.models import ROBOTS


async def apply_ratings(uow: UnitOfWork, game: Game) -> list[str]:
    """Update ratings and records of a finished rated game; lines for its mail."""
    rows: list[Rating] = await uow.ratings.for_update([s.user_id for s in game.seats], game.game_type)
    results = scores([s.seat for s in game.seats], game.winner_seat)
    before = [r.rating for r in rows]
    kind = game_type(game.game_type)
    pinned = [kind.pinned_rating(s.user.robot_level) for s in game.seats]
    after = new_ratings(before, [r.games for r in rows], results, pinned)
    lines = []
    for seat, row, old, new, score, fixed in zip(game.seats, rows, before, after, results, pinned, strict=True):
        row.rating = new
        row.games += 1
        if score == 1.0:
            row.won += 1
        elif score == 0.0:
            row.lost += 1
        else:
            row.tied += 1
        if fixed is not None:
            lines.append(f"{seat.user.userid}: {round(new)} (a robot's rating is fixed at its measured strength)")
        else:
            lines.append(f"{seat.user.userid}: {round(old)} -> {round(new)} ({round(new) - round(old):+d})")
    return lines


async def pin_robots(uow: UnitOfWork) -> int:
    """Keep each robot's rating row at its pinned value (issue 42: the game table's
    ``robot_ratings``; a new measurement moves it at the next timer run); rows changed."""
    robots = [u for u in (await uow.users.get_many(list(ROBOTS))).values() if u.robot_level is not None]
    changed = 0
    for kind in GAME_TYPES.values():
        for user in robots:
            rating = kind.pinned_rating(user.robot_level)
            if rating is not None:
                changed += await uow.ratings.pin(kind.name, user.id, rating)
    return changed
