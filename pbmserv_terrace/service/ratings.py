"""pbmserv-style Elo ratings (COMMANDS.md §4).

Everyone starts at 1600.  A player with fewer than 20 finished rated games is
provisional and moves with K = 64; established players use K = 32.  In a game of
three or four each player is rated against the average rating of the others.  The
winner scores 1, the others 0; a draw scores 1/2 for everyone.
"""

from __future__ import annotations

from ..store import Game, Rating, UnitOfWork

START = 1600.0
ESTABLISHED_GAMES = 20
K_ESTABLISHED, K_PROVISIONAL = 32.0, 64.0


def expected(rating: float, opponents: float) -> float:
    return 1.0 / (1.0 + 10 ** ((opponents - rating) / 400.0))


def new_ratings(ratings: list[float], games: list[int], scores: list[float]) -> list[float]:
    """Each player's rating after one game, all computed from the ratings before it.

    >>> [round(r) for r in new_ratings([1600, 1600], [30, 30], [1, 0])]
    [1616, 1584]
    """
    out = []
    for i, rating in enumerate(ratings):
        others = [r for j, r in enumerate(ratings) if j != i]
        k = K_ESTABLISHED if games[i] >= ESTABLISHED_GAMES else K_PROVISIONAL
        out.append(rating + k * (scores[i] - expected(rating, sum(others) / len(others))))
    return out


async def apply_ratings(uow: UnitOfWork, game: Game) -> list[str]:
    """Update ratings and records of a finished rated game; lines for its mail."""
    rows: list[Rating] = await uow.ratings.for_update([s.user_id for s in game.seats], game.game_type)
    scores = [0.5] * len(rows) if game.winner_seat is None else [1.0 if s.seat == game.winner_seat else 0.0 for s in game.seats]
    before = [r.rating for r in rows]
    after = new_ratings(before, [r.games for r in rows], scores)
    lines = []
    for seat, row, old, new, score in zip(game.seats, rows, before, after, scores, strict=True):
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
