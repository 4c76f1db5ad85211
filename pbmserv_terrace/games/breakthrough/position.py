"""A Breakthrough position: two bitmasks of pawns and the side to move.

Square ``sq`` is ``rank * n + file`` (0-based): a1 is 0, b1 is 1, a2 is ``n``.
White (army 1) starts on ranks 1-2 and moves up; Black (army 2) starts on the
top two ranks and moves down.  Positions are immutable values: :meth:`Position.play`
returns a new one.

>>> pos = start_position("8x8")
>>> len(pos.legal_moves())
22
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import NamedTuple

WHITE = 1
BLACK = 2
ARMIES = (WHITE, BLACK)
ARMY_NAMES = {WHITE: "White", BLACK: "Black"}

SETUPS = ("8x8", "6x6")
"""the setups a game may start from; the first is the default"""
SETUP_SIZES = {"8x8": 8, "6x6": 6}
SIZES = (6, 8)
"""the board sizes a position may have"""


class IllegalMoveError(ValueError):
    """A move the rules refuse (or cannot read); the message is a sentence for the player."""


class Move(NamedTuple):
    """A pawn's step from square ``frm`` to square ``to`` (a capture when ``to``
    holds an enemy pawn)."""

    frm: int
    to: int


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a finished position ended: ``winner`` is an army (never None: Breakthrough
    has no draws by rule)."""

    winner: int
    reason: str


class Geometry(NamedTuple):
    """The masks of an ``n`` x ``n`` board."""

    n: int
    full: int
    not_first_file: int
    """every square but file a (a pawn there has a diagonal to its left)"""
    not_last_file: int
    ranks: tuple[int, ...]
    """the mask of each rank, rank 1 first"""


@cache
def geometry(n: int) -> Geometry:
    if n not in SIZES:
        raise ValueError(f"Breakthrough is played on a {' or '.join(f'{s}x{s}' for s in SIZES)} board, not {n}x{n}")
    full = (1 << n * n) - 1
    file_a = sum(1 << r * n for r in range(n))
    file_last = file_a << (n - 1)
    ranks = tuple(((1 << n) - 1) << r * n for r in range(n))
    return Geometry(n, full, full & ~file_a, full & ~file_last, ranks)


def forward(army: int, n: int) -> int:
    """How a square number changes when ``army``'s pawn steps straight forward."""
    return n if army == WHITE else -n


def other(army: int) -> int:
    return BLACK if army == WHITE else WHITE


def goal_rank(army: int, n: int) -> int:
    """The 0-based rank ``army`` wins by reaching (the opponent's home row)."""
    return n - 1 if army == WHITE else 0


def targets(n: int, own: int, opp: int, army: int) -> tuple[int, int, int]:
    """The squares ``army``'s pawns (``own``) can step to, as three masks: straight
    ahead (empty squares only), diagonally to the lower file, diagonally to the
    higher file (empty or enemy squares).  The pawn of a target square ``to`` is on
    ``to - n``, ``to - n + 1``, ``to - n - 1`` for White and ``to + n``,
    ``to + n + 1``, ``to + n - 1`` for Black."""
    g = geometry(n)
    empty = g.full & ~(own | opp)
    if army == WHITE:
        straight = (own << n) & empty
        left = ((own & g.not_first_file) << (n - 1)) & g.full & ~own
        right = ((own & g.not_last_file) << (n + 1)) & g.full & ~own
    else:
        straight = (own >> n) & empty
        left = ((own & g.not_first_file) >> (n + 1)) & ~own
        right = ((own & g.not_last_file) >> (n - 1)) & ~own
    return straight, left, right


def bits(mask: int) -> Iterator[int]:
    """The squares of ``mask``, lowest first."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def moves_of(n: int, own: int, opp: int, army: int) -> list[Move]:
    """Every move of ``army``'s pawns ``own`` against ``opp``, ordered by
    (from, to) square (whether or not the game is over)."""
    straight, left, right = targets(n, own, opp, army)
    step = forward(army, n)
    found = [Move(to - step, to) for to in bits(straight)]
    found += [Move(to - step + 1, to) for to in bits(left)]
    found += [Move(to - step - 1, to) for to in bits(right)]
    found.sort()
    return found


@dataclass(frozen=True, slots=True)
class Position:
    """Pawns of both armies and the army to move (1 White, 2 Black) on an ``n`` x ``n`` board."""

    n: int
    white: int
    """bitmask of White's pawns (bit ``sq``)"""
    black: int
    to_move: int

    def __post_init__(self) -> None:
        g = geometry(self.n)
        if self.white & self.black or (self.white | self.black) & ~g.full:
            raise ValueError("two pawns on one square, or a pawn off the board")
        if self.to_move not in ARMIES:
            raise ValueError(f"army {self.to_move} is not White (1) or Black (2)")

    # ----------------------------------------------------------------- queries
    def pawns(self, army: int) -> int:
        """The bitmask of ``army``'s pawns."""
        return self.white if army == WHITE else self.black

    def army_at(self, sq: int) -> int:
        """The army of the pawn on ``sq``, or 0 when it is empty."""
        bit = 1 << sq
        return WHITE if self.white & bit else BLACK if self.black & bit else 0

    def armies(self) -> list[int]:
        """Both armies, in turn order (an army stays in the game until it has lost,
        even with no pawn left: :meth:`outcome` says so)."""
        return list(ARMIES)

    def material(self) -> int:
        """The pawns on the board (never grows)."""
        return self.white.bit_count() + self.black.bit_count()

    def winner_on_board(self) -> tuple[int, str] | None:
        """An army that has won by pawns alone (a pawn on its goal row, or the
        enemy without pawns), with the reason; None otherwise."""
        g, n = geometry(self.n), self.n
        if self.white & g.ranks[n - 1]:
            return WHITE, f"a White pawn reached rank {n}"
        if self.black & g.ranks[0]:
            return BLACK, "a Black pawn reached rank 1"
        if not self.black:
            return WHITE, "Black has no pawns left"
        if not self.white:
            return BLACK, "White has no pawns left"
        return None

    def outcome(self) -> Outcome | None:
        """The result if the game is over, else None."""
        won = self.winner_on_board()
        if won is not None:
            return Outcome(*won)
        if not any(self.targets()):
            return Outcome(other(self.to_move), f"{ARMY_NAMES[self.to_move]} has no legal move")
        return None

    def is_over(self) -> bool:
        return self.outcome() is not None

    def announcements(self) -> list[str]:
        """Sentences about the position for the status block: a pawn one step from
        the goal row (the side to move must capture it or lose)."""
        if self.winner_on_board() is not None:
            return []
        g, n = geometry(self.n), self.n
        mover, waiting = self.to_move, other(self.to_move)
        near = g.ranks[1] if waiting == BLACK else g.ranks[n - 2]
        squares = list(bits(self.pawns(waiting) & near))
        if not squares:
            return []
        names = " and ".join(f"{'abcdefgh'[sq % n]}{sq // n + 1}" for sq in squares)
        return [f"{ARMY_NAMES[waiting]}'s pawn on {names} threatens to break through; {ARMY_NAMES[mover]} is to move."]

    def targets(self) -> tuple[int, int, int]:
        """The target masks (:func:`targets`) of the side to move."""
        own, opp = (self.white, self.black) if self.to_move == WHITE else (self.black, self.white)
        return targets(self.n, own, opp, self.to_move)

    def legal_moves(self) -> list[Move]:
        """The moves of the side to move, by (from, to) square; none once the game is over."""
        if self.winner_on_board() is not None:
            return []
        own, opp = (self.white, self.black) if self.to_move == WHITE else (self.black, self.white)
        return moves_of(self.n, own, opp, self.to_move)

    def is_legal(self, move: Move) -> bool:
        n = self.n
        frm, to = move
        if not (0 <= frm < n * n and 0 <= to < n * n) or self.winner_on_board() is not None:
            return False
        if self.army_at(frm) != self.to_move or to - frm - forward(self.to_move, n) not in (-1, 0, 1):
            return False
        if abs(to % n - frm % n) > 1:
            return False  # (a step off one edge onto the other)
        if to % n == frm % n:
            return self.army_at(to) == 0
        return self.army_at(to) != self.to_move

    def is_capture(self, move: Move) -> bool:
        return self.army_at(move.to) == other(self.to_move)

    # ---------------------------------------------------------------- changes
    def play(self, move: Move) -> Position:
        """The position after ``move`` (:class:`IllegalMoveError` when it is not legal)."""
        if not self.is_legal(move):
            raise IllegalMoveError(f"{move} is not a legal move here")
        frm, to = 1 << move.frm, 1 << move.to
        if self.to_move == WHITE:
            return Position(self.n, self.white ^ frm | to, self.black & ~to, BLACK)
        return Position(self.n, self.white & ~to, self.black ^ frm | to, WHITE)

    def without_army(self, army: int) -> Position:
        """The position with ``army``'s pawns taken off (a resignation or forfeit):
        the other army has won."""
        if army == WHITE:
            return Position(self.n, 0, self.black, self.to_move)
        return Position(self.n, self.white, 0, self.to_move)

    def with_turn(self, army: int) -> Position:
        """The same pawns with ``army`` to move."""
        return Position(self.n, self.white, self.black, army)


def start_position(setup: str = "8x8") -> Position:
    """The start of ``setup`` (``8x8`` or ``6x6``): each army on its two home rows, White to move."""
    n = SETUP_SIZES.get(setup.lower().lstrip("-"))
    if n is None:
        raise ValueError(f"there is no Breakthrough setup {setup!r}: choose {' or '.join('-' + s for s in SETUPS)}")
    g = geometry(n)
    return Position(n, g.ranks[0] | g.ranks[1], g.ranks[n - 2] | g.ranks[n - 1], WHITE)


def perft(pos: Position, depth: int) -> int:
    """The number of move sequences of ``depth`` plies from ``pos`` (a sequence
    whose game ends before ``depth`` plies counts none)."""
    if depth == 0:
        return 1
    moves = pos.legal_moves()
    if depth == 1:
        return len(moves)
    return sum(perft(pos.play(m), depth - 1) for m in moves)
