"""The example move a board mail's footer shows ("e.g. d2-e3"): a legal move of
the army to move that reads well and never throws the game away (issue 38).

A move *loses at once* when, after it, the mover's T is gone (a piece may
capture its own army's T), or another army could capture it (RULES.md §6's
"Terrace!": in a game of three or four every army that moves before the mover
again may), or another army's T could step onto its goal.  The example is the
best-reading move that does not, and that takes no piece of its own army (legal,
but a poor example) when such a move exists; only when every move loses at once
is it the best-reading move of all.  A handful of integer operations per move looked at:
the first move in reading order is nearly always safe.
"""

from __future__ import annotations

from functools import cache

from .geometry import geometry
from .position import Move, Position, goal_square


@cache
def _goal_distances(n: int, army: int) -> tuple[int, ...]:
    """Per square, the king-move distance to ``army``'s goal corner."""
    gx, gy = divmod(goal_square(n, army), n)[::-1]
    return tuple(max(abs(sq % n - gx), abs(sq // n - gy)) for sq in range(n * n))


@cache
def _name_ranks(n: int) -> tuple[int, ...]:
    """Per square, its name's place among the names in string order ("a10" before
    "a2"): comparing these compares the names, without making them."""
    names = [geometry(n).name(sq) for sq in range(n * n)]
    order = sorted(range(n * n), key=names.__getitem__)
    ranks = [0] * (n * n)
    for place, sq in enumerate(order):
        ranks[sq] = place
    return tuple(ranks)


def reading_order(pos: Position) -> list[Move]:
    """The legal moves, best example first: a one-square move before a longer
    one; then the one that gains most towards the goal corner, the one that ends
    nearest it, the first by square names."""
    return sorted(pos.legal_moves(), key=_reading_keys(pos.geo.n, pos.to_move).__getitem__)


@cache
def _reading_keys(n: int, army: int) -> _ReadingKeys:
    return _ReadingKeys(n, army)


class _ReadingKeys(dict[tuple[int, int], int]):
    """Per (from, to) square pair, its place in :func:`reading_order` as one integer:
    (a longer move, gain towards the goal, distance from it after, the squares'
    names) packed so that comparing the integers compares those in that order (a
    sort by an integer costs a fraction of one by a tuple made per move).  Filled
    as pairs are met: only the few that are ever moves are kept."""

    def __init__(self, n: int, army: int) -> None:
        super().__init__()
        self.n, self.dist, self.name = n, _goal_distances(n, army), _name_ranks(n)

    def __missing__(self, pair: tuple[int, int]) -> int:
        frm, to = pair
        n, dist, name = self.n, self.dist, self.name
        long = max(abs(frm % n - to % n), abs(frm // n - to // n)) > 1
        gain = dist[to] - dist[frm] + 32  # (dist < 32: the packed fields never overlap)
        key = (((long * 64 + gain) * 64 + dist[to]) * 256 + name[frm]) * 256 + name[to]
        self[pair] = key
        return key


def reaches_goal(pos: Position, army: int) -> bool:
    """Whether ``army``'s T could step onto its goal now if ``army`` were to move
    (the goal corner is a terrace of one square: only a neighbour reaches it)."""
    tsq = pos.t_square(army)
    if tsq is None:
        return False
    n = pos.geo.n
    goal = goal_square(n, army)
    if max(abs(tsq % n - goal % n), abs(tsq // n - goal // n)) != 1:
        return False
    mover = pos if pos.to_move == army else pos.with_turn(army)
    return mover.is_legal(Move(tsq, goal))


def loses_at_once(pos: Position, move: Move) -> bool:
    """Whether ``move`` (legal in ``pos``) hands the game away: afterwards the
    mover's T is off the board, or another army could capture it or could win by
    reaching its goal before the mover moves again.  A move that ends the game in
    the mover's favour or in a draw does not."""
    army = pos.to_move
    after = pos.play(move)
    if army not in after.armies():
        return True
    outcome = after.outcome()
    if outcome is not None:
        return outcome.winner not in (army, None)
    if army in after.threatened_armies():
        return True
    return any(other != army and reaches_goal(after, other) for other in after.armies())


def example_move(pos: Position) -> Move | None:
    """The footer's example: the first move in :func:`reading_order` that does not
    :func:`lose at once <loses_at_once>` nor take a piece of its own army (legal,
    RULES.md, but a poor example), else the first safe one that does, else the first
    of all (None: no move).  Moves are looked at in that order and only until the
    answer is known: usually the first one (issue 43: the example was a fifth of a
    move mail's work in ``serve`` when every move was looked at)."""
    moves = reading_order(pos)
    own: list[Move] = []
    for m in moves:
        if takes_own(pos, m):
            own.append(m)  # (looked at only if no other move is safe)
        elif not loses_at_once(pos, m):
            return m
    return next((m for m in own if not loses_at_once(pos, m)), moves[0] if moves else None)


def takes_own(pos: Position, move: Move) -> bool:
    """``move`` captures a piece of the mover's own army."""
    return pos.board[move.to] >> 3 == pos.to_move
