"""Rating over time: the store keeps only each player's current rating, so the chart
replays the finished rated games with the server's Elo rule (COMMANDS.md §4).

The replay is incremental and shared by every request: it remembers which history
rows it applied and reads only rows above the highest id it has seen (a primary-key
range), minus a small window, so a game whose transaction committed late with a
lower id is still picked up.  The rule is :mod:`pbmserv_terrace.elo`, the same
arithmetic the service applies when a game ends.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from ..elo import START, new_ratings, scores
from ..gametypes import GAME_TYPES
from ..store.archive import Archive, RatedResult
from ..store.models import ROBOTS

LATE_WINDOW = 64
"""history ids below the highest seen that are read again (late commits)"""
BATCH = 50_000
"""history rows read at once (the first request replays them all)"""


@dataclass(frozen=True, slots=True)
class Point:
    when: datetime
    rating: float
    board_number: int


@dataclass
class _TypeState:
    rating: dict[str, float] = field(default_factory=dict)
    games: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    points: dict[str, list[tuple[datetime, float, int]]] = field(default_factory=lambda: defaultdict(list))
    """each player's :class:`Point` s as plain tuples, which the garbage collector stops
    tracking (a hundred thousand objects that each full collection would walk)"""


class RatingHistory:
    """Per game type and user, the rating after each rated game, replayed in the order
    the games reached the history table."""

    def __init__(self) -> None:
        self._types: dict[str, _TypeState] = defaultdict(_TypeState)
        self._applied: set[int] = set()
        self._high = 0
        self._lock = asyncio.Lock()
        self._marker: object = None
        """the commit marker read before the last refresh (None: none)"""

    def apply(self, row: RatedResult) -> None:
        if row.history_id in self._applied:
            return
        self._applied.add(row.history_id)
        self._high = max(self._high, row.history_id)
        if not row.rated or len(row.players) < 2:
            return
        state = self._types[row.game_type]
        before = [state.rating.get(p, START) for p in row.players]
        played = [state.games[p] for p in row.players]
        results = scores(range(1, len(row.players) + 1), row.winner_seat)
        kind = GAME_TYPES.get(row.game_type)
        pinned = [kind.pinned_rating(ROBOTS.get(p)) if kind else None for p in row.players]
        for player, after in zip(row.players, new_ratings(before, played, results, pinned), strict=True):
            state.rating[player] = after
            state.games[player] += 1
            state.points[player].append((row.finished_at, after, row.board_number))

    async def refresh(self, archive: Archive, marker: object = None) -> None:
        """Apply the history rows not seen yet (when up to date: one read of a few ids;
        none when ``marker``, the database's commit marker read before, is that of the
        last refresh: nothing was committed since)."""
        if marker is not None and marker == self._marker:
            return
        async with self._lock:
            await self._refresh(archive)
            self._marker = marker

    async def _refresh(self, archive: Archive) -> None:
        while True:
            # ids first (index only): on most requests nothing is new and no game row is read
            ids = await archive.history_ids_after(max(0, self._high - LATE_WINDOW))
            fresh = [i for i in ids if i not in self._applied]
            if not fresh:
                return
            rows = await archive.finished_after(fresh[0] - 1, BATCH)
            for row in rows:
                self.apply(row)
            if len(rows) < BATCH:
                self._applied.update(fresh)  # an id without its game row is not read again
                return

    def count(self, game_type: str, userid: str) -> int:
        """How many points the chart of ``userid`` has (a cheap part of a page's cache key)."""
        return len(self._types[game_type].points.get(userid, ()))

    def points(self, game_type: str, userid: str) -> list[Point]:
        return [Point(*p) for p in self._types[game_type].points.get(userid, ())]
