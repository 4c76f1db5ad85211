"""The table (issue 41): points, tie-breaks and the crosstable.

- Points: a win 1, a draw 1/2, a loss 0; a Swiss bye 1; a round robin's rest 0.
- Sonneborn–Berger: for each game played, the opponent's final points times the
  points scored against them (a win counts the opponent's points, a draw half).
- Buchholz: the sum of the final points of every opponent met (byes add nothing).
- Order: round robin — points, Sonneborn–Berger; Swiss — points, Buchholz,
  Sonneborn–Berger; knockout — the round reached, then points; every system then
  the seed (the higher first).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .pairing import Result, scores_of


@dataclass(frozen=True, slots=True)
class Standing:
    """One line of the table."""

    player: int
    rank: int
    points: float
    games: int
    wins: int
    draws: int
    losses: int
    sonneborn_berger: float
    buchholz: float
    byes: int
    reached: int
    """the last round the player was paired in"""


def standings(players: Sequence[int], results: Sequence[Result], system: str) -> list[Standing]:
    """The table of ``players`` (seed order) after the finished ``results``."""
    seed = {p: i for i, p in enumerate(players)}
    points = scores_of(r for r in results if r.score is not None)
    sb = dict.fromkeys(players, 0.0)
    bh = dict.fromkeys(players, 0.0)
    counts = {p: [0, 0, 0, 0] for p in players}  # games, wins, draws, losses
    byes = dict.fromkeys(players, 0)
    reached = dict.fromkeys(players, 0)
    for r in results:
        reached[r.white] = max(reached.get(r.white, 0), r.round)
        if r.black is None:
            if r.score:
                byes[r.white] = byes.get(r.white, 0) + 1
            continue
        reached[r.black] = max(reached.get(r.black, 0), r.round)
        if r.score is None:
            continue
        for me, other, mine in ((r.white, r.black, r.score), (r.black, r.white, 1.0 - r.score)):
            if me not in counts:
                continue
            row = counts[me]
            row[0] += 1
            row[1 if mine == 1.0 else 2 if mine == 0.5 else 3] += 1
            sb[me] += mine * points.get(other, 0.0)
            bh[me] += points.get(other, 0.0)

    def key(p: int) -> tuple[float, ...]:
        own = points.get(p, 0.0)
        if system == "swiss":
            return (-own, -bh[p], -sb[p], seed[p])
        if system == "knockout":
            return (-reached[p], -own, seed[p])
        return (-own, -sb[p], seed[p])

    table = []
    for rank, p in enumerate(sorted(players, key=key), start=1):
        games, wins, draws, losses = counts[p]
        table.append(Standing(p, rank, points.get(p, 0.0), games, wins, draws, losses, sb[p], bh[p], byes[p], reached[p]))
    return table


def crosstable(players: Sequence[int], results: Sequence[Result]) -> dict[int, dict[int, list[float]]]:
    """Per player, per opponent, the points scored against them in round order
    (finished games only)."""
    table: dict[int, dict[int, list[float]]] = {p: {} for p in players}
    for r in sorted(results, key=lambda r: r.round):
        if r.black is None or r.score is None:
            continue
        table.setdefault(r.white, {}).setdefault(r.black, []).append(r.score)
        table.setdefault(r.black, {}).setdefault(r.white, []).append(1.0 - r.score)
    return table


def points_text(value: float) -> str:
    """1.5 → '1.5', 2.0 → '2'."""
    return f"{value:g}"


__all__ = ["Standing", "crosstable", "points_text", "standings"]
