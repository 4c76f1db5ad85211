"""Deal numbers: deal N of a variant is the same 104 cards on every machine and every version.

Python's :mod:`random` may change its algorithms between versions, so the shuffle is
defined here, completely:

1. The seed is ``(N * 0x9E3779B97F4A7C15 + fnv1a64(variant id)) mod 2**64`` where
   ``fnv1a64`` is 64-bit FNV-1a (offset basis 0xCBF29CE484222325, prime
   0x100000001B3) over the UTF-8 bytes of the id (``terrace``, ``wood`` …).  The
   variant is part of the seed so that deal N of Wood is not deal N of Terrace
   with a different reserve size.
2. The generator is splitmix64 (Steele, Lea & Flood 2014): ``state += 0x9E3779B97F4A7C15``;
   ``z = state``; ``z = (z ^ z>>30) * 0xBF58476D1CE4E5B9``; ``z = (z ^ z>>27) * 0x94D049BB133111EB``;
   output ``z ^ z>>31`` (all mod 2**64).
3. ``uniform(n)`` draws outputs until one is below ``2**64 - 2**64 % n`` (no modulo
   bias) and returns it ``mod n``.
4. Fisher–Yates from the top: for ``i`` from 103 down to 1, swap ``cards[i]`` with
   ``cards[uniform(i + 1)]``, starting from :func:`.cards.two_packs` order.
5. The shuffled list is dealt from its start: reserve first (its last card dealt
   is the reserve's top), then the tableau piles left to right, then the base card
   (variants that deal it), then the stock in order (its first card is turned first).

``deal_of_the_day`` is the date as the number ``YYYYMMDD`` (2026-08-22 → 20260822),
the same number for every variant; the variants still get different cards because
the seed includes the variant.
"""

from __future__ import annotations

import datetime

from .cards import two_packs
from .variants import Variant, get_variant

MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
MAX_DEAL = (1 << 63) - 1


def fnv1a64(data: bytes) -> int:
    """64-bit FNV-1a hash of ``data``."""
    h = 0xCBF29CE484222325
    for byte in data:
        h = ((h ^ byte) * 0x100000001B3) & MASK
    return h


class SplitMix64:
    """The splitmix64 generator: tiny, fully specified, good enough to shuffle cards."""

    __slots__ = ("state",)

    def __init__(self, seed: int) -> None:
        self.state = seed & MASK

    def next(self) -> int:
        """The next 64-bit output."""
        self.state = (self.state + GOLDEN) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    def uniform(self, n: int) -> int:
        """An unbiased integer in ``0 .. n-1`` (rejection sampling)."""
        limit = (1 << 64) - (1 << 64) % n
        while True:
            x = self.next()
            if x < limit:
                return x % n


def deal_seed(variant: Variant, number: int) -> int:
    """The generator seed of deal ``number`` of ``variant`` (step 1 of the module docstring)."""
    return (number * GOLDEN + fnv1a64(variant.key.encode())) & MASK


def check_deal_number(number: int) -> int:
    """``number`` if it is a valid deal number (0 … 2**63-1), else ValueError with the range."""
    if isinstance(number, bool) or not isinstance(number, int) or not 0 <= number <= MAX_DEAL:
        raise ValueError(f"a deal number is a whole number from 0 to {MAX_DEAL}, not {number!r}")
    return number


def shuffled(variant: Variant | str, number: int) -> tuple[int, ...]:
    """The 104 cards of deal ``number`` in dealing order (first dealt first)."""
    v = get_variant(variant) if isinstance(variant, str) else variant
    rng = SplitMix64(deal_seed(v, check_deal_number(number)))
    cards = two_packs()
    for i in range(len(cards) - 1, 0, -1):
        j = rng.uniform(i + 1)
        cards[i], cards[j] = cards[j], cards[i]
    return tuple(cards)


def deal_of_the_day(date: datetime.date, variant: Variant | str) -> int:
    """The deal everyone plays on ``date``: ``YYYYMMDD`` as a number (``variant`` is checked, not used)."""
    if isinstance(variant, str):
        get_variant(variant)
    return date.year * 10000 + date.month * 100 + date.day
