"""Move notation for Terrace patience mails.

Piles: ``r`` reserve, ``w`` waste, ``s`` stock, ``f1``–``f8`` foundations (``f``
alone: whichever foundation takes the card), ``t1``–``t9`` tableau piles.

Moves: ``FROM-TO`` (``r-f3``, ``w-t2``, ``t4-t1``, ``s-t5`` = turn the next stock
card and put it there), ``flip`` (turn one stock card onto the waste; in General
Patience with the stock empty it turns the waste over once), ``base 7h`` or
``base 2`` (pick the base card from the four offered, by card or by place 1–4), and
``resign``.  Spaces around ``-`` and letter case do not matter; ``to`` or ``>`` may
stand for ``-``.

>>> format_move(parse_move("W > T2")), format_move(parse_move("base td"))
('w-t2', 'base 10d')
"""

from __future__ import annotations

import re
from typing import Literal, NamedTuple

from .cards import CardError, card_text, parse_card

PileKind = Literal["r", "w", "s", "f", "t"]
MoveKind = Literal["move", "flip", "base", "resign"]

HOW_TO_WRITE = (
    "write a move as FROM-TO with the piles r (reserve), w (waste), s (stock), f1-f8 (foundations) "
    "and t1-t9 (tableau), e.g. w-t2, r-f3, t4-t1; or flip, base 7h, base 2, resign"
)

PILE_NAMES = {"r": "the reserve", "w": "the waste", "s": "the stock", "f": "foundation", "t": "tableau pile"}


class MoveSyntaxError(ValueError):
    """A move text that cannot be read; the message says how to write one."""


class Pile(NamedTuple):
    """A pile: ``kind`` one of r w s f t and ``num`` 1-based for f and t (0 for r, w, s, and for "any foundation")."""

    kind: PileKind
    num: int = 0

    def text(self) -> str:
        """``r``, ``f3``, ``t1``, ``f`` (any foundation)."""
        return self.kind + (str(self.num) if self.num else "")

    def describe(self) -> str:
        """``the reserve``, ``foundation f3``, ``tableau pile t1``: for sentences."""
        if self.kind in "rws":
            return PILE_NAMES[self.kind]
        if self.num == 0:
            return "a foundation"
        return f"{PILE_NAMES[self.kind]} {self.text()}"


class Move(NamedTuple):
    """One player move.  ``kind="move"`` uses ``src``/``dst``; ``kind="base"`` uses
    ``choice`` (1–4, place among the offered cards) or ``card``."""

    kind: MoveKind
    src: Pile | None = None
    dst: Pile | None = None
    choice: int | None = None
    card: int | None = None


FLIP = Move("flip")
RESIGN = Move("resign")

_PILE = r"([rws]|[ft][1-9]?)"
_MOVE_RE = re.compile(rf"^{_PILE}\s*(?:-|>|\bto\b|\s)\s*{_PILE}$")
_WORDS: dict[str, Move] = {
    "flip": FLIP,
    "turn": FLIP,
    "deal": FLIP,
    "s-w": FLIP,
    "resign": RESIGN,
    "stop": RESIGN,
    "quit": RESIGN,
}


def _pile(text: str) -> Pile:
    kind = text[0]
    index = int(text[1:]) if len(text) > 1 else 0
    if kind == "f" and index > 8:
        raise MoveSyntaxError(f"there are eight foundations, f1 to f8, so {text!r} is not one; {HOW_TO_WRITE}")
    if kind == "t" and index == 0:
        raise MoveSyntaxError(f"say which tableau pile, t1 to t9 (not just 't'); {HOW_TO_WRITE}")
    return Pile(kind, index)  # type: ignore[arg-type]


def parse_move(text: str) -> Move:
    """Read one move; raises :class:`MoveSyntaxError` whose message says how to write one."""
    t = " ".join(text.strip().lower().split())
    if not t:
        raise MoveSyntaxError(f"the move is empty; {HOW_TO_WRITE}")
    if t in _WORDS:
        return _WORDS[t]
    if t.startswith("base"):
        arg = t[4:].strip()
        if arg in ("1", "2", "3", "4"):
            return Move("base", choice=int(arg))
        try:
            return Move("base", card=parse_card(arg))
        except CardError:
            raise MoveSyntaxError(
                f"{text.strip()!r}: choose the base card by its place among the four offered (base 1 … base 4) or by name (base 7h)"
            ) from None
    m = _MOVE_RE.match(t)
    if not m:
        raise MoveSyntaxError(f"{text.strip()!r} is not a move; {HOW_TO_WRITE}")
    return Move("move", _pile(m.group(1)), _pile(m.group(2)))


def format_move(move: Move) -> str:
    """The canonical text of ``move`` (:func:`parse_move` reads it back to the same move)."""
    if move.kind == "move":
        assert move.src is not None and move.dst is not None
        return f"{move.src.text()}-{move.dst.text()}"
    if move.kind == "base":
        return f"base {move.choice}" if move.choice is not None else f"base {card_text(move.card or 0)}"
    return move.kind
