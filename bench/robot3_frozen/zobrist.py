"""Zobrist keys for Terrace positions.

A position's hash is the XOR of one 64-bit key per (piece, square) and one per army
to move.  The keys come from a fixed-seed generator, so hashes (and with them the
transposition table's behaviour and the robots' choices) are the same in every
process and on every machine.  :class:`~.board.SearchBoard` updates the hash
incrementally in make/unmake; :func:`full_hash` recomputes it from scratch, and the
tests check the two agree along random games.
"""

from __future__ import annotations

import random
from functools import cache

from pbmserv_terrace.games.terrace import Position

PIECE_CODES = 40
"""Piece ints are ``army << 3 | kind`` with army <= 4: all below 40."""


@cache
def keys(n: int) -> tuple[tuple[tuple[int, ...], ...], tuple[int, ...]]:
    """(piece_keys[piece][sq], turn_keys[army]) for the N x N board."""
    rng = random.Random(0x7E44ACE + n)
    piece_keys = tuple(tuple(rng.getrandbits(64) for _ in range(n * n)) for _ in range(PIECE_CODES))
    turn_keys = tuple(rng.getrandbits(64) for _ in range(5))
    return piece_keys, turn_keys


def hash_board(n: int, board: list[int], to_move: int) -> int:
    """The hash of a board (list of piece ints) with ``to_move`` to move."""
    piece_keys, turn_keys = keys(n)
    h = turn_keys[to_move]
    for sq, p in enumerate(board):
        if p:
            h ^= piece_keys[p][sq]
    return h


def full_hash(pos: Position) -> int:
    """The from-scratch hash of a rules position."""
    return hash_board(pos.n, pos.board, pos.to_move)
