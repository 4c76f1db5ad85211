"""Terrace patience: a double-deck solitaire in seven variants (PySolFC's "Terrace" family).

Pure rules core, standard library only.  The mail service uses:

- :func:`new_game` ``(variant, deal) -> State`` and :func:`replay` ``(variant, deal, moves)``;
- :meth:`State.apply` ``(move or text) -> State`` (raises :class:`IllegalMove` or
  :class:`MoveSyntaxError`, both ValueErrors with a sentence for the player);
- :meth:`State.is_over`, :meth:`State.outcome`, :attr:`State.score`, :meth:`State.legal_moves`;
- :func:`render` (ASCII, <= 72 columns), :func:`hint`, :func:`solve`, :func:`help_text`;
- :func:`advice` and :func:`progress_moves`: moves that make progress, for examples;
- :func:`get_variant`, :data:`VARIANTS`, :func:`deal_of_the_day`, :func:`parse_move`, :func:`format_move`.

Undo: states are values; keep the move texts and :func:`replay` all but the last.

Where the source (the PySolFC rules page kept in shared/sources) is vague, we decided:

1. The general "Rules" paragraphs apply to all seven variants unless a variant's own
   paragraph says otherwise.  So every variant has the lock rule and the rule that a
   space is filled only from the waste (or with the next stock card, ``s-tN``).
2. A space accepts any rank.  Tableau cards cannot move into a space (the source names
   only the waste and the stock), except in Redheads once its reserve is empty, where
   "any card" is read as: a space then takes any card from the waste or the tableau.
3. Lock rule: turning a stock card while a space is empty locks the stock; it is
   unlocked when the waste's top card goes to a foundation or the tableau, or when no
   space is left.  The card turned automatically onto an empty waste does not lock.
4. Empty waste: the next stock card is turned onto it at once (source: "If the Waste is
   empty a card from the Stock is automatically dealt").
5. Base choice (Terrace, General Patience), as PySolFC: reserve first, then four cards
   on t1-t4; the chosen card goes to f1, the other three stay, the empty piles are
   dealt one card each from the stock, then the first stock card is turned.  Elsewhere
   one card goes to every pile and the next card is the base on f1.  Signora's base is
   dealt, as the source says (PySolFC lets the player choose from nine).
6. An empty foundation takes any card of the base rank, whatever its suit; a foundation
   is complete at 13 cards (base up to the rank below it).  Foundation cards never move.
7. General Patience: ``flip`` with the stock empty turns the waste over once (its first
   card turned becomes the next).  In that second pass a turned card must leave the
   waste before the next is turned (other moves are allowed meanwhile), and the game is
   lost as soon as the card on the waste from the second pass has no foundation or
   tableau place (a space always counts as a place).  All other variants: no redeal.
8. Signora: after every move each space (lowest first) takes the waste's top card,
   or the stock's next card when the waste is empty.  Redheads: each space takes the
   reserve's top card while the reserve has cards.
9. The game ends when won (104 on the foundations), on ``resign``, on General Patience's
   loss, or when no legal move is left ("stuck").  Moving a card to and fro between two
   piles counts as a move, so a hopeless game may need ``resign``.  Score = cards on
   the foundations, base cards included.
"""

from __future__ import annotations

from .advice import advice, progress_moves
from .cards import CardError, card_text, parse_card
from .deal import deal_of_the_day, shuffled
from .moves import Move, MoveSyntaxError, Pile, format_move, parse_move
from .render import render, status_line
from .solver import SolveResult, hint, solve
from .state import IllegalMove, State, new_game, replay
from .variants import VARIANTS, Variant, get_variant

GAME_TYPE = "patience"


def help_text(variant: Variant | str | None = None) -> str:
    """The rules and move notation for a help mail (all variants, or one)."""
    chosen = [get_variant(variant) if isinstance(variant, str) else variant] if variant else list(VARIANTS.values())
    lines = [
        "Terrace patience: a solitaire with two packs (104 cards).",
        "Goal: all cards to the eight foundations; score: cards on them.",
        "Foundations build up from the base rank, round the corner (K, A, 2),",
        "by alternating colour (in suit in General Patience); no card comes back.",
        "Tableau piles build down by alternating colour, round the corner, one",
        "card at a time. A space is filled from the waste (w-t3) or with the",
        "next stock card (s-t3); while a space is empty only one card may be",
        "turned until it is filled or the waste's top card is played (the stock",
        "is locked). The reserve is all shown, its top card last; that card",
        "goes only to a foundation. The stock is turned one card at a time and",
        "not again (General Patience: once, then every card turned must be",
        "played or you lose). Every pile is listed bottom to top.",
        "",
        "Moves: FROM-TO with r reserve, w waste, s stock, f1-f8 (f: any that",
        "fits), t1-t9: r-f3, w-t2, t4-t1, s-t5; flip (turn a card); base 7h or",
        "base 2 (choose the base among four); resign.",
        "",
        "Variants (-variant ID):",
    ]
    for v in chosen:
        base = "you choose the base from four" if v.choose_base else "the base is dealt"
        extra = {"waste": "; spaces fill from the waste", "reserve": "; spaces fill from the reserve"}.get(v.autofill, "")
        build = ", in suit, stock turned once" if v.by_suit else ""
        lines.append(f"  {v.key} ({v.name}): reserve {v.reserve}, {v.piles} piles,")
        lines.append(f"    {base}{build}{extra}.")
    return "\n".join(lines) + "\n"


__all__ = [
    "GAME_TYPE",
    "VARIANTS",
    "CardError",
    "IllegalMove",
    "Move",
    "MoveSyntaxError",
    "Pile",
    "SolveResult",
    "State",
    "Variant",
    "advice",
    "card_text",
    "deal_of_the_day",
    "format_move",
    "get_variant",
    "help_text",
    "hint",
    "new_game",
    "parse_card",
    "parse_move",
    "progress_moves",
    "render",
    "replay",
    "shuffled",
    "solve",
    "status_line",
]
