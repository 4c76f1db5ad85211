"""Perft (RULES.md §9): count the leaf nodes of the legal-move tree.

Two plies are bulk-counted at once (:func:`_perft2`).  At a node two plies above the
leaves, the opponent's move count is computed once per piece; after each of the
mover's moves only the opponent's pieces whose moves that move can change (the
``influence`` table of :mod:`.geometry`: neighbours and terrace of the two squares)
are recounted, from masks adjusted in local variables — no position is built for
those ~50 children.  Moves that end the game (a T home, a T captured) take the slow
path through :meth:`Position.play`.  The tests check the counts against the slow
reference generator on random games and random boards.
"""

from __future__ import annotations

from .notation import format_move
from .pieces import KIND_T, SIZE
from .position import Move, Position, goal_square


def perft(pos: Position, depth: int) -> int:
    """Number of move sequences of length ``depth`` from ``pos``; finished games have none."""
    if depth == 0:
        return 1
    if depth == 1:
        return pos.count_moves()
    if depth == 2:
        return _perft2(pos)
    total = 0
    for move in pos.legal_moves():
        total += perft(pos.play(move), depth - 1)
    return total


def _perft2(pos: Position) -> int:
    """perft(pos, 2): for each move, the reply count, recounted incrementally."""
    if pos.outcome() is not None:  # won, or no legal move: no sequences
        return 0
    geo = pos.geo
    board, occ, army_mask, size_mask = pos.board, pos.occ, pos.army_mask, pos.size_mask
    up, down, capture, reach, tmask, infl = geo.up, geo.down, geo.capture, geo.reach, geo.terrace_mask, geo.influence
    full = geo.full
    mover = pos.to_move
    opp = next((a for a in ((mover + k - 1) % 4 + 1 for k in (1, 2, 3)) if army_mask[a]), mover)
    if opp == mover:
        return 0
    goal = goal_square(geo.n, mover)
    t_piece = mover << 3 | KIND_T

    # The opponent's move count per piece in the current position.
    empty = ~occ & full
    opp_mask = army_mask[opp]
    opp_block = occ & ~opp_mask
    counts = [0] * len(board)
    base = 0
    mask = opp_mask
    while mask:
        low = mask & -mask
        sq = low.bit_length() - 1
        mask ^= low
        c = (
            ((up[sq] | down[sq] | reach[sq][opp_block & tmask[sq]]) & empty) | (capture[sq] & size_mask[SIZE[board[sq]]])
        ).bit_count()
        counts[sq] = c
        base += c

    total = 0
    for frm, to in pos.legal_moves():
        piece = board[frm]
        captured = board[to]
        if captured and captured & 7 == KIND_T:
            total += pos.play(Move(frm, to)).count_moves()  # an army leaves the board
            continue
        if piece == t_piece and to == goal:
            continue  # the game is won: no replies
        fb, tb = 1 << frm, 1 << to
        touched = infl[frm] | infl[to]
        # Subtract the old counts of the opponent's pieces the move can affect
        # (a captured opponent piece on `to` included), add their new counts.
        count = base
        mask = touched & opp_mask
        while mask:
            low = mask & -mask
            count -= counts[low.bit_length() - 1]
            mask ^= low
        occ2 = (occ | tb) ^ fb
        empty2 = ~occ2 & full
        opp2 = opp_mask & ~tb
        block2 = occ2 & ~opp2
        msize = SIZE[piece]
        csize = SIZE[captured]
        mask = touched & opp2
        while mask:
            low = mask & -mask
            sq = low.bit_length() - 1
            mask ^= low
            z = SIZE[board[sq]]
            le = size_mask[z] & ~fb
            if captured and csize <= z:
                le &= ~tb
            if msize <= z:
                le |= tb
            count += (((up[sq] | down[sq] | reach[sq][block2 & tmask[sq]]) & empty2) | (capture[sq] & le)).bit_count()
        total += count
    return total


def divide(pos: Position, depth: int) -> dict[str, int]:
    """perft split by first move (canonical notation), for debugging counts."""
    return {format_move(pos, m): perft(pos.play(m), depth - 1) for m in pos.legal_moves()}
