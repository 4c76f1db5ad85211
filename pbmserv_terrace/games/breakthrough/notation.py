"""Squares, moves and the stored position string.

Squares are written ``a1``-``h8`` (``a1``-``f6`` on 6x6): the file letter, then
the rank number, White's home row being rank 1.  A move is ``FROM-TO`` (``a2-a3``,
``b2-c3``), a capture ``FROMxTO`` (``b4xc5``); the reader also takes ``x`` for a
move and ``-`` for a capture (from and to squares name one move either way),
capitals, an en dash, spaces around the move and around its sign.

The stored string lists the ranks from the top (rank 8 first) separated by ``/``,
``W`` and ``B`` for pawns and a digit for a run of empty squares, then a space and
``w`` or ``b`` for the side to move:
``BBBBBBBB/BBBBBBBB/8/8/8/8/WWWWWWWW/WWWWWWWW w`` (73 characters at most).

>>> from .position import start_position
>>> pos = start_position()
>>> format_move(pos, parse_move(pos, " B2X C3 "))
'b2-c3'
"""

from __future__ import annotations

import re
from functools import lru_cache

from .position import ARMY_NAMES, BLACK, SIZES, WHITE, IllegalMoveError, Move, Position, forward, geometry

FILES = "abcdefgh"

MOVE_FORMS = "FROM-TO for a move, FROMxTO for a capture (b2-b3, b2-c3, b4xc5)"
"""how a move is written, for error replies"""

MOVE_SHAPE = re.compile(r"\s*([a-z])([0-9]{1,2})\s*([-x\u2013])\s*([a-z])([0-9]{1,2})\s*", re.IGNORECASE | re.ASCII)
"""a move's shape: two squares (on some board) and a sign between them"""

_ROW = re.compile(r"[WB1-8]{1,8}")


class PositionStringError(ValueError):
    """A stored position string that does not read as a position."""


# -------------------------------------------------------------------- squares
def square_name(sq: int, n: int) -> str:
    """``a1`` for square 0."""
    return f"{FILES[sq % n]}{sq // n + 1}"


def parse_square(text: str, n: int) -> int:
    """``c3`` → its square number on the ``n`` x ``n`` board (ValueError when there is none)."""
    t = text.strip().lower()
    if len(t) in (2, 3) and t[0] in FILES[:n] and t[1:].isascii() and t[1:].isdigit() and 1 <= int(t[1:]) <= n:
        return (int(t[1:]) - 1) * n + FILES.index(t[0])
    raise IllegalMoveError(f"{text.strip()} is not a square of the {n}x{n} board (a1-{square_name(n * n - 1, n)}).")


# ---------------------------------------------------------------------- moves
def looks_like_move(text: str) -> bool:
    """Whether ``text`` has the shape of a move (whatever the board)."""
    return MOVE_SHAPE.fullmatch(text) is not None


def move_squares(text: str, n: int) -> Move:
    """The from and to squares ``text`` names, legal or not (:class:`IllegalMoveError`
    when it is no move's shape or names a square off the board)."""
    m = MOVE_SHAPE.fullmatch(text)
    if m is None:
        shown = text.strip()
        what = f'"{shown}" is not a move' if shown else "No move was given"
        raise IllegalMoveError(f"{what}: write {MOVE_FORMS}.")
    frm = parse_square(m.group(1) + m.group(2), n)
    to = parse_square(m.group(4) + m.group(5), n)
    return Move(frm, to)


def parse_move(pos: Position, text: str) -> Move:
    """``text`` as a legal move of the side to move in ``pos``; else
    :class:`IllegalMoveError` with a sentence saying why."""
    n = pos.n
    shown = " ".join(text.split())
    try:
        move = move_squares(text, n)
    except IllegalMoveError as exc:
        if looks_like_move(text):
            raise IllegalMoveError(f"{shown}: {exc}") from None
        raise
    outcome = pos.outcome()
    if outcome is not None:
        raise IllegalMoveError(f"{shown}: the game is over ({outcome.reason}).")
    frm, to = move
    mover, army = pos.to_move, pos.army_at(frm)
    me, frm_name, to_name = ARMY_NAMES[mover], square_name(frm, n), square_name(to, n)
    if army == 0:
        raise IllegalMoveError(f"{shown}: there is no pawn on {frm_name}.")
    if army != mover:
        raise IllegalMoveError(f"{shown}: the pawn on {frm_name} is {ARMY_NAMES[army]}'s, and {me} is to move.")
    goal = n if mover == WHITE else 1
    ahead = (to // n - frm // n) * (1 if mover == WHITE else -1)
    aside = abs(to % n - frm % n)
    if frm == to:
        raise IllegalMoveError(f"{shown}: a pawn must move to another square.")
    if ahead < 0:
        raise IllegalMoveError(f"{shown}: a pawn never moves back ({me}'s pawns move towards rank {goal}).")
    if ahead == 0:
        raise IllegalMoveError(f"{shown}: a pawn never moves sideways, only one square forward.")
    if ahead > 1 or aside > 1:
        if aside == 0:
            raise IllegalMoveError(f"{shown}: a pawn moves one square forward.")
        raise IllegalMoveError(f"{shown}: a pawn moves one square, straight or diagonally forward.")
    target = pos.army_at(to)
    if target == mover:
        raise IllegalMoveError(f"{shown}: {to_name} holds {me}'s own pawn.")
    if aside == 0 and target:
        raise IllegalMoveError(f"{shown}: a pawn captures only diagonally forward, never straight ahead ({to_name} is taken).")
    assert to - frm - forward(mover, n) in (-1, 0, 1) and pos.is_legal(move), (pos, move)
    return move


def format_move(pos: Position, move: Move) -> str:
    """The canonical text of ``move`` in ``pos``: ``b2-c3``, or ``b4xc5`` for a capture."""
    n = pos.n
    sign = "x" if pos.is_capture(move) else "-"
    return f"{square_name(move.frm, n)}{sign}{square_name(move.to, n)}"


# ------------------------------------------------------------ position string
def dump(pos: Position) -> str:
    """The stored string of ``pos`` (at most 73 characters)."""
    n, rows = pos.n, []
    for rank in range(n - 1, -1, -1):
        row, empty = [], 0
        for sq in range(rank * n, rank * n + n):
            army = pos.army_at(sq)
            if army:
                if empty:
                    row.append(str(empty))
                    empty = 0
                row.append("W" if army == WHITE else "B")
            else:
                empty += 1
        if empty:
            row.append(str(empty))
        rows.append("".join(row))
    return "/".join(rows) + (" w" if pos.to_move == WHITE else " b")


@lru_cache(maxsize=4096)
def load(text: str) -> Position:
    """The position of a stored string (:class:`PositionStringError` saying what is
    wrong).  Positions are values, so equal strings share one."""
    board, sep, side = text.partition(" ")
    if not sep or side not in ("w", "b"):
        raise PositionStringError(f"{text!r} is not a position: the ranks, a space, then w or b")
    rows = board.split("/")
    n = len(rows)
    if n not in SIZES:
        raise PositionStringError(f"{text!r} is not a position: {n} ranks, not {' or '.join(map(str, SIZES))}")
    white = black = 0
    for i, row in enumerate(rows):
        if _ROW.fullmatch(row) is None:
            raise PositionStringError(f"{text!r} is not a position: rank {n - i} is {row!r}")
        rank, file = n - 1 - i, 0
        for ch in row:
            if ch.isdigit():
                file += int(ch)
                continue
            if file < n:
                bit = 1 << (rank * n + file)
                if ch == "W":
                    white |= bit
                else:
                    black |= bit
            file += 1
        if file != n:
            raise PositionStringError(f"{text!r} is not a position: rank {n - i} has {file} squares, not {n}")
    geometry(n)
    return Position(n, white, black, WHITE if side == "w" else BLACK)


def example_move(pos: Position) -> str:
    """A legal move of the side to move, for a reply's hint: a straight step before
    a diagonal one before a capture, the most central file first (``d2-d3`` at the
    start).  When there is none (the game is over), such a step from the start."""
    n = pos.n
    moves = pos.legal_moves()
    if not moves:
        home = 2 if pos.to_move == WHITE else n - 1
        ahead = home + (1 if pos.to_move == WHITE else -1)
        file = FILES[(n - 1) // 2]
        return f"{file}{home}-{file}{ahead}"

    def rank(m: Move) -> tuple[bool, bool, float, str]:
        return pos.is_capture(m), m.frm % n != m.to % n, abs(m.frm % n - (n - 1) / 2), format_move(pos, m)

    return format_move(pos, min(moves, key=rank))
