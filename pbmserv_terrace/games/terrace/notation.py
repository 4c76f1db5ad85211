"""Move notation (RULES.md §7) and position strings (TPN, RULES.md §8) in one place.

>>> from pbmserv_terrace.games.terrace.setups import start_position
>>> pos = start_position("long")
>>> format_move(pos, parse_move(pos, "d2-e3"))
'D-d2-e3'
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from functools import cache

from .geometry import SIZES, geometry
from .pieces import ARMIES, KIND_T, KINDS, make_piece, piece_from_text, piece_text
from .position import Move, Position


class NotationError(ValueError):
    """A move or position string that cannot be read or is not legal; the message
    is a sentence for the player."""


# ------------------------------------------------------------------ positions
_TPN_TOKEN = re.compile(r"(\d+)|([tabcdTABCD])(')?")


POSITION_CACHE_SIZE = 1024
"""How many position strings :func:`parse_tpn` remembers (least recently used out)."""

_cache: OrderedDict[str, Position] = OrderedDict()
"""Position string -> the position it reads as; never handed out (callers get copies)."""
_cache_lock = threading.Lock()


def parse_tpn(text: str, n: int | None = None) -> Position:
    """Read a position string such as ``DDCCBBAT/AABBCCDD/8/8/8/8/ddccbbaa/tabbccdd 1``.

    The board size comes from the number of ranks (8 or 6) unless ``n`` is given, in
    which case it must match.  Raises :class:`NotationError` with the reason.

    The last :data:`POSITION_CACHE_SIZE` strings read (or written by :func:`format_tpn`)
    are remembered: reading one again costs a copy of its position, not a parse.  Each
    call returns a position of its own, so the cache never shares a board.
    """
    if type(text) is str:
        with _cache_lock:
            known = _cache.get(text)
            if known is not None:
                _cache.move_to_end(text)
        if known is not None:
            # Only valid strings are cached, so the size check is all that can fail.
            size = known.n
            if n is not None and n != size:
                raise NotationError(f"the position string has {size} ranks but the board is {n}x{n}")
            return known.copy()
    pos = _read_tpn_quickly(text, n) if type(text) is str else None
    if pos is None:
        pos = _read_tpn(text, n)  # reads it the same way, or says what is wrong
    _remember(text, pos)
    return pos.copy()


def _remember(text: str, pos: Position) -> None:
    """Cache ``pos`` (which no caller holds) as what ``text`` reads as."""
    with _cache_lock:
        _cache[text] = pos
        _cache.move_to_end(text)
        while len(_cache) > POSITION_CACHE_SIZE:
            _cache.popitem(last=False)


def clear_position_cache() -> None:
    """Forget every remembered position string (benchmarks, tests)."""
    with _cache_lock:
        _cache.clear()


_RANKS: dict[tuple[str, int], tuple[int, ...]] = {}
"""(rank text, board size) -> the piece ints of its squares, file a first, for the
ranks read so far (most boards share most of their ranks); emptied when large."""
_RANKS_SIZE = 8192


def _read_tpn_quickly(text: str, n: int | None) -> Position | None:
    """What :func:`_read_tpn` reads ``text`` as, or None when it would refuse the
    string (or the string is written in an unusual way): then ``_read_tpn`` decides."""
    parts = text.split()
    if len(parts) != 2 or parts[1] not in ("1", "2", "3", "4"):
        return None
    ranks = parts[0].split("/")
    size = len(ranks)
    if size not in SIZES or (n is not None and n != size):
        return None
    board: list[int] = []
    for rank in reversed(ranks):  # rank 1 first
        squares = _RANKS.get((rank, size))
        if squares is None:
            squares = _read_rank(rank, size)
            if squares is None:
                return None
            if len(_RANKS) >= _RANKS_SIZE:
                _RANKS.clear()
            _RANKS[(rank, size)] = squares
        board += squares
    to_move = int(parts[1])
    pos = Position(size, board, to_move)
    army_mask = pos.army_mask
    if not army_mask[to_move] or not all(board.count(make_piece(a, KIND_T)) == 1 for a in ARMIES if army_mask[a]):
        return None
    return pos


def _read_rank(rank: str, size: int) -> tuple[int, ...] | None:
    """The piece ints of one rank's squares, or None when it is not ``size`` squares
    of counts and pieces."""
    squares: list[int] = []
    pos = 0
    while pos < len(rank):
        m = _TPN_TOKEN.match(rank, pos)
        if not m:
            return None
        pos = m.end()
        count = m.group(1)
        if count:
            if len(count) > 1:  # '10', '08': more squares than a rank, or oddly written
                return None
            squares += [0] * int(count)
        else:
            squares.append(piece_from_text(m.group(2), bool(m.group(3))))
        if len(squares) > size:
            return None
    return tuple(squares) if len(squares) == size else None


def _read_tpn(text: str, n: int | None) -> Position:
    """:func:`parse_tpn` without the cache, square by square."""
    parts = text.split()
    if len(parts) != 2:
        raise NotationError("a position string is the ranks separated by '/', a space, and the army to move (e.g. '... 1')")
    ranks = parts[0].split("/")
    size = len(ranks)
    if size not in SIZES:
        raise NotationError(f"a position string has 8 or 6 ranks separated by '/', not {size}")
    if n is not None and n != size:
        raise NotationError(f"the position string has {size} ranks but the board is {n}x{n}")
    board = [0] * (size * size)
    for row, rank in enumerate(ranks):
        y = size - 1 - row
        x = 0
        pos = 0
        while pos < len(rank):
            m = _TPN_TOKEN.match(rank, pos)
            if not m:
                bad = rank[pos]
                raise NotationError(f"rank {y + 1} of the position string has {bad!r}, which is neither a piece nor a count")
            pos = m.end()
            if m.group(1):
                x += int(m.group(1))
            else:
                if x < size:
                    board[y * size + x] = piece_from_text(m.group(2), bool(m.group(3)))
                x += 1
        if x != size:
            raise NotationError(f"rank {y + 1} of the position string covers {x} squares, not {size}")
    if not parts[1].isdigit() or int(parts[1]) not in (1, 2, 3, 4):
        raise NotationError(f"the army to move must be 1, 2, 3 or 4, not {parts[1]!r}")
    to_move = int(parts[1])
    present = sorted({p >> 3 for p in board if p})
    if not present:
        raise NotationError("the position string has no pieces")
    for army in present:
        ts = sum(1 for p in board if p == make_piece(army, KIND_T))
        if ts != 1:
            raise NotationError(f"army {army} must have exactly one T on the board, not {ts}")
    if to_move not in present:
        raise NotationError(f"army {to_move} is to move but has no pieces on the board")
    return Position(size, board, to_move)


def format_tpn(pos: Position) -> str:
    """The position string of ``pos`` (the inverse of :func:`parse_tpn`).

    A string written here is usually read back soon (the server stores the position
    after a move and reads it again for the reply and the next move), so the position
    is remembered as what the string reads as (built afresh from ``pos``'s pieces),
    when :func:`parse_tpn` would accept the string.
    """
    text = _tpn_of(pos)
    if text is None:  # a square holds no piece of armies 1-4: no string reads as this
        return _tpn_square_by_square(pos)
    with _cache_lock:
        known = text in _cache
    if not known:
        board, to_move = pos.board, pos.to_move
        if type(to_move) is int and to_move in ARMIES:
            fresh = Position(pos.n, board, to_move)  # the board copied, its masks recomputed
            army_mask = fresh.army_mask
            if army_mask[to_move] and all(board.count(make_piece(a, KIND_T)) == 1 for a in ARMIES if army_mask[a]):
                _remember(text, fresh)
    return text


_TPN_TEXT: dict[int, str] = {0: "1", **{p: piece_text(p) for p in range(8, 40) if p & 7 < 5}}
"""Each square's text in a position string, an empty square as ``1`` (runs of them
are counted afterwards: no piece's text has a digit)."""
_TPN_RUNS = tuple(("1" * k, str(k)) for k in range(8, 1, -1))


def _tpn_of(pos: Position) -> str | None:
    """The position string, or None when a square holds something other than a piece
    of armies 1-4 (then :func:`_tpn_square_by_square` writes or refuses it)."""
    n, board = pos.n, pos.board
    text = _TPN_TEXT.__getitem__
    try:
        ranks = "/".join(["".join(map(text, board[start : start + n])) for start in range(n * (n - 1), -1, -n)])
    except KeyError:
        return None
    for run, count in _TPN_RUNS:  # longest first; a rank holds at most 8 squares
        ranks = ranks.replace(run, count)
    return f"{ranks} {pos.to_move}"


def _tpn_square_by_square(pos: Position) -> str:
    """The position string written square by square, for any board."""
    n = pos.n
    rows = []
    for y in range(n - 1, -1, -1):
        out, gap = [], 0
        for x in range(n):
            p = pos.board[y * n + x]
            if p:
                if gap:
                    out.append(str(gap))
                    gap = 0
                out.append(piece_text(p))
            else:
                gap += 1
        if gap:
            out.append(str(gap))
        rows.append("".join(out))
    return "/".join(rows) + f" {pos.to_move}"


# ---------------------------------------------------------------------- moves
_DASH = r"\s*[-\u2010\u2011\u2012\u2013\u2014\u2212]?\s*"
"""The separator between piece letter and squares: a hyphen, any of the dashes that
mail clients and phones substitute for it (en, em, minus, ...), or nothing; spaces
around it allowed.  Squares always start with a letter and end with digits, so
``Cd7d6`` and ``d7d6`` read one way only."""
_MOVE = re.compile(
    rf"^(?:([tabcd]){_DASH})?([a-z]\d+){_DASH}([a-z]\d+)(?:\s*:\s*([tabcd]))?$",
    re.IGNORECASE,
)


def looks_like_move(text: str) -> bool:
    """True when ``text`` has the shape of a move in one of §7's forms, without a
    board to check it on (a queued move is stored before its turn comes)."""
    return bool(_MOVE.match(text.strip()))


MOVE_FORMS = "rc1-rc2, s-rc1-rc2, rc1-rc2:d or s-rc1-rc2:d (e.g. d2-e3, D-d2-e3, C-b4-c3:C)"


def format_move(pos: Position, move: Move) -> str:
    """Canonical form ``S-rc1-rc2`` or ``S-rc1-rc2:D`` of ``move`` played in ``pos``."""
    geo = pos.geo
    piece, captured = pos.board[move.frm], pos.board[move.to]
    text = f"{KINDS[piece & 7]}-{geo.name(move.frm)}-{geo.name(move.to)}"
    if captured:
        text += f":{KINDS[captured & 7]}"
    return text


@cache
def _square_numbers(n: int) -> dict[str, int]:
    """Square name (``"d2"``) -> square number on the N x N board."""
    geo = geometry(n)
    return {geo.name(sq): sq for sq in range(n * n)}


def parse_move(pos: Position, text: str) -> Move:
    """Read a move in any form of §7 and check it is legal for the army to move.

    Raises :class:`NotationError` whose message starts with the move as written and
    says what is wrong, e.g. ``"d2-c1: a piece moves down only straight ..."``.
    """
    raw = text.strip()
    m = _MOVE.match(raw)
    if not m:
        raise NotationError(f"{raw[:40]!r} is not a move; write it as {MOVE_FORMS}")
    letter, src, dst, cap = m.groups()
    geo = pos.geo
    names = _square_numbers(geo.n)
    frm, to = names.get(src.lower(), -1), names.get(dst.lower(), -1)
    if frm < 0 or to < 0:
        try:
            frm, to = geo.square(src), geo.square(dst)
        except ValueError as exc:
            raise NotationError(f"{raw}: {exc}") from None
    outcome = pos.outcome()
    if outcome is not None:
        raise NotationError(f"{raw}: the game is over")
    piece = pos.board[frm]
    army = pos.to_move
    if not piece:
        raise NotationError(f"{raw}: there is no piece on {src.lower()}")
    if piece >> 3 != army:
        raise NotationError(f"{raw}: the piece on {src.lower()} ({piece_text(piece)}) is not yours; you play army {army}")
    if letter and letter.upper() != KINDS[piece & 7]:
        raise NotationError(f"{raw}: the piece on {src.lower()} is {KINDS[piece & 7]}, not {letter.upper()}")
    target = pos.board[to]
    if cap:
        if not target:
            raise NotationError(f"{raw}: there is nothing to capture on {dst.lower()}")
        if cap.upper() != KINDS[target & 7]:
            raise NotationError(f"{raw}: the piece on {dst.lower()} is {KINDS[target & 7]}, not {cap.upper()}")
    move = Move(frm, to)
    if not pos.is_legal(move):
        raise NotationError(f"{raw}: {why_illegal(pos, move)}")
    return move


def why_illegal(pos: Position, move: Move) -> str:
    """A sentence saying which rule of §4 forbids ``move`` (which must be illegal),
    followed by where that piece can go instead, so a player by mail does not need
    a second round trip to find a legal move: ``"...; the C on d2 can go to c3, d3"``."""
    return f"{_rule_broken(pos, move)}; {_alternatives(pos, move.frm)}"


def _alternatives(pos: Position, frm: int) -> str:
    """Where the piece on ``frm`` can legally go, or that it cannot move at all."""
    piece = pos.board[frm]
    if not piece or piece >> 3 != pos.to_move:
        return "it is not a piece of the army to move"
    geo = pos.geo
    targets = sorted((m.to for m in pos.moves_from(frm)), key=lambda sq: (sq % geo.n, sq // geo.n))
    if not targets:
        return "this piece has no legal move"
    names = ", ".join(geo.name(sq) for sq in targets)
    return f"the {KINDS[piece & 7]} on {geo.name(frm)} can go to {names}"


def _rule_broken(pos: Position, move: Move) -> str:
    """Which rule of §4 forbids ``move``."""
    geo = pos.geo
    frm, to = move
    hf, ht = geo.height[frm], geo.height[to]
    piece, target = pos.board[frm], pos.board[to]
    near = geo.is_orthogonal(frm, to) or geo.is_diagonal(frm, to)
    if frm == to:
        return "a piece must move to another square"
    if ht == hf:
        if geo.terrace[frm] != geo.terrace[to]:
            return f"{geo.name(to)} is on another terrace; a level move stays on its own terrace"
        if target:
            return f"{geo.name(to)} is occupied; a level move goes to a vacant square"
        path = geo.path[frm]
        i, j = path.index(frm), path.index(to)
        step = 1 if j > i else -1
        for k in range(i + step, j, step):
            sq = path[k]
            if pos.board[sq] and pos.board[sq] >> 3 != piece >> 3:
                return f"the way along the terrace is blocked by the opponent's piece on {geo.name(sq)}"
        return "that level move is not possible"  # pragma: no cover - all cases above
    if ht == hf + 1:
        if not near:
            return "a piece moves up only to a neighbouring square, one level at a time"
        return f"{geo.name(to)} is occupied; a piece moves up only to a vacant square"
    if ht == hf - 1:
        if not near:
            return "a piece moves down only to a neighbouring square, one level at a time"
        if geo.is_orthogonal(frm, to):
            return f"{geo.name(to)} is occupied; captures are made diagonally down, plain moves down go to a vacant square"
        if not target:
            return "a piece moves down only straight to a vacant square; diagonally down is for capturing only"
        return (
            f"a piece captures only a piece of its own size or smaller; "
            f"{KINDS[target & 7]} on {geo.name(to)} is larger than {KINDS[piece & 7]}"
        )
    return f"a piece moves at most one level up or down ({geo.name(frm)} is level {hf}, {geo.name(to)} is level {ht})"
