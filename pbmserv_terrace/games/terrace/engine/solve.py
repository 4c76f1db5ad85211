"""Proofs of short forced wins, for two-army games (issue 42).

The alpha-beta search (:mod:`.search`) prunes and reduces: a mate score it returns
is a line it saw, not a proof that no defence exists.  What a review states ("loses
the T in 2", "misses a Terrace in 1") and what robot3 plays once a win is in reach
must be certain, so this module proves them by an AND-OR search over every move,
with no reduction, no pruning heuristic and no evaluation:

* ``wins_within(d)`` (d odd): the side to move has a move after which it has won,
  or, with d >= 3, after every reply it still ``wins_within(d - 2)``;
* a side with no legal move is stuck: a draw (RULES.md §5.4), never a win for the
  other side;
* the answers are kept per (position key, d) — a position proved won within d is
  won within any larger d, one proved not won within d is not won within any
  smaller d.

It is cheap where it matters: near the end most moves fail at the first reply that
escapes (replies are tried captures first, then the T's moves), and a win in one is
only a look at the captures and the T's step home.  A node budget bounds the work;
when it runs out the answer is "unknown" (None), never a guess.
"""

from __future__ import annotations

from dataclasses import dataclass

from .board import SearchBoard


class OutOfNodes(Exception):
    """The solver's node budget ran out: nothing was proved."""


@dataclass(frozen=True, slots=True)
class Proof:
    """A forced win proved for ``winner`` (an army) in ``moves`` of its own moves
    (``plies`` plies from the position), starting with ``move`` (encoded, as the
    search's moves) when the winner is the side to move, else None."""

    winner: int
    plies: int
    move: int | None

    @property
    def moves(self) -> int:
        return (self.plies + 1) // 2


class Solver:
    """Answers "can the side to move force a win within d plies?" exactly."""

    def __init__(self, sb: SearchBoard, nodes: int) -> None:
        if len(sb.alive()) != 2:
            raise ValueError("the solver proves two-army games only")
        self.sb = sb
        self.budget = nodes
        self.nodes = 0
        self.won: dict[int, int] = {}
        """key -> the smallest d proved winning for the side to move there"""
        self.not_won: dict[int, int] = {}
        """key -> the largest d proved not winning for the side to move there"""

    def _tick(self) -> None:
        self.nodes += 1
        if self.nodes > self.budget:
            raise OutOfNodes

    def _ordered(self, moves: list[int]) -> list[int]:
        """Captures first (of a T before all), then the T's own moves, then the rest."""
        sb = self.sb
        board = sb.board
        tsq = sb.tsq[sb.to_move]

        def rank(m: int) -> int:
            victim = board[m & 63]
            if victim:
                return 0 if victim & 7 == 0 else 1
            return 2 if m >> 6 == tsq else 3

        return sorted(moves, key=rank)

    def winning_move(self, d: int) -> int | None:
        """A move of the side to move that wins within ``d`` plies (odd), or None
        if there is none.  Raises OutOfNodes when the budget runs out."""
        sb = self.sb
        key = sb.hash
        if self.not_won.get(key, -1) >= d:
            return None
        mover = sb.to_move
        moves = sb.moves()
        win = None
        # A win in one first: the T's step home or a T taken, among the tactical moves.
        for m in sb.tactical_moves():
            self._tick()
            undo = sb.make(m)
            won = sb.winner == mover
            sb.unmake(undo)
            if won:
                win = m
                break
        if win is None and d >= 3:
            for m in self._ordered(moves):
                self._tick()
                undo = sb.make(m)
                try:
                    if not sb.winner and self.all_replies_lose(d - 1):
                        win = m
                finally:
                    sb.unmake(undo)
                if win is not None:
                    break
        if win is None:
            self.not_won[key] = max(self.not_won.get(key, -1), d)
        else:
            self.won[key] = min(self.won.get(key, d), d)
        return win

    def all_replies_lose(self, d: int) -> bool:
        """Every move of the side to move leaves the other side winning within
        ``d - 1`` plies (``d`` even), or ends the game in the other side's favour.
        A side with no move is stuck: a draw, so False."""
        sb = self.sb
        me = sb.to_move
        replies = sb.moves()
        if not replies:
            return False
        for r in self._ordered(replies):
            self._tick()
            undo = sb.make(r)
            try:
                if sb.winner:
                    lost = sb.winner != me
                else:
                    key = sb.hash
                    known = self.won.get(key)
                    lost = (known is not None and known <= d - 1) or self.winning_move(d - 1) is not None
            finally:
                sb.unmake(undo)
            if not lost:
                return False
        return True


def prove_win(sb: SearchBoard, max_moves: int, nodes: int) -> Proof | None:
    """The shortest forced win of the side to move within ``max_moves`` of its moves,
    proved; None when there is none that short or the budget ran out first."""
    solver = Solver(sb, nodes)
    try:
        for moves in range(1, max_moves + 1):
            m = solver.winning_move(2 * moves - 1)
            if m is not None:
                return Proof(sb.to_move, 2 * moves - 1, m)
    except OutOfNodes:
        return None
    return None


def prove_loss(sb: SearchBoard, max_moves: int, nodes: int) -> Proof | None:
    """When every move of the side to move lets the other side force a win within
    ``max_moves`` of the other side's moves, that proof (the shortest such bound);
    None when some move holds out longer, the side is stuck, or the budget ran out."""
    if sb.winner or not sb.moves():
        return None
    solver = Solver(sb, nodes)
    other = next(a for a in sb.alive() if a != sb.to_move)
    try:
        for moves in range(1, max_moves + 1):
            if solver.all_replies_lose(2 * moves):
                return Proof(other, 2 * moves, None)
    except OutOfNodes:
        return None
    return None


__all__ = ["OutOfNodes", "Proof", "Solver", "prove_loss", "prove_win"]
