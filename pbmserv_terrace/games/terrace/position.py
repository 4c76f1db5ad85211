"""A Terrace position: pieces, side to move, legal moves, end of game (RULES.md §4–§6).

Positions are immutable values: :meth:`Position.play` returns a new one.  The
board is a list of piece ints (see :mod:`.pieces`) plus bitmasks per army and per
piece size, so that counting and generating moves are a handful of integer
operations per piece (bulk perft counts run at over a million leaves a second).
The server's questions about one position are answered without the legal-move
list where they can be: :meth:`Position.is_legal` looks at the one piece's target
mask, :meth:`Position.outcome` and :meth:`Position.has_legal_move` stop at the
first piece that can move, and the list itself hands out shared ``Move`` tuples.

>>> from pbmserv_terrace.games.terrace.setups import start_position
>>> len(start_position("long").legal_moves())
50
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import NamedTuple

from .geometry import Geometry, geometry
from .pieces import ARMIES, KIND_T, SIZE, make_piece


class Move(NamedTuple):
    """A move from square ``frm`` to square ``to`` (a capture when ``to`` is occupied)."""

    frm: int
    to: int


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a finished position ended: ``winner`` is an army, or None for a draw."""

    winner: int | None
    reason: str


def goal_square(n: int, army: int) -> int:
    """The low corner army ``army``'s T aims at (RULES.md §3).

    Armies starting on rank 1 or file a aim at the top-right low corner, the
    others at a1.  On 8x8 those are armies 1 and 4; on 6x6 armies 1 and 3.
    """
    top_right = (1, 4) if n == 8 else (1, 3)
    return n * n - 1 if army in top_right else 0


@cache
def _goals(n: int) -> tuple[tuple[int, int, int], ...]:
    """(army, goal square, that army's T) for armies 1..4 on the N x N board."""
    return tuple((army, goal_square(n, army), make_piece(army, KIND_T)) for army in ARMIES)


@cache
def _move_table(n: int) -> tuple[tuple[Move, ...], ...]:
    """``_move_table(n)[frm][to] == Move(frm, to)``: the generator hands out these
    shared (immutable) tuples instead of building a new one per move."""
    count = n * n
    return tuple(tuple(Move(frm, to) for to in range(count)) for frm in range(count))


@cache
def _attackers_of(n: int) -> tuple[int, ...]:
    """``_attackers_of(n)[sq]``: the squares whose capture mask holds ``sq`` (one level
    up, diagonally): any piece there threatens a T on ``sq``."""
    geo = geometry(n)
    return tuple(sum(1 << s for s in range(n * n) if geo.capture[s] >> sq & 1) for sq in range(n * n))


class Position:
    """An immutable Terrace position.  Build one with :func:`setups.start_position`
    or :func:`notation.parse_tpn`; never mutate its fields."""

    __slots__ = ("_moves", "army_mask", "board", "geo", "occ", "size_mask", "to_move")

    geo: Geometry
    board: list[int]
    army_mask: list[int]
    """index 1..4: squares holding that army's pieces (index 0 unused)"""
    size_mask: list[int]
    """index s: squares holding pieces of size <= s (index 0 unused)"""
    occ: int
    to_move: int

    def __init__(self, n: int, board: list[int], to_move: int) -> None:
        geo = geometry(n)
        if len(board) != n * n:
            raise ValueError("board has the wrong number of squares")
        self.geo = geo
        self.board = list(board)
        army_mask = [0] * 5
        by_size = [0] * 5
        for sq, p in enumerate(self.board):
            if p:
                bit = 1 << sq
                army_mask[p >> 3] |= bit
                by_size[SIZE[p]] |= bit
        self.army_mask = army_mask
        self.size_mask = [0, by_size[1], by_size[1] | by_size[2], by_size[1] | by_size[2] | by_size[3], 0]
        self.size_mask[4] = self.size_mask[3] | by_size[4]
        self.occ = self.size_mask[4]
        self.to_move = to_move
        self._moves: list[Move] | None = None

    # ----------------------------------------------------------------- queries
    @property
    def n(self) -> int:
        return self.geo.n

    def armies(self) -> list[int]:
        """Armies still on the board, in turn order."""
        return [a for a in ARMIES if self.army_mask[a]]

    def piece_at(self, sq: int) -> int:
        return self.board[sq]

    def t_square(self, army: int) -> int | None:
        """Where ``army``'s T stands, or None."""
        # A piece int names its army, so the first square holding army's T is the
        # lowest square of army's mask holding it.
        try:
            return self.board.index(make_piece(army, KIND_T))
        except ValueError:
            return None

    def _winner_on_board(self) -> tuple[int, str] | None:
        board, army_mask = self.board, self.army_mask
        alive, last = 0, 0
        for army, goal, t in _goals(self.geo.n):
            if army_mask[army]:
                if board[goal] == t:
                    return army, "its T reached its goal"
                alive += 1
                last = army
        if alive == 1:
            return last, "it is the last army on the board"
        return None

    def outcome(self) -> Outcome | None:
        """The result if the game is over on the board (RULES.md §5), else None."""
        won = self._winner_on_board()
        if won:
            return Outcome(won[0], won[1])
        if not self._any_move():
            return Outcome(None, f"army {self.to_move} has no legal move")
        return None

    def has_legal_move(self) -> bool:
        """``bool(self.legal_moves())`` without building the list: stops at the first
        piece of the army to move that has a target."""
        return self._winner_on_board() is None and self._any_move()

    def _any_move(self) -> bool:
        """Whether some piece of the army to move has a target (the board not yet
        checked for a winner)."""
        if self._moves is not None:
            return bool(self._moves)
        geo = self.geo
        board, occ = self.board, self.occ
        empty = ~occ & geo.full
        mask = self.army_mask[self.to_move]
        blockers_all = occ & ~mask
        up, down, capture, reach, tmask = geo.up, geo.down, geo.capture, geo.reach, geo.terrace_mask
        size_mask = self.size_mask
        while mask:
            low = mask & -mask
            sq = low.bit_length() - 1
            mask ^= low
            if ((up[sq] | down[sq] | reach[sq][blockers_all & tmask[sq]]) & empty) | (capture[sq] & size_mask[SIZE[board[sq]]]):
                return True
        return False

    def is_over(self) -> bool:
        return self.outcome() is not None

    # ------------------------------------------------------------ move making
    def _targets(self, sq: int, army: int) -> int:
        """Bitmask of the squares the piece on ``sq`` may move to."""
        geo = self.geo
        empty = ~self.occ & geo.full
        p = self.board[sq]
        blockers = (self.occ & ~self.army_mask[army]) & geo.terrace_mask[sq]
        return (
            ((geo.up[sq] | geo.down[sq]) & empty)
            | (geo.capture[sq] & self.size_mask[SIZE[p]])
            | (geo.reach[sq][blockers] & empty)
        )

    def legal_moves(self) -> list[Move]:
        """Every legal move of the army to move; empty when the game is over."""
        if self._moves is not None:
            return self._moves
        moves: list[Move] = []
        if self._winner_on_board() is None:
            geo = self.geo
            board, occ = self.board, self.occ
            empty = ~occ & geo.full
            mask = self.army_mask[self.to_move]
            blockers_all = occ & ~mask
            up, down, capture, reach, tmask = geo.up, geo.down, geo.capture, geo.reach, geo.terrace_mask
            size_mask = self.size_mask
            table = _move_table(geo.n)
            append = moves.append
            while mask:
                low = mask & -mask
                sq = low.bit_length() - 1
                mask ^= low
                targets = ((up[sq] | down[sq] | reach[sq][blockers_all & tmask[sq]]) & empty) | (
                    capture[sq] & size_mask[SIZE[board[sq]]]
                )
                row = table[sq]
                while targets:
                    t = targets & -targets
                    append(row[t.bit_length() - 1])
                    targets ^= t
        self._moves = moves
        return moves

    def count_moves(self) -> int:
        """``len(self.legal_moves())`` without building the list (bulk perft)."""
        if self._winner_on_board() is not None:
            return 0
        geo = self.geo
        board, occ = self.board, self.occ
        empty = ~occ & geo.full
        army = self.to_move
        mask = self.army_mask[army]
        blockers_all = occ & ~mask
        up, down, capture, reach, tmask = geo.up, geo.down, geo.capture, geo.reach, geo.terrace_mask
        size_mask = self.size_mask
        count = 0
        while mask:
            low = mask & -mask
            sq = low.bit_length() - 1
            mask ^= low
            count += (
                ((up[sq] | down[sq] | reach[sq][blockers_all & tmask[sq]]) & empty) | (capture[sq] & size_mask[SIZE[board[sq]]])
            ).bit_count()
        return count

    def is_legal(self, move: Move) -> bool:
        """``move in self.legal_moves()``, answered from the one piece's target mask."""
        count = len(self.board)
        if isinstance(move, tuple) and len(move) == 2:
            frm, to = move
            if type(frm) is int and type(to) is int and 0 <= frm < count and 0 <= to < count:
                army = self.to_move
                if not self.army_mask[army] >> frm & 1 or self._winner_on_board() is not None:
                    return False
                return bool(self._targets(frm, army) >> to & 1)
        # Anything else (a bool, a float, a square off the board) compares as the list does.
        return move in self.legal_moves()

    def play(self, move: Move) -> Position:
        """The position after ``move`` (which must be legal; see :meth:`is_legal`).

        Applies RULES.md §5.1: a captured T removes its whole army.
        """
        frm, to = move
        board = self.board.copy()
        piece = board[frm]
        captured = board[to]
        board[to] = piece
        board[frm] = 0
        nxt = Position.__new__(Position)
        if captured and captured & 7 == KIND_T:
            gone = captured >> 3
            for sq, p in enumerate(board):
                if p >> 3 == gone:
                    board[sq] = 0
            nxt._init_from(self.geo, board)
        else:
            # Incremental masks: only the two squares change.
            fb, tb = 1 << frm, 1 << to
            army_mask = self.army_mask.copy()
            size_mask = self.size_mask.copy()
            army_mask[piece >> 3] ^= fb | tb
            occ = self.occ ^ fb
            if captured:
                army_mask[captured >> 3] ^= tb
                for k in range(SIZE[captured], 5):
                    size_mask[k] ^= tb
            else:
                occ ^= tb
            for k in range(SIZE[piece], 5):
                size_mask[k] ^= fb | tb
            nxt.geo = self.geo
            nxt.board = board
            nxt.army_mask = army_mask
            nxt.size_mask = size_mask
            nxt.occ = occ
            nxt._moves = None
        nxt.to_move = nxt._next_army(piece >> 3)
        return nxt

    def _init_from(self, geo: Geometry, board: list[int]) -> None:
        self.geo = geo
        self.board = board
        army_mask = [0] * 5
        by_size = [0] * 5
        for sq, p in enumerate(board):
            if p:
                bit = 1 << sq
                army_mask[p >> 3] |= bit
                by_size[SIZE[p]] |= bit
        s1 = by_size[1]
        s2 = s1 | by_size[2]
        s3 = s2 | by_size[3]
        s4 = s3 | by_size[4]
        self.army_mask = army_mask
        self.size_mask = [0, s1, s2, s3, s4]
        self.occ = s4
        self._moves = None

    def _next_army(self, after: int) -> int:
        for step in range(1, 5):
            army = (after - 1 + step) % 4 + 1
            if self.army_mask[army]:
                return army
        return after

    def without_army(self, army: int) -> Position:
        """The position with ``army`` removed (resignation or forfeit of a seat in a
        game of three or four, RULES.md §5).  The turn passes on if it was theirs."""
        board = [0 if p >> 3 == army else p for p in self.board]
        nxt = Position.__new__(Position)
        nxt._init_from(self.geo, board)
        nxt.to_move = self.to_move if self.to_move != army else nxt._next_army(army)
        if not nxt.army_mask[nxt.to_move]:
            nxt.to_move = nxt._next_army(nxt.to_move)
        return nxt

    def with_turn(self, army: int) -> Position:
        """The same pieces with ``army`` to move."""
        nxt = Position.__new__(Position)
        nxt._init_from(self.geo, list(self.board))
        nxt.to_move = army
        return nxt

    def moves_from(self, sq: int) -> Iterator[Move]:
        for m in self.legal_moves():
            if m.frm == sq:
                yield m

    def copy(self) -> Position:
        """An equal position that shares nothing mutable with this one (the board
        and masks are copied; the legal moves are found again when asked for)."""
        nxt = Position.__new__(Position)
        nxt.geo = self.geo
        nxt.board = self.board.copy()
        nxt.army_mask = self.army_mask.copy()
        nxt.size_mask = self.size_mask.copy()
        nxt.occ = self.occ
        nxt.to_move = self.to_move
        nxt._moves = None
        return nxt

    # ---------------------------------------------------------- announcements
    def threatened_armies(self) -> list[int]:
        """Armies whose T another army could capture if it were to move now (§6)."""
        attacked_from = _attackers_of(self.geo.n)
        out = []
        for army in self.armies():
            tsq = self.t_square(army)
            if tsq is None:
                continue
            attackers = self.occ & ~self.army_mask[army]
            # A piece on a diagonal square one level above T captures it (every piece
            # is at least T's size).  Those squares are exactly the squares whose
            # capture mask contains tsq.
            if attackers & attacked_from[tsq]:
                out.append(army)
        return out

    def announcements(self) -> list[str]:
        """The courtesy calls of RULES.md §6: ``Terrace!`` / ``Terrace-mate`` lines."""
        if self._winner_on_board() is not None:
            return []
        lines = []
        two_player = len(self.armies()) == 2
        for army in self.threatened_armies():
            if two_player and army == self.to_move and self._is_mate():
                lines.append(f"Terrace-mate! Army {army}'s T cannot escape capture.")
            else:
                lines.append(f"Terrace! Army {army}'s T can be captured.")
        return lines

    def _is_mate(self) -> bool:
        army = self.to_move
        for move in self.legal_moves():
            after = self.play(move)
            won = after._winner_on_board()
            if won is not None:
                if won[0] == army:
                    return False
                continue
            if not after._any_move():
                return False
            if army in after.armies() and army not in after.threatened_armies():
                return False
        return True

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Position)
            and self.geo.n == other.geo.n
            and self.board == other.board
            and self.to_move == other.to_move
        )

    def __hash__(self) -> int:
        return hash((self.geo.n, tuple(self.board), self.to_move))

    def __repr__(self) -> str:
        # No text of the position here: TPN lives in notation (which imports this module).
        return f"<Position {self.geo.n}x{self.geo.n}, {bin(self.occ).count('1')} pieces, army {self.to_move} to move>"
