"""The seven variants of Terrace patience and what tells them apart.

Every variant uses two packs, a stock turned one card at a time to a waste, a
reserve whose cards are all visible (only the top one playable, and only to a
foundation), eight foundations built up round the corner from a common base rank,
and single-card tableau piles built down by alternating colour round the corner.
They differ in reserve size, number of tableau piles, how the base card is
found, how the foundations follow suit, whether the stock can be turned, and
whether spaces fill themselves.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Autofill = Literal["none", "waste", "reserve"]


@dataclass(frozen=True, slots=True)
class Variant:
    """One variant's parameters.

    ``key`` is the lower-case id used as the ``-variant`` parameter and in the deal
    seed (so it must never change); ``choose_base`` means the player picks the base
    card from four dealt to the first tableau piles, else the card after the tableau
    deal is the base; ``by_suit`` builds foundations by suit instead of alternating
    colour; ``stock_passes`` is 2 where the stock may be turned once; ``autofill``
    says where spaces in the tableau are filled from automatically.
    """

    key: str
    name: str
    reserve: int
    piles: int
    choose_base: bool
    by_suit: bool = False
    stock_passes: int = 1
    autofill: Autofill = "none"


VARIANTS: dict[str, Variant] = {
    v.key: v
    for v in (
        Variant("terrace", "Terrace", reserve=11, piles=9, choose_base=True),
        Variant("generalpatience", "General Patience", reserve=13, piles=9, choose_base=True, by_suit=True, stock_passes=2),
        Variant("fallingstars", "Falling Stars", reserve=11, piles=9, choose_base=False),
        Variant("signora", "Signora", reserve=11, piles=9, choose_base=False, autofill="waste"),
        Variant("redheads", "Redheads", reserve=21, piles=8, choose_base=False, autofill="reserve"),
        Variant("blondesandbrunettes", "Blondes and Brunettes", reserve=10, piles=8, choose_base=False),
        Variant("wood", "Wood", reserve=10, piles=9, choose_base=False),
    )
}
"""The variants by id, in the order of the source."""

_ALIASES = {"generalspatience": "generalpatience", "fallingstar": "fallingstars", "general": "generalpatience"}


def get_variant(name: str) -> Variant:
    """The variant called ``name``: its id or its name, ignoring case, spaces, hyphens and apostrophes."""
    key = "".join(ch for ch in name.lower() if ch.isalnum())
    key = _ALIASES.get(key, key)
    if key not in VARIANTS:
        known = ", ".join(VARIANTS)
        raise ValueError(f"there is no Terrace patience variant {name!r}; the variants are {known}")
    return VARIANTS[key]
