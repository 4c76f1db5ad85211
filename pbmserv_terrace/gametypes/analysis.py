"""The robot's best moves in one position, as the service mails them (issue 42:
``analyze N[#k]``): game-neutral values made by a game's rules
(:meth:`.base.BoardRules.analyse`), moves in the game's own move text.

Scores are the engine's evaluation points from the point of view of the side to
move (about 100 for a small piece's worth); :attr:`AnalysedMove.mate_in` says when
the search proved a forced result instead.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class AnalysedMove:
    """One of the best moves: its score and the line the engine expects after it."""

    move: str
    """the move, as a player writes it"""
    score: int
    """the engine's evaluation after it, from the mover's point of view"""
    line: tuple[str, ...]
    """the move, then the best replies the search saw (the principal variation)"""
    mate_in: int | None = None
    """a forced result: the mover wins in this many of its moves (> 0), or loses
    after this many of the other side's (< 0); None when the score is no proof"""

    def verdict(self) -> str:
        """The score in words for the mover: ``+35``, ``wins in 2``, ``loses in 1``."""
        if self.mate_in is not None:
            n = abs(self.mate_in)
            moves = "move" if n == 1 else "moves"
            return f"wins in {n} {moves}" if self.mate_in > 0 else f"loses in {n} {moves}"
        return f"{self.score:+d}"


@dataclass(frozen=True, slots=True)
class PositionAnalysis:
    """The best moves of the side to move (best first) and how far the engine looked."""

    moves: tuple[AnalysedMove, ...]
    depth: int
    """the deepest full iteration of the search (0: not one within the budget)"""
    nodes: int
    legal: int
    """how many legal moves the side to move had"""


__all__ = ["AnalysedMove", "PositionAnalysis"]
