"""Pieces and armies (RULES.md §2).

A piece is a small int ``army << 3 | kind`` with kind 0..4 for T, A, B, C, D, so
the army is ``piece >> 3`` and 0 means an empty square.  Army 1 prints lower-case,
army 2 upper-case, armies 3 and 4 the same with a prime (``t'``, ``T'``).

>>> piece_text(make_piece(3, KIND_T))
"t'"
"""

from __future__ import annotations

KINDS = "TABCD"
KIND_T = 0
SIZE_OF_KIND = (1, 1, 2, 3, 4)
"""T has the size of A; A < B < C < D."""
ARMIES = (1, 2, 3, 4)

# Lookup tables indexed by the piece int (0..39): faster than shifting in hot loops.
SIZE: tuple[int, ...] = tuple(SIZE_OF_KIND[p & 7] if p >> 3 and (p & 7) < 5 else 0 for p in range(40))
KIND: tuple[int, ...] = tuple(p & 7 for p in range(40))


def make_piece(army: int, kind: int) -> int:
    return army << 3 | kind


def piece_text(piece: int) -> str:
    """How the board and position strings print a piece: ``t``, ``T``, ``t'``, ``T'``."""
    army, kind = piece >> 3, piece & 7
    letter = KINDS[kind]
    if army in (1, 3):
        letter = letter.lower()
    return letter + ("'" if army >= 3 else "")


def piece_from_text(letter: str, primed: bool) -> int:
    """Inverse of :func:`piece_text`; ValueError for a letter that is no piece."""
    upper = letter.upper()
    if len(letter) != 1 or upper not in KINDS:
        raise ValueError(f"{letter!r} is not a piece letter (T, A, B, C or D)")
    army = (2 if letter.isupper() else 1) + (2 if primed else 0)
    return make_piece(army, KINDS.index(upper))
