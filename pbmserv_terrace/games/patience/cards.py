"""Cards of the two packs Terrace patience is played with, and their notation.

A card is a plain ``int`` (``suit * 13 + rank - 1``, so 0..51): the solver handles
millions of them, and ints hash and compare faster than objects.  The two packs
hold every card twice; two equal cards are interchangeable, so nothing needs to
tell them apart.

Notation: rank ``A 2 3 … 10 J Q K`` (``T`` is read as 10, ``1`` as the ace) and
suit ``c d h s``, in any case: ``7h``, ``Qs``, ``10d`` = ``Td``.  Cards are written
with ``10``, the form most players type.

>>> card_text(parse_card("td")), card_text(parse_card("QS"))
('10d', 'Qs')
"""

from __future__ import annotations

SUITS = "cdhs"
"""Clubs and spades are black, diamonds and hearts red."""
SUIT_NAMES = ("clubs", "diamonds", "hearts", "spades")
RANK_TEXT = ("", "A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K")
RANK_NAMES = ("", "ace", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "jack", "queen", "king")
ACE, KING = 1, 13
DECK_SIZE = 104

_RANK_READ = {t.lower(): r for r, t in enumerate(RANK_TEXT) if t} | {"t": 10, "1": 1}


class CardError(ValueError):
    """A card name that cannot be read; the message says how to write one."""


def make_card(rank: int, suit: int) -> int:
    """The card of ``rank`` (1 = ace … 13 = king) and ``suit`` (index into :data:`SUITS`)."""
    return suit * 13 + rank - 1


def rank_of(card: int) -> int:
    """1 (ace) … 13 (king)."""
    return card % 13 + 1


def suit_of(card: int) -> int:
    """0 clubs, 1 diamonds, 2 hearts, 3 spades."""
    return card // 13


def is_red(card: int) -> bool:
    """Diamonds and hearts are red; building by alternating colour compares this."""
    return 13 <= card < 39


def rank_above(rank: int) -> int:
    """The next rank up, round the corner (K → A)."""
    return 1 if rank == KING else rank + 1


def rank_below(rank: int) -> int:
    """The next rank down, round the corner (A → K)."""
    return KING if rank == ACE else rank - 1


def card_text(card: int) -> str:
    """``7h``, ``10d``, ``Qs``."""
    return RANK_TEXT[rank_of(card)] + SUITS[suit_of(card)]


def card_name(card: int) -> str:
    """``seven of hearts``: for sentences."""
    return f"{RANK_NAMES[rank_of(card)]} of {SUIT_NAMES[suit_of(card)]}"


def parse_rank(text: str) -> int:
    """A rank alone (``7``, ``Q``, ``10``/``T``, ``A``/``1``) as 1..13."""
    rank = _RANK_READ.get(text.strip().lower())
    if rank is None:
        raise CardError(f"{text!r} is not a rank: write A, 2 … 10 (or T), J, Q or K")
    return rank


def parse_card(text: str) -> int:
    """Read ``7h``, ``Qs``, ``10d`` or ``Td`` (any case)."""
    t = text.strip().lower()
    if len(t) < 2 or t[-1] not in SUITS:
        raise CardError(f"{text!r} is not a card: write the rank then the suit, e.g. 7h, Qs, 10d (or Td), Ac")
    try:
        rank = parse_rank(t[:-1])
    except CardError:
        raise CardError(f"{text!r} is not a card: the rank is A, 2 … 10 (or T), J, Q or K, e.g. 7h, Qs, 10d") from None
    return make_card(rank, SUITS.index(t[-1]))


def two_packs() -> list[int]:
    """The 104 cards before shuffling: clubs A–K, diamonds, hearts, spades, then the same again.

    This order is part of the deal definition (:mod:`.deal`): changing it changes every deal.
    """
    return [make_card(rank, suit) for _ in range(2) for suit in range(4) for rank in range(1, 14)]
