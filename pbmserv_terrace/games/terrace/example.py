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
    n = pos.geo.n
    dist = _goal_distances(n, pos.to_move)
    name = _name_ranks(n)

    def rank(m: Move) -> tuple[bool, int, int, int, int]:
        frm, to = m
        long = max(abs(frm % n - to % n), abs(frm // n - to // n)) > 1
        return long, dist[to] - dist[frm], dist[to], name[frm], name[to]

    return sorted(pos.legal_moves(), key=rank)


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
