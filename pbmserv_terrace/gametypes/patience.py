"""Terrace patience behind :class:`.base.SolitaireRules`: the pure game in
:mod:`pbmserv_terrace.games.patience` as the mail service plays it."""

from __future__ import annotations

import datetime
import itertools
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..games import patience
from ..games.patience import State
from ..games.patience import picture as table_picture
from ..games.patience.deal import MAX_DEAL, check_deal_number
from .base import IllegalMoveError, SolitaireRules

MAX_USEFUL = 24
"""the most move links a patience board mail offers (the advice's best first)"""

NOTATION = "FROM-TO with piles r, w, s, f1-f8 (or f), t1-t9 (e.g. w-t3, t4-f, s-t2), flip, base CARD (e.g. base 7h)"


@dataclass(frozen=True)
class PatienceRules:
    variants: dict[str, str] = field(default_factory=lambda: {k: v.name for k, v in patience.VARIANTS.items()})
    max_score: int = 104
    move_verbs: dict[str, tuple[str, ...]] = field(default_factory=lambda: {"base": ("CARD",), "flip": ()})
    notation: str = NOTATION

    def variant(self, name: str) -> str:
        try:
            return patience.get_variant(name).key
        except (KeyError, ValueError):
            names = ", ".join(f"-{k}" for k in self.variants)
            raise ValueError(f"there is no patience variant '{name[:30]}'; the variants are {names}") from None

    def deal_number(self, text: str) -> int:
        try:
            return check_deal_number(int(text))
        except ValueError:
            raise ValueError(f"--deal needs a whole number from 0 to {MAX_DEAL}, e.g. --deal=12345") from None

    def random_deal(self, rng: random.Random) -> int:
        return rng.randrange(1, 1_000_000_000)

    def deal_of_the_day(self, date: datetime.date, variant: str) -> int:
        return patience.deal_of_the_day(date, variant)

    def start(self, variant: str, deal: int) -> State:
        return patience.new_game(variant, deal)

    def replay(self, variant: str, deal: int, moves: Sequence[str]) -> State:
        return patience.replay(variant, deal, moves)

    def split_moves(self, words: Sequence[str]) -> list[str]:
        """``t3-f1, w-t2 base 7h flip`` → ``["t3-f1", "w-t2", "base 7h", "flip"]``."""
        tokens = [t for w in words for t in w.replace(",", " ").replace(";", " ").split()]
        moves: list[str] = []
        i = 0
        while i < len(tokens):
            word = tokens[i]
            if word.lower() == "base" and i + 1 < len(tokens):
                moves.append(f"base {tokens[i + 1]}")
                i += 2
                continue
            moves.append(word)
            i += 1
        return moves

    def play(self, state: State, text: str) -> tuple[State, str]:
        try:
            move = patience.parse_move(text)
            after = state.apply(move)
        except ValueError as exc:
            raise IllegalMoveError(str(exc)) from None
        return after, patience.format_move(move)

    def resign(self, state: State) -> State:
        return state._replace(resigned=True)

    def score(self, state: State) -> int:
        return state.score

    def ending(self, state: State) -> str | None:
        outcome = state.outcome()
        return None if outcome == "playing" else str(outcome)

    def next_step(self, state: State) -> str:
        return patience.status_line(state)

    def table_text(self, state: State) -> str:
        return patience.render(state)

    def picture(self, state: State) -> bytes:
        return table_picture.table_png(state)

    def picture_alt(self, state: State) -> str:
        return table_picture.picture_alt(state)

    def example_move(self, state: State) -> str | None:
        """The best move that makes progress (:func:`patience.advice`: foundation moves
        first, flip when nothing better; ``base 1`` while the base is chosen), or None
        when no move does."""
        move = patience.advice(state)
        return patience.format_move(move) if move is not None else None

    def useful_moves(self, state: State) -> list[str]:
        """:func:`patience.progress_moves` (the advice's order: foundation moves first,
        flip last), at most :data:`MAX_USEFUL` of them."""
        return [patience.format_move(m) for m in itertools.islice(patience.progress_moves(state), MAX_USEFUL)]

    def hint(self, state: State, seconds: float) -> str | None:
        move = patience.hint(state, max_seconds=seconds)
        return patience.format_move(move) if move is not None else None

    def help_text(self, variant: str | None = None) -> str:
        return patience.help_text(variant)


if TYPE_CHECKING:  # mypy checks the adapter against the protocol, over the game's own types
    CHECKED: SolitaireRules[State] = PatienceRules()
