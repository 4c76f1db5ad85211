"""Standings of a solitaire on shared deals: pure arithmetic over plain results
(standard library only), so the mail service and the web archive rank alike.

Each player's best ended game on a deal counts (more cards home, then fewer
moves).  On every deal that two or more players ended, a player earns one point
for each other player they beat there and half a point for each tie.  Players
rank by points, then by average cards home, then by fewer average moves (below,
cy shares no deal but ranks above ann on cards).

>>> from datetime import datetime
>>> when = datetime(2024, 1, 1)
>>> r = rank([Result("ann", "terrace", 4, 30, 50, False, 101, when),
...           Result("bob", "terrace", 4, 30, 40, False, 102, when),
...           Result("cy", "terrace", 9, 104, 300, True, 103, when)])
>>> [(s.player, s.points) for s in r.players]
[('bob', 1.0), ('cy', 0.0), ('ann', 0.0)]
>>> [(d.deal, [x.player for x in d.results]) for d in r.shared]
[(4, ['bob', 'ann'])]
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True, slots=True)
class Result:
    """One ended game of a solitaire."""

    player: str
    variant: str
    deal: int
    score: int
    """cards on the foundations"""
    moves: int
    won: bool
    board_number: int
    when: datetime
    """when it ended (shared deals are listed by their latest game)"""


def beats(a: Result, b: Result) -> float:
    """1 when ``a`` did better than ``b`` (more cards home, then fewer moves), 0.5 for
    a tie, else 0."""
    if a.score != b.score:
        return float(a.score > b.score)
    if a.moves != b.moves:
        return float(a.moves < b.moves)
    return 0.5


@dataclass
class Standing:
    """A player's line in the standings."""

    player: str
    points: float = 0.0
    shared: int = 0
    """deals they share with at least one other player"""
    played: int = 0
    """deals they ended (their best game on each counts)"""
    won: int = 0
    cards: int = 0
    moves: int = 0

    @property
    def average_cards(self) -> float:
        return self.cards / self.played if self.played else 0.0

    @property
    def average_moves(self) -> float:
        return self.moves / self.played if self.played else 0.0


@dataclass(frozen=True, slots=True)
class SharedDeal:
    variant: str
    deal: int
    results: tuple[Result, ...]
    """each player's best game on the deal, the best first"""


@dataclass(frozen=True, slots=True)
class Ranking:
    games: int
    """ended games counted"""
    deals: int
    """different deals among them"""
    players: tuple[Standing, ...]
    """best first"""
    shared: tuple[SharedDeal, ...]
    """deals ended by two or more players, the most recently ended first"""


def rank(results: Iterable[Result]) -> Ranking:
    """The standings of ``results`` (newest first: of a player's equal games on a
    deal, the first given counts)."""
    games = list(results)
    best: dict[tuple[str, int, str], Result] = {}
    for g in games:
        key = (g.variant, g.deal, g.player)
        if key not in best or beats(g, best[key]) == 1.0:
            best[key] = g
    deals: dict[tuple[str, int], list[Result]] = {}
    for (variant, deal, _), g in best.items():
        deals.setdefault((variant, deal), []).append(g)
    table: dict[str, Standing] = {}
    for g in best.values():
        line = table.setdefault(g.player, Standing(g.player))
        line.played += 1
        line.won += g.won
        line.cards += g.score
        line.moves += g.moves
    for group in deals.values():
        if len(group) < 2:
            continue
        for g in group:
            line = table[g.player]
            line.shared += 1
            line.points += sum(beats(g, other) for other in group if other is not g)
    players = sorted(table.values(), key=lambda p: (-p.points, -p.average_cards, p.average_moves, p.player))
    shared = [
        SharedDeal(variant, deal, tuple(sorted(group, key=lambda g: (-g.score, g.moves, g.player))))
        for (variant, deal), group in deals.items()
        if len(group) > 1
    ]
    shared.sort(key=lambda d: max(g.when for g in d.results), reverse=True)
    return Ranking(len(games), len(deals), tuple(players), tuple(shared))


__all__ = ["Ranking", "Result", "SharedDeal", "Standing", "beats", "rank"]
