"""A mutable board for the search: make/unmake instead of copying positions.

The rules' :class:`Position` is an immutable value, which is right for the service
but costs an allocation per node.  The search instead changes one
:class:`SearchBoard` in place and undoes each move, keeping the same bitmasks as
the rules (army masks, cumulative size masks, occupancy) plus the T squares, the
winner, and an incrementally updated Zobrist hash.  Moves are small ints
``frm << 6 | to`` so ordering and the tables use cheap keys; :func:`to_move_obj`
converts back to a rules :class:`Move`.  The tests check that the moves generated
here equal the rules' legal moves along random games.  The search's generator
(:meth:`SearchBoard.split_moves`) gives quiet moves and captures apart and looks a
piece's moves up by its target mask instead of expanding the mask bit by bit.
"""

from __future__ import annotations

from pbmserv_terrace.games.terrace import Move, Position, goal_square
from pbmserv_terrace.games.terrace.pieces import KIND_T, SIZE

from .zobrist import hash_board, keys

Undo = tuple[int, int, int, int, list[int], list[int], int, int, int, int, list[int], list[tuple[int, int]] | None]


_MOVE_LISTS: dict[int, tuple[int, ...]] = {}
"""The moves from a square to a mask of targets, by ``targets << 6 | square``: a
piece's moves are looked up instead of expanded bit by bit (it seldom has new
targets from one node to the next)."""
_MOVE_LISTS_MAX = 1 << 18


def _expand(sq: int, targets: int) -> tuple[int, ...]:
    """The moves ``sq << 6 | to`` for each square ``to`` of ``targets``, ascending."""
    base = sq << 6
    out = []
    while targets:
        t = targets & -targets
        out.append(base | (t.bit_length() - 1))
        targets ^= t
    return tuple(out)


def encode(move: Move) -> int:
    return move.frm << 6 | move.to


def to_move_obj(m: int) -> Move:
    return Move(m >> 6, m & 63)


class SearchBoard:
    """The position being searched.  ``winner`` is the army that has won (0: none)."""

    __slots__ = (
        "am",
        "attackers_of",
        "board",
        "capture",
        "down",
        "full",
        "goal",
        "hash",
        "le",
        "n",
        "occ",
        "piece_keys",
        "reach",
        "tmask",
        "to_move",
        "tsq",
        "turn_keys",
        "up",
        "winner",
    )

    def __init__(self, pos: Position) -> None:
        geo = pos.geo
        n = geo.n
        self.n = n
        self.board = list(pos.board)
        self.am = list(pos.army_mask)
        self.le = list(pos.size_mask)
        self.occ = pos.occ
        self.to_move = pos.to_move
        self.up, self.down, self.capture = geo.up, geo.down, geo.capture
        self.reach, self.tmask, self.full = geo.reach, geo.terrace_mask, geo.full
        # attackers_of[sq]: squares from which a piece could capture on sq (one level
        # up, diagonally).  Every piece is at least a T's size, so any enemy piece
        # standing there threatens a T on sq.
        att = [0] * (n * n)
        for s in range(n * n):
            m = geo.capture[s]
            while m:
                low = m & -m
                att[low.bit_length() - 1] |= 1 << s
                m ^= low
        self.attackers_of = tuple(att)
        self.goal = (0, *(goal_square(n, a) for a in (1, 2, 3, 4)))
        self.tsq = [-1] * 5
        for a in (1, 2, 3, 4):
            t = pos.t_square(a)
            self.tsq[a] = -1 if t is None else t
        self.piece_keys, self.turn_keys = keys(n)
        self.hash = hash_board(n, self.board, self.to_move)
        out = pos.outcome()
        self.winner = out.winner if out is not None and out.winner is not None else 0

    # ----------------------------------------------------------------- queries
    def alive(self) -> list[int]:
        return [a for a in (1, 2, 3, 4) if self.am[a]]

    def targets(self, sq: int) -> int:
        """Bitmask of the squares the piece on ``sq`` may move to (RULES.md §4)."""
        occ = self.occ
        army = self.board[sq] >> 3
        empty = ~occ & self.full
        blockers = occ & ~self.am[army] & self.tmask[sq]
        return ((self.up[sq] | self.down[sq] | self.reach[sq][blockers]) & empty) | (
            self.capture[sq] & self.le[SIZE[self.board[sq]]]
        )

    def moves(self) -> list[int]:
        """Legal moves of the side to move (empty when the game is over)."""
        if self.winner:
            return []
        out: list[int] = []
        army = self.to_move
        mask = self.am[army]
        occ, board, le = self.occ, self.board, self.le
        empty = ~occ & self.full
        others = occ & ~mask
        up, down, reach, tmask, capture = self.up, self.down, self.reach, self.tmask, self.capture
        while mask:
            low = mask & -mask
            sq = low.bit_length() - 1
            mask ^= low
            # as targets(sq), inlined: this is the search's hottest loop
            tg = ((up[sq] | down[sq] | reach[sq][others & tmask[sq]]) & empty) | (capture[sq] & le[SIZE[board[sq]]])
            base = sq << 6
            while tg:
                t = tg & -tg
                out.append(base | (t.bit_length() - 1))
                tg ^= t
        return out

    def split_moves(self) -> tuple[list[int], list[int]]:
        """:meth:`moves` as (moves to an empty square, captures), each ascending as
        :meth:`moves` is (so ``min`` of the two firsts is ``moves()[0]``): the
        search orders the quiet ones by one comprehension."""
        quiet: list[int] = []
        caps: list[int] = []
        if self.winner:
            return quiet, caps
        army = self.to_move
        mask = self.am[army]
        occ, board, le = self.occ, self.board, self.le
        empty = ~occ & self.full
        others = occ & ~mask
        up, down, reach, tmask, capture = self.up, self.down, self.reach, self.tmask, self.capture
        lists = _MOVE_LISTS
        if len(lists) > _MOVE_LISTS_MAX:
            lists.clear()
        get = lists.get
        while mask:
            low = mask & -mask
            sq = low.bit_length() - 1
            mask ^= low
            tg = (up[sq] | down[sq] | reach[sq][others & tmask[sq]]) & empty
            if tg:
                key = tg << 6 | sq
                ms = get(key)
                if ms is None:
                    ms = lists[key] = _expand(sq, tg)
                quiet += ms
            tg = capture[sq] & le[SIZE[board[sq]]]
            if tg:
                key = tg << 6 | sq
                ms = get(key)
                if ms is None:
                    ms = lists[key] = _expand(sq, tg)
                caps += ms
        return quiet, caps

    def tactical_moves(self) -> list[int]:
        """Captures of other armies' pieces, and the T's step onto its goal: the
        moves the quiescence search follows."""
        if self.winner:
            return []
        army = self.to_move
        enemy = self.occ & ~self.am[army]
        out: list[int] = []
        mask = self.am[army]
        board, capture, le = self.board, self.capture, self.le
        while mask:
            low = mask & -mask
            sq = low.bit_length() - 1
            mask ^= low
            tg = capture[sq] & le[SIZE[board[sq]]] & enemy
            base = sq << 6
            while tg:
                t = tg & -tg
                out.append(base | (t.bit_length() - 1))
                tg ^= t
        tsq = self.tsq[army]
        if tsq >= 0:
            goal = self.goal[army]
            if self.targets(tsq) >> goal & 1 and not enemy >> goal & 1:  # (an enemy there: a capture above)
                out.append(tsq << 6 | goal)
        return out

    def mobility(self, army: int) -> int:
        """How many moves ``army`` would have if it were to move."""
        occ = self.occ
        empty = ~occ & self.full
        blockers_all = occ & ~self.am[army]
        up, down, reach, tmask, capture, le, board = self.up, self.down, self.reach, self.tmask, self.capture, self.le, self.board
        count = 0
        mask = self.am[army]
        while mask:
            low = mask & -mask
            sq = low.bit_length() - 1
            mask ^= low
            count += (
                ((up[sq] | down[sq] | reach[sq][blockers_all & tmask[sq]]) & empty) | (capture[sq] & le[SIZE[board[sq]]])
            ).bit_count()
        return count

    def t_attackers(self, army: int) -> int:
        """Mask of other armies' pieces that could capture ``army``'s T next."""
        tsq = self.tsq[army]
        if tsq < 0:
            return 0
        return self.attackers_of[tsq] & self.occ & ~self.am[army]

    def next_army(self, after: int) -> int:
        am = self.am
        for step in (1, 2, 3, 4):
            a = (after - 1 + step) % 4 + 1
            if am[a]:
                return a
        return after

    # ------------------------------------------------------------ make/unmake
    def make(self, m: int) -> Undo:
        """Play move ``m`` (legal) and return what :meth:`unmake` needs to undo it."""
        frm, to = m >> 6, m & 63
        board = self.board
        piece = board[frm]
        captured = board[to]
        old_am, old_le, old_tsq = self.am, self.le, self.tsq
        old_occ, old_to_move, old_hash, old_winner = self.occ, self.to_move, self.hash, self.winner
        removed: list[tuple[int, int]] | None = None
        pk = self.piece_keys
        h = self.hash ^ self.turn_keys[self.to_move] ^ pk[piece][frm] ^ pk[piece][to]
        board[to] = piece
        board[frm] = 0
        army = piece >> 3
        fb, tb = 1 << frm, 1 << to
        am = old_am.copy()
        le = old_le.copy()
        am[army] ^= fb | tb
        occ = self.occ ^ fb
        if piece & 7 == KIND_T:
            self.tsq = tsq = old_tsq.copy()
            tsq[army] = to
        if captured:
            h ^= pk[captured][to]
            gone = captured >> 3
            am[gone] ^= tb
            for k in range(SIZE[captured], 5):
                le[k] ^= tb
        else:
            occ ^= tb
        for k in range(SIZE[piece], 5):
            le[k] ^= fb | tb
        self.am, self.le, self.occ = am, le, occ
        if captured and captured & 7 == KIND_T:
            # The T's army leaves the board (RULES.md §5.1).
            removed = []
            mask = am[gone]
            while mask:
                low = mask & -mask
                sq = low.bit_length() - 1
                mask ^= low
                p = board[sq]
                removed.append((sq, p))
                board[sq] = 0
                h ^= pk[p][sq]
                for k in range(SIZE[p], 5):
                    le[k] &= ~low
                self.occ &= ~low
            am[gone] = 0
            if self.tsq is old_tsq:
                self.tsq = old_tsq.copy()
            self.tsq[gone] = -1
            alive = [a for a in (1, 2, 3, 4) if am[a]]
            if len(alive) == 1:
                self.winner = alive[0]
        if piece & 7 == KIND_T and to == self.goal[army]:
            self.winner = army
        nxt = army % 4 + 1  # as next_army(army), inlined
        while not am[nxt] and nxt != army:
            nxt = nxt % 4 + 1
        self.to_move = nxt
        self.hash = h ^ self.turn_keys[nxt]
        return (frm, to, piece, captured, old_am, old_le, old_occ, old_to_move, old_hash, old_winner, old_tsq, removed)

    def unmake(self, undo: Undo) -> None:
        frm, to, piece, captured, am, le, occ, to_move, h, winner, tsq, removed = undo
        board = self.board
        if removed:  # first: the mover itself may be among them (it took its own T)
            for sq, p in removed:
                board[sq] = p
        board[frm] = piece
        board[to] = captured
        self.am, self.le, self.occ, self.to_move, self.hash, self.winner, self.tsq = am, le, occ, to_move, h, winner, tsq

    def to_position(self) -> Position:
        return Position(self.n, list(self.board), self.to_move)
