"""The Terrace patience game state: immutable values, ``apply(move)`` returns a new one.

A :class:`State` is a named tuple of tuples, so it can be kept, compared and hashed
freely; the mail service can keep the deal number and the move texts and rebuild
any earlier state with :func:`replay` (that is how undo works).  Piles are tuples
with their top card last; the stock's next card is last as well.

Automatic actions happen inside :meth:`State.apply` after the player's move (see
:meth:`State._settle`): a card is turned onto an empty waste, Signora and Redheads
fill their spaces, the stock lock is lifted once no space is left, and General
Patience's second-pass loss rule is checked.  The rule decisions are listed in the
package docstring (:mod:`pbmserv_terrace.games.patience`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, NamedTuple

from .cards import DECK_SIZE, RANK_NAMES, card_text, is_red, rank_above, rank_below, rank_of, suit_of
from .deal import shuffled
from .moves import Move, Pile, format_move, parse_move
from .variants import Variant, get_variant

Outcome = Literal["playing", "won", "lost", "stuck", "resigned"]
FOUNDATIONS = 8
FOUNDATION_SIZE = 13


class IllegalMove(ValueError):
    """A move the rules do not allow; the message is a sentence for the player.  The state is unchanged."""


class State(NamedTuple):
    """One moment of a game.  ``base_rank`` is 0 while the player still has to choose the base
    card (the four offered cards then lie on t1–t4); ``locked`` is set by a turn of the
    stock while a tableau space is empty; ``stock_pass`` becomes 2 after General
    Patience's one turn of the stock; ``lost`` is General Patience's loss rule."""

    variant: Variant
    deal: int
    stock: tuple[int, ...]
    waste: tuple[int, ...]
    reserve: tuple[int, ...]
    foundations: tuple[tuple[int, ...], ...]
    tableau: tuple[tuple[int, ...], ...]
    base_rank: int
    locked: bool = False
    stock_pass: int = 1
    lost: bool = False
    resigned: bool = False

    # ------------------------------------------------------------ queries
    @property
    def score(self) -> int:
        """Cards on the foundations (104 when won)."""
        return sum(len(f) for f in self.foundations)

    @property
    def choosing_base(self) -> bool:
        """True before the base card is chosen (Terrace, General Patience)."""
        return self.base_rank == 0

    @property
    def offered(self) -> tuple[int, ...]:
        """The four cards offered as base (empty once chosen)."""
        return tuple(p[0] for p in self.tableau[:4]) if self.choosing_base else ()

    def has_space(self) -> bool:
        """True when a tableau pile is empty."""
        return any(not p for p in self.tableau)

    def stock_locked(self) -> bool:
        """True when the lock rule forbids turning another stock card now."""
        return self.locked and self.has_space()

    def outcome(self) -> Outcome:
        """``won``, ``lost`` (General Patience's rule), ``resigned``, ``stuck`` (no move left) or ``playing``."""
        if self.score == DECK_SIZE:
            return "won"
        if self.lost:
            return "lost"
        if self.resigned:
            return "resigned"
        if not self.legal_moves():
            return "stuck"
        return "playing"

    def is_over(self) -> bool:
        """True when the game has ended (won, lost, resigned or no move left)."""
        return self.outcome() != "playing"

    def fits_foundation(self, card: int, f: tuple[int, ...]) -> bool:
        """True if ``card`` may go on foundation ``f``: a base-rank card on an empty one, else the
        next rank up (round the corner) in alternating colour, or in suit for General Patience."""
        if not f:
            return rank_of(card) == self.base_rank
        top = f[-1]
        if len(f) == FOUNDATION_SIZE or rank_of(card) != rank_above(rank_of(top)):
            return False
        return suit_of(card) == suit_of(top) if self.variant.by_suit else is_red(card) != is_red(top)

    @staticmethod
    def fits_tableau(card: int, pile: tuple[int, ...]) -> bool:
        """True if ``card`` may go on the non-empty ``pile``: one rank lower (round the corner), other colour."""
        top = pile[-1]
        return rank_of(card) == rank_below(rank_of(top)) and is_red(card) != is_red(top)

    def space_takes_any(self) -> bool:
        """Redheads once its reserve is empty: a space takes any card (from the waste or the tableau)."""
        return self.variant.autofill == "reserve" and not self.reserve

    def can_place(self, card: int) -> bool:
        """True if ``card`` (from the waste) has somewhere to go right now."""
        if any(self.fits_foundation(card, f) for f in self.foundations):
            return True
        return any(not p or self.fits_tableau(card, p) for p in self.tableau)

    def flip_problem(self) -> str | None:
        """Why ``flip`` is illegal now, or None if it is legal."""
        if not self.stock:
            if self.variant.stock_passes == 2 and self.stock_pass == 1:
                if not self.waste:
                    return "The stock and the waste are both empty: there is nothing to turn."
                return "The stock is locked: " + _LOCK_HELP if self.stock_locked() else None
            if self.variant.stock_passes == 2:
                return "The stock has already been turned once; it cannot be turned again."
            return f"The stock is empty and cannot be turned again (no redeal in {self.variant.name})."
        if self.stock_pass == 2 and self.waste:
            return f"In the second pass each card turned must be played before the next: play the {card_text(self.waste[-1])} from the waste."
        if self.stock_locked():
            return "The stock is locked: " + _LOCK_HELP
        return None

    # ------------------------------------------------------------ moves
    def legal_moves(self, canonical: bool = False) -> list[Move]:
        """Every legal move (``resign`` aside), foundation moves first.  With ``canonical``
        equivalent moves are dropped (only the first of equal foundations or of the spaces):
        the solver's view."""
        if self.score == DECK_SIZE or self.lost or self.resigned:
            return []
        if self.choosing_base:
            return [Move("base", choice=i) for i in range(1, 5)]
        sources: list[tuple[Pile, int]] = []
        if self.reserve:
            sources.append((_R, self.reserve[-1]))
        if self.waste:
            sources.append((_W, self.waste[-1]))
        sources += [(_T[i], p[-1]) for i, p in enumerate(self.tableau) if p]
        moves: list[Move] = []
        for pile, card in sources:
            seen: set[tuple[int, int]] = set()
            for i, f in enumerate(self.foundations):
                if self.fits_foundation(card, f):
                    key = (f[-1] if f else -1, len(f))
                    if canonical and key in seen:
                        continue
                    seen.add(key)
                    moves.append(Move("move", pile, _F[i]))
        any_space = self.space_takes_any()
        for pile, card in sources:
            if pile.kind == "r":
                continue
            space_done = False
            for j, p in enumerate(self.tableau):
                if pile.kind == "t" and pile.num == j + 1:
                    continue
                if p:
                    if self.fits_tableau(card, p):
                        moves.append(Move("move", pile, _T[j]))
                elif pile.kind == "w" or (any_space and len(self.tableau[pile.num - 1]) > 1):
                    if canonical and space_done:
                        continue
                    space_done = True
                    moves.append(Move("move", pile, _T[j]))
        if self.flip_problem() is None:
            moves.append(Move("flip"))
        return moves

    def apply(self, move: Move | str) -> State:
        """The state after ``move`` (a :class:`Move` or its text).  Raises :class:`IllegalMove`
        (or :class:`.moves.MoveSyntaxError` for unreadable text) and leaves this state as it was.
        A "stuck" game (no legal move) still answers each move with the reason it is illegal,
        and accepts ``resign``."""
        if isinstance(move, str):
            move = parse_move(move)
        if self.resigned or self.lost or self.score == DECK_SIZE:
            raise IllegalMove(f"The game is over ({_OVER[self.outcome()]}); start a new game to play on.")
        if move.kind == "resign":
            return self._replace(resigned=True)
        if self.choosing_base:
            return self._choose_base(move)
        if move.kind == "base":
            raise IllegalMove(f"The base card is already chosen (the {RANK_NAMES[self.base_rank]}s).")
        if move.kind == "flip":
            problem = self.flip_problem()
            if problem:
                raise IllegalMove(problem)
            return self._flip()
        assert move.src is not None and move.dst is not None
        if move.src.kind == "s":
            if not self.stock:
                raise IllegalMove("The stock is empty.")
            problem = self.flip_problem()
            if problem:
                raise IllegalMove(problem)
            try:
                return self._flip().apply(Move("move", _W, move.dst))
            except IllegalMove as e:
                raise IllegalMove(f"The next stock card is the {card_text(self.stock[-1])}: {e}") from None
        return self._move(move.src, move.dst)

    def play(self, move: Move) -> State:
        """``move`` without checks: for the solver, with moves from :meth:`legal_moves` only."""
        if move.kind == "flip":
            return self._flip()
        if move.kind == "base":
            return self._choose_base(move)
        assert move.src is not None and move.dst is not None
        return self._moved(move.src, move.dst)

    # ------------------------------------------------------------ internals
    def _choose_base(self, move: Move) -> State:
        offered = self.offered
        listing = ", ".join(f"{i} {card_text(c)}" for i, c in enumerate(offered, 1))
        if move.kind == "base" and move.choice is not None:
            index = move.choice - 1
        elif move.kind == "base" and move.card is not None:
            if move.card not in offered:
                raise IllegalMove(f"The {card_text(move.card)} is not offered as base; choose one of: {listing}.")
            index = offered.index(move.card)
        elif (
            move.kind == "move"
            and move.src
            and move.src.kind == "t"
            and 1 <= move.src.num <= 4
            and move.dst
            and move.dst.kind == "f"
        ):
            index = move.src.num - 1
        else:
            raise IllegalMove(
                f"First choose the base card with 'base 1' … 'base 4' or e.g. 'base {card_text(offered[0])}': {listing}."
            )
        base = offered[index]
        stock = list(self.stock)
        tableau = [p if i != index else () for i, p in enumerate(self.tableau)]
        tableau = [p if p else (stock.pop(),) for p in tableau]
        slot = move.dst.num - 1 if move.kind == "move" and move.dst and move.dst.num else 0
        foundations = _with(self.foundations, slot, (base,))
        return self._replace(
            stock=tuple(stock), tableau=tuple(tableau), foundations=foundations, base_rank=rank_of(base)
        )._settle()

    def _flip(self) -> State:
        if not self.stock:  # General Patience's one turn of the waste
            return self._replace(stock=self.waste[::-1], waste=(), stock_pass=2, locked=self.has_space())._settle()
        return self._replace(stock=self.stock[:-1], waste=(*self.waste, self.stock[-1]), locked=self.has_space())._settle()

    def _move(self, src: Pile, dst: Pile) -> State:
        v = self.variant
        if dst.kind in "rws":
            raise IllegalMove(
                f"Nothing can be put on {dst.describe()}; cards go to a foundation (f1-f8) or a tableau pile (t1-t{v.piles})."
            )
        if src.kind == "f":
            raise IllegalMove("Cards on the foundations are out of play and cannot be moved.")
        for pile in (src, dst):
            if pile.kind == "t" and pile.num > v.piles:
                raise IllegalMove(f"{v.name} has {v.piles} tableau piles, t1 to t{v.piles}; there is no {pile.text()}.")
        if src == dst:
            raise IllegalMove(f"{_cap(src.describe())} is both the source and the target of the move.")
        from_pile = self._pile(src)
        if not from_pile:
            raise IllegalMove(f"{_cap(src.describe())} is empty.")
        card = from_pile[-1]
        name = f"the {card_text(card)}"
        if dst.kind == "f":
            if dst.num == 0:
                fits = [i for i, f in enumerate(self.foundations) if self.fits_foundation(card, f)]
                if not fits:
                    raise IllegalMove(f"No foundation takes {name} now.")
                dst = _F[fits[0]]
            f = self.foundations[dst.num - 1]
            if not self.fits_foundation(card, f):
                raise IllegalMove(f"{_cap(name)} cannot go on foundation {dst.text()}: {self._foundation_need(f)}.")
        else:
            if src.kind == "r":
                raise IllegalMove(f"The reserve's top card ({card_text(card)}) can only go to a foundation.")
            target = self.tableau[dst.num - 1]
            if target and not self.fits_tableau(card, target):
                top = target[-1]
                need = f"a {'black' if is_red(top) else 'red'} {RANK_NAMES[rank_below(rank_of(top))]}"
                raise IllegalMove(
                    f"{_cap(name)} cannot go on the {card_text(top)} in {dst.text()}: "
                    f"tableau piles are built down by alternating colour, so it takes {need}."
                )
            if not target and src.kind != "w" and not self.space_takes_any():
                raise IllegalMove(
                    f"The space {dst.text()} must be filled from the waste (w-{dst.text()}) or with the next stock card (s-{dst.text()})."
                )
            if not target and src.kind == "t" and len(from_pile) == 1:
                raise IllegalMove(f"Moving {name} from one space to another changes nothing.")
        return self._moved(src, dst)

    def _foundation_need(self, f: tuple[int, ...]) -> str:
        if not f:
            return f"an empty foundation takes only a base card ({_a(RANK_NAMES[self.base_rank])})"
        if len(f) == FOUNDATION_SIZE:
            return "it is complete"
        top = f[-1]
        next_rank = RANK_NAMES[rank_above(rank_of(top))]
        if self.variant.by_suit:
            return f"it is built up by suit, so it takes {_a(next_rank)} of the suit of its {card_text(top)}"
        return f"it is built up by alternating colour, so it takes a {'black' if is_red(top) else 'red'} {next_rank} on its {card_text(top)}"

    def _pile(self, pile: Pile) -> tuple[int, ...]:
        if pile.kind == "r":
            return self.reserve
        if pile.kind == "w":
            return self.waste
        if pile.kind == "s":
            return self.stock
        if pile.kind == "f":
            return self.foundations[pile.num - 1]
        return self.tableau[pile.num - 1]

    def _moved(self, src: Pile, dst: Pile) -> State:
        """The card on top of ``src`` moved onto ``dst`` (already checked), then :meth:`_settle`."""
        s = self
        card = s._pile(src)[-1]
        if src.kind == "r":
            s = s._replace(reserve=s.reserve[:-1])
        elif src.kind == "w":
            s = s._replace(waste=s.waste[:-1], locked=False)
        else:
            s = s._replace(tableau=_with(s.tableau, src.num - 1, s.tableau[src.num - 1][:-1]))
        if dst.kind == "f":
            s = s._replace(foundations=_with(s.foundations, dst.num - 1, (*s.foundations[dst.num - 1], card)))
        else:
            s = s._replace(tableau=_with(s.tableau, dst.num - 1, (*s.tableau[dst.num - 1], card)))
        return s._settle()

    def _settle(self) -> State:
        """The automatic actions after a move: turn a card onto an empty waste; Signora fills
        spaces from the waste (or stock), Redheads from the reserve; no space left lifts the
        lock; in General Patience's second pass a turned card with nowhere to go loses."""
        stock, waste, reserve, tableau = list(self.stock), list(self.waste), list(self.reserve), list(self.tableau)
        locked, autofill = self.locked, self.variant.autofill
        while True:
            if not waste and stock:
                waste.append(stock.pop())
            space = next((i for i, p in enumerate(tableau) if not p), -1)
            if space >= 0 and autofill == "waste" and waste:
                tableau[space] = (waste.pop(),)
                locked = False
            elif space >= 0 and autofill == "reserve" and reserve:
                tableau[space] = (reserve.pop(),)
            else:
                break
        s = self._replace(
            stock=tuple(stock), waste=tuple(waste), reserve=tuple(reserve), tableau=tuple(tableau), locked=locked and space >= 0
        )
        if s.stock_pass == 2 and s.waste and not s.can_place(s.waste[-1]):
            s = s._replace(lost=True)
        return s


_LOCK_HELP = (
    "a tableau space is empty and a card has been turned since, so first fill the space from the waste "
    "or play the waste's top card to a foundation or the tableau."
)
_OVER = {
    "won": "won",
    "lost": "lost: in the second pass a card turned could not be played",
    "resigned": "resigned",
    "stuck": "no move is left",
    "playing": "",
}
_R, _W = Pile("r"), Pile("w")
_F = tuple(Pile("f", i) for i in range(1, FOUNDATIONS + 1))
_T = tuple(Pile("t", i) for i in range(1, 10))


def _cap(text: str) -> str:
    """First letter upper case, the rest untouched (``str.capitalize`` would write "The qd")."""
    return text[:1].upper() + text[1:]


def _a(word: str) -> str:
    """``a seven``, ``an eight``, ``an ace``."""
    return ("an " if word[0] in "aeiou" else "a ") + word


def _with(piles: tuple[tuple[int, ...], ...], index: int, pile: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    return (*piles[:index], pile, *piles[index + 1 :])


def new_game(variant: Variant | str, deal: int) -> State:
    """The start of deal ``deal`` of ``variant`` (a :class:`Variant` or its name/id).

    The reserve, then the tableau, are dealt from the shuffled cards (:mod:`.deal`).
    Where the player chooses the base, four cards are dealt to t1–t4 and the rest of the
    tableau waits for the choice; elsewhere one card goes to every pile and the next
    card is the base, on f1.  The stock's first card is then turned onto the waste.
    """
    v = get_variant(variant) if isinstance(variant, str) else variant
    cards = shuffled(v, deal)
    reserve = cards[: v.reserve]
    pos = v.reserve
    empty: tuple[tuple[int, ...], ...] = ((),) * FOUNDATIONS
    if v.choose_base:
        tableau = tuple((c,) for c in cards[pos : pos + 4]) + ((),) * (v.piles - 4)
        stock = cards[pos + 4 :][::-1]
        return State(v, deal, stock, (), reserve, empty, tableau, base_rank=0)
    tableau = tuple((c,) for c in cards[pos : pos + v.piles])
    base = cards[pos + v.piles]
    stock = cards[pos + v.piles + 1 :][::-1]
    return State(v, deal, stock, (), reserve, ((base,), *empty[1:]), tableau, base_rank=rank_of(base))._settle()


def replay(variant: Variant | str, deal: int, moves: Iterable[Move | str]) -> State:
    """The state after playing ``moves`` from the start of the deal (raises on the first illegal one)."""
    state = new_game(variant, deal)
    for number, move in enumerate(moves, 1):
        try:
            state = state.apply(move)
        except IllegalMove as e:
            text = move if isinstance(move, str) else format_move(move)
            raise IllegalMove(f"Move {number} ({text}): {e}") from None
    return state
