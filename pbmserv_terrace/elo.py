"""pbmserv-style Elo ratings (COMMANDS.md §4): the arithmetic only, in one place.

Everyone starts at 1600.  A player with fewer than 20 finished rated games is
provisional and moves with K = 64; established players use K = 32.  In a game of
three or four each player is rated against the average rating of the others.  The
winner scores 1, the others 0; a draw scores 1/2 for everyone.

The service applies it when a rated game ends (``service/ratings.py``) and the web
replays it for the rating chart; both read it here, so they cannot drift apart.  It
imports nothing of ours, so every layer may use it.
"""

from __future__ import annotations

from collections.abc import Sequence

START = 1600.0
ESTABLISHED_GAMES = 20
K_ESTABLISHED, K_PROVISIONAL = 32.0, 64.0


def expected(rating: float, opponents: float) -> float:
    """The expected score of a player rated ``rating`` against ``opponents`` (their average)."""
    return 1.0 / (1.0 + 10 ** ((opponents - rating) / 400.0))


def scores(seats: Sequence[int], winner_seat: int | None) -> list[float]:
    """Each seat's score: 1 for the winner and 0 for the others, 1/2 each for a draw (no winner).

    >>> scores([1, 2, 3], 2), scores([1, 2], None)
    ([0.0, 1.0, 0.0], [0.5, 0.5])
    """
    if winner_seat is None:
        return [0.5] * len(seats)
    return [1.0 if seat == winner_seat else 0.0 for seat in seats]


def new_ratings(
    ratings: Sequence[float], games: Sequence[int], results: Sequence[float], pinned: Sequence[float | None] = ()
) -> list[float]:
    """Each player's rating after one game, all computed from the ratings before it
    (``games``: each player's rated games before this one, which picks their K).
    ``pinned``: per player, a fixed rating (a robot's, issue 42) or None; a pinned
    player is rated at that value and keeps it, the others are rated against it.

    >>> [round(r) for r in new_ratings([1600, 1600], [30, 30], [1, 0])]
    [1616, 1584]
    >>> [round(r) for r in new_ratings([1600, 1412], [30, 5], [1, 0], pinned=[None, 1900])]
    [1627, 1900]
    """
    fixed = list(pinned) or [None] * len(ratings)
    ratings = [r if p is None else p for r, p in zip(ratings, fixed, strict=True)]
    out = []
    for i, rating in enumerate(ratings):
        if fixed[i] is not None:
            out.append(rating)
            continue
        others = [r for j, r in enumerate(ratings) if j != i]
        k = K_ESTABLISHED if games[i] >= ESTABLISHED_GAMES else K_PROVISIONAL
        out.append(rating + k * (results[i] - expected(rating, sum(others) / len(others))))
    return out
