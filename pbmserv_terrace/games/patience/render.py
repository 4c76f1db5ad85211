"""The game as plain ASCII text for a mail: every pile readable, no line over 72 columns.

Layout (top to bottom): title and score; the base rank and how foundations build;
a line saying that piles read bottom to top (issue 38: which end of the reserve is
its top was said only by the picture); stock count and the waste's last cards (top
last); the reserve, all cards, top last, its top card named in the row's head; the
eight foundations as ``base..top``; the tableau piles bottom to top; a status line
(what to do now with examples that are legal and make progress, the lock, or how
the game ended).  Long rows wrap with an indent, so a 21-card reserve or a long
round-the-corner pile still fits.
"""

from __future__ import annotations

from itertools import islice

from .advice import progress_moves
from .cards import RANK_NAMES, card_text
from .moves import format_move
from .state import State

EXAMPLES = 3
"""moves shown in the status line (the best first: the reply line's example)"""
READING = "Piles read bottom to top: the last card shown is the top card."

WIDTH = 72
WASTE_SHOWN = 8


def _wrap(head: str, items: list[str], width: int = WIDTH) -> list[str]:
    """``head`` then ``items`` separated by spaces, continued on indented lines past ``width``."""
    lines, line, indent = [], head, " " * min(len(head), 8)
    for item in items:
        if len(line) + 1 + len(item) > width and line.strip():
            lines.append(line.rstrip())
            line = indent
        line = f"{line} {item}" if line.strip() else line + item
    lines.append(line.rstrip())
    return lines


def render(state: State) -> str:
    """The whole table as text (lines of at most 72 characters, ending with a newline)."""
    v = state.variant
    out: list[str] = []
    title = f"Terrace patience: {v.name}, deal {state.deal}"
    score = f"score {state.score}/104"
    out.append(title + " " * max(1, WIDTH - len(title) - len(score)) + score)
    build = "in suit" if v.by_suit else "by alternating colour"
    if state.choosing_base:
        out.append(f"Foundations build up {build} from the base card, K-A-2.")
    else:
        name = RANK_NAMES[state.base_rank]
        out.append(f"Base {name}{'es' if name.endswith('x') else 's'}: foundations build up {build}, K-A-2.")
    out.append(READING)
    waste = [card_text(c) for c in state.waste[-WASTE_SHOWN:]]
    hidden = len(state.waste) - len(waste)
    pass_note = " (second pass)" if state.stock_pass == 2 else ""
    head = f"Stock {len(state.stock)}{pass_note}   Waste {len(state.waste)}:"
    out += _wrap(head, ([".."] if hidden else []) + waste or ["-"])
    top = f", top {card_text(state.reserve[-1])}" if state.reserve else ""
    out += _wrap(f"Reserve {len(state.reserve)}{top}:", [card_text(c) for c in state.reserve] or ["-"])
    cells = []
    for i, f in enumerate(state.foundations, 1):
        cell = "-" if not f else card_text(f[0]) if len(f) == 1 else f"{card_text(f[0])}..{card_text(f[-1])}"
        cells.append(f"f{i} {cell:<9}")
    out.append(" ".join(cells[:4]).rstrip())
    out.append(" ".join(cells[4:]).rstrip())
    for i, pile in enumerate(state.tableau, 1):
        out += _wrap(f"t{i}:", [card_text(c) for c in pile] or ["(space)"])
    out += _wrap("", status_line(state).split())
    return "\n".join(out) + "\n"


def _cards(n: int) -> str:
    return "1 card" if n == 1 else f"{n} cards"


def _listed(texts: list[str]) -> str:
    """``a``, ``a or b``, ``a, b or c``."""
    return texts[0] if len(texts) == 1 else f"{', '.join(texts[:-1])} or {texts[-1]}"


def examples(state: State, count: int = EXAMPLES) -> list[str]:
    """Up to ``count`` moves that are legal now and make progress (:mod:`.advice`), the best first."""
    return [format_move(m) for m in islice(progress_moves(state), count)]


def status_line(state: State) -> str:
    """One sentence: what to do now (with examples: moves legal now that make progress),
    or how the game ended."""
    outcome = state.outcome()
    if outcome == "won":
        return "Won: all 104 cards are on the foundations."
    if outcome == "lost":
        return f"Lost: the {card_text(state.waste[-1])} turned in the second pass could not be played. Score {state.score}."
    if outcome == "resigned":
        return f"Resigned with {_cards(state.score)} on the foundations."
    if outcome == "stuck":
        return f"No move is left: the game ends with {_cards(state.score)} on the foundations."
    if state.choosing_base:
        offered = ", ".join(f"base {i} = {card_text(c)}" for i, c in enumerate(state.offered, 1))
        return f"Choose the base card from t1-t4: {offered}."
    shown = examples(state)
    e_g = f"e.g. {_listed(shown)}" if shown else ""
    if state.stock_locked():
        what = "The stock is locked: fill the space from the waste, or play the waste's top card, before turning another"
        return f"{what} ({e_g})." if shown else f"{what}."
    if state.stock_pass == 2:
        return (
            f"Second pass: each card turned must be played ({e_g})." if shown else "Second pass: each card turned must be played."
        )
    if shown:
        return f"Your move: {e_g} (resign ends the game)."
    return "Only moves to and fro between tableau piles are left, and none found helps: resign ends the game."
