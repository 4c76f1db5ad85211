"""Building Terrace patience states card by card for the rule tests."""

from __future__ import annotations

from pbmserv_terrace.games.patience import State, get_variant, parse_card
from pbmserv_terrace.games.patience.cards import rank_of


def cards(text: str) -> tuple[int, ...]:
    """``"7h Qs 10d"`` as card ints, in the order written."""
    return tuple(parse_card(t) for t in text.split())


def make(
    variant: str,
    *,
    tableau: list[str],
    foundations: list[str] | None = None,
    reserve: str = "",
    waste: str = "",
    stock: str = "Ks Ks",
    base: str = "7h",
    locked: bool = False,
    stock_pass: int = 1,
) -> State:
    """A state of ``variant``: piles written bottom to top, ``stock`` (two kings unless given, so a move is left) in the order the cards
    would be turned (first turned first), ``base`` a card of the base rank."""
    found = [cards(f) for f in (foundations or [])]
    found += [()] * (8 - len(found))
    return State(
        get_variant(variant),
        0,
        cards(stock)[::-1],
        cards(waste),
        cards(reserve),
        tuple(found),
        tuple(cards(p) for p in tableau),
        rank_of(parse_card(base)),
        locked=locked,
        stock_pass=stock_pass,
    )


def total_cards(s: State) -> int:
    """Every card in every pile (104 in a real game)."""
    piles = [s.stock, s.waste, s.reserve, *s.foundations, *s.tableau]
    return sum(len(p) for p in piles)
