"""Who plays whom (issue 41): round robin, Swiss, knockout.

Players are ints in seed order (the strongest first; the service seeds by rating
at the start).  A :class:`Pairing` names the first seat ("white") and the second
(None: a bye); a :class:`Result` is a pairing of a past round with the first
seat's score.

- **Round robin**: FIDE's Berger tables (:func:`berger_table`): with an odd number
  of players the one who would meet the last number rests that round.  A double
  round robin plays the table twice, colours swapped in the second cycle.
- **Swiss** (:func:`swiss_pairings`): players ranked by score, then seed; the
  highest unpaired player is paired within their score group, top half against
  bottom half (Dutch), else with the next lower group; a search with backtracking
  finds a pairing with no repeated game whenever one exists (within a budget of
  tries, past which repeats are allowed rather than fail).  An odd count: the
  lowest-ranked player who has had no bye gets it (1 point).  Colours: whoever
  has had more blacks (or, level, had black last) gets white; when both want the
  same, the stronger wish, then the higher rank, wins; round 1 alternates by board.
- **Knockout** (:func:`knockout_pairings`): a seeded bracket (1 meets the lowest
  seed, 2 the second lowest, …; the top seeds get the byes when the count is not
  a power of two); a match is two games with colours swapped; a tied match goes
  to the higher seed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

SYSTEMS = ("roundrobin", "double", "swiss", "knockout")
SWISS_BUDGET = 200_000
"""pairings tried by the Swiss search before it allows repeated games"""


@dataclass(frozen=True, slots=True)
class Pairing:
    """One game of a round: ``white`` has the first seat; ``black`` None is a bye
    (Swiss: 1 point; round robin: a rest; knockout: ``white`` goes through)."""

    white: int
    black: int | None


@dataclass(frozen=True, slots=True)
class Result:
    """A pairing of round ``round`` and ``white``'s score (1, 0.5, 0; None while the
    game is in play).  A bye's score is the points it gives (Swiss 1, else 0)."""

    round: int
    white: int
    black: int | None
    score: float | None


def rounds_needed(system: str, players: int, swiss_rounds: int = 0) -> int:
    """How many rounds a tournament of ``players`` plays."""
    if system in ("roundrobin", "double"):
        cycle = players + players % 2 - 1
        return cycle * (2 if system == "double" else 1)
    if system == "swiss":
        return swiss_rounds
    if system == "knockout":
        return max(1, math.ceil(math.log2(max(2, players))))
    raise ValueError(f"unknown system {system!r}")


# ---------------------------------------------------------------- round robin
def berger_table(n: int) -> list[list[tuple[int, int | None]]]:
    """FIDE's Berger table for ``n`` players numbered 1..n: per round, (white,
    black) on each board; black None: white rests (odd ``n``)."""
    if n < 2:
        raise ValueError("a round robin needs two players or more")
    m = n + n % 2
    k = m - 1
    table: list[list[tuple[int, int | None]]] = []
    for r in range(1, k + 1):
        p = next(a for a in range(1, k + 1) if (2 * a - (r + 1)) % k == 0)
        first: tuple[int, int | None] = (p, m) if r % 2 == 1 else (m, p)
        if m > n:  # the last number is no one: p rests
            first = (p, None)
        boards = [first]
        for j in range(1, m // 2):
            boards.append(((p + j - 1) % k + 1, (p - j - 1) % k + 1))
        table.append(boards)
    return table


def round_robin_pairings(players: Sequence[int], round_no: int, *, double: bool = False) -> list[Pairing]:
    """Round ``round_no`` (from 1) of a (double) round robin of ``players`` (seed
    order: seed 1 is number 1 of the Berger table)."""
    table = berger_table(len(players))
    cycle = len(table)
    if not 1 <= round_no <= cycle * (2 if double else 1):
        raise ValueError(f"a round robin of {len(players)} has no round {round_no}")
    swap = round_no > cycle
    out = []
    for white, black in table[(round_no - 1) % cycle]:
        if black is None:
            out.append(Pairing(players[white - 1], None))
        elif swap:
            out.append(Pairing(players[black - 1], players[white - 1]))
        else:
            out.append(Pairing(players[white - 1], players[black - 1]))
    return out


# ---------------------------------------------------------------------- Swiss
class _OutOfBudget(Exception):
    pass


def scores_of(results: Iterable[Result]) -> dict[int, float]:
    """Each player's points (byes included)."""
    score: dict[int, float] = {}
    for r in results:
        score[r.white] = score.get(r.white, 0.0) + (r.score or 0.0)
        if r.black is not None:
            score[r.black] = score.get(r.black, 0.0) + (1.0 - r.score if r.score is not None else 0.0)
    return score


def _colour_wish(history: list[int]) -> int:
    """>0: wants white (the larger, the stronger); <0: black; 0: no wish.  ``history``:
    +1 for each white, -1 for each black, in order."""
    if not history:
        return 0
    diff = sum(history)
    if diff:
        return -2 * diff
    if len(history) >= 2 and history[-1] == history[-2]:
        return -3 * history[-1]  # a third one in a row
    return -history[-1]


def swiss_pairings(players: Sequence[int], results: Sequence[Result], *, budget: int = SWISS_BUDGET) -> list[Pairing]:
    """The next Swiss round for ``players`` (those still in, in seed order) after
    ``results`` (every earlier round's games and byes).  Boards in ranking order,
    the bye (if any) last."""
    seed = {p: i for i, p in enumerate(players)}
    score = scores_of(results)
    met: set[tuple[int, int]] = set()
    byes: set[int] = set()
    colours: dict[int, list[int]] = {p: [] for p in players}
    for r in results:
        if r.black is None:
            byes.add(r.white)
            continue
        met.add((min(r.white, r.black), max(r.white, r.black)))
        colours.setdefault(r.white, []).append(1)
        colours.setdefault(r.black, []).append(-1)
    ranked = sorted(players, key=lambda p: (-score.get(p, 0.0), seed[p]))
    bye: int | None = None
    pairs: list[tuple[int, int]] | None = None
    if len(ranked) % 2:
        for candidate in [p for p in reversed(ranked) if p not in byes] or list(reversed(ranked)):
            rest = [p for p in ranked if p != candidate]
            pairs = _match(rest, score, met, budget // 4)
            if pairs is not None:
                bye = candidate
                break
        if bye is None:  # no bye leaves a pairing without repeats: the lowest without a bye, repeats allowed
            bye = next((p for p in reversed(ranked) if p not in byes), ranked[-1])
        ranked = [p for p in ranked if p != bye]
    if pairs is None:
        pairs = _match(ranked, score, met, budget) or _match(ranked, score, set(), budget) or []
    rank = {p: i for i, p in enumerate(ranked)}
    pairs.sort(key=lambda ab: min(rank[ab[0]], rank[ab[1]]))
    out = []
    for board, (a, b) in enumerate(pairs):
        high, low = (a, b) if rank[a] < rank[b] else (b, a)
        wh, wl = _colour_wish(colours.get(high, [])), _colour_wish(colours.get(low, []))
        if wh > wl:
            high_white = True
        elif wl > wh:
            high_white = False
        elif wh == 0:
            high_white = board % 2 == 0  # no wishes (round 1): alternate by board
        else:
            high_white = wh > 0  # the same wish: the higher rank has it
        out.append(Pairing(high, low) if high_white else Pairing(low, high))
    if bye is not None:
        out.append(Pairing(bye, None))
    return out


def _match(
    ranked: list[int], score: dict[int, float], met: set[tuple[int, int]], budget: int
) -> list[tuple[int, int]] | None:
    """Pair ``ranked`` (best first) with no pair in ``met``: the highest unpaired
    player tries their own score group's bottom half first (Dutch: top half meets
    bottom half), then its top half, then lower groups in order; backtracking.
    None when no such pairing exists (or the budget of tries ran out)."""
    n = len(ranked)
    paired = [False] * n
    out: list[tuple[int, int]] = []
    tries = [0]

    def candidates(i: int) -> list[int]:
        s = score.get(ranked[i], 0.0)
        group = [j for j in range(i, n) if not paired[j] and score.get(ranked[j], 0.0) == s]
        half = len(group) // 2
        same = [j for j in group[half:] + list(reversed(group[1:half])) if j != i]
        lower = [j for j in range(i + 1, n) if not paired[j] and score.get(ranked[j], 0.0) != s]
        return same + lower

    def solve(start: int) -> bool:
        i = start
        while i < n and paired[i]:
            i += 1
        if i == n:
            return True
        paired[i] = True
        for j in candidates(i):
            a, b = ranked[i], ranked[j]
            if (min(a, b), max(a, b)) in met:
                continue
            tries[0] += 1
            if tries[0] > budget:
                raise _OutOfBudget
            paired[j] = True
            out.append((a, b))
            if solve(i + 1):
                return True
            out.pop()
            paired[j] = False
        paired[i] = False
        return False

    if n % 2:
        return None
    try:
        return list(out) if solve(0) else None
    except _OutOfBudget:
        return None


# ------------------------------------------------------------------- knockout
def bracket_order(size: int) -> list[int]:
    """The seeds of a bracket of ``size`` (a power of two) from top to bottom:
    neighbours meet in round 1 (1-8, 4-5, 2-7, 3-6 for 8)."""
    order = [1]
    while len(order) < size:
        total = 2 * len(order) + 1
        order = [x for s in order for x in (s, total - s)]
    return order


def knockout_winners(players: Sequence[int], round_results: Sequence[Result]) -> list[int]:
    """The winners of one knockout round's matches, in board order: a bye goes
    through; a match (two games, colours swapped) goes to the one with more
    points, a tie to the higher seed.  ValueError while a game is in play."""
    seed = {p: i for i, p in enumerate(players)}
    matches: dict[tuple[int, int], dict[int, float]] = {}
    order: list[tuple[int, int] | int] = []
    for r in round_results:
        if r.black is None:
            order.append(r.white)
            continue
        if r.score is None:
            raise ValueError(f"round {r.round} is not over")
        key = (min(r.white, r.black), max(r.white, r.black))
        if key not in matches:
            matches[key] = {r.white: 0.0, r.black: 0.0}
            order.append(key)
        matches[key][r.white] += r.score
        matches[key][r.black] += 1.0 - r.score
    winners = []
    for item in order:
        if isinstance(item, int):
            winners.append(item)
            continue
        points = matches[item]
        a, b = item
        if points[a] != points[b]:
            winners.append(a if points[a] > points[b] else b)
        else:
            winners.append(a if seed.get(a, 0) < seed.get(b, 0) else b)
    return winners


def knockout_pairings(
    players: Sequence[int], results: Sequence[Result], round_no: int, withdrawn: Iterable[int] = ()
) -> list[Pairing]:
    """Round ``round_no`` of a knockout of ``players`` (seed order) after
    ``results``: two games for each match (the upper player of the bracket has
    white first), a bye where the other slot is empty or withdrew."""
    gone = set(withdrawn)
    if round_no == 1:
        size = 1 << max(1, math.ceil(math.log2(max(2, len(players)))))
        slots: list[int | None] = [players[s - 1] if s <= len(players) else None for s in bracket_order(size)]
    else:
        slots = list(knockout_winners(players, [r for r in results if r.round == round_no - 1]))
        if len(slots) % 2:
            slots.append(None)
    slots = [None if s in gone else s for s in slots]
    out = []
    for a, b in zip(slots[0::2], slots[1::2], strict=True):
        if a is not None and b is not None:
            out += [Pairing(a, b), Pairing(b, a)]
        elif a is not None:
            out.append(Pairing(a, None))
        elif b is not None:
            out.append(Pairing(b, None))
    return out
