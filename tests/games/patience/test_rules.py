"""One test (or more) per rule sentence of the source, for every variant it concerns."""

from __future__ import annotations

import pytest

from pbmserv_terrace.games.patience import VARIANTS, IllegalMove, card_text, new_game, render

from .helpers import cards, make, total_cards

ALL = list(VARIANTS)
AC = [k for k, v in VARIANTS.items() if not v.by_suit]
CHOOSE = [k for k, v in VARIANTS.items() if v.choose_base]
DEALT = [k for k, v in VARIANTS.items() if not v.choose_base]
LOCKING = [k for k, v in VARIANTS.items() if v.autofill == "none"]
NINE = [k for k, v in VARIANTS.items() if v.piles == 9]


def eight(key: str) -> str:
    """An eight that goes on a 7h foundation in ``key`` (a black one, or a heart by suit)."""
    return "8h" if VARIANTS[key].by_suit else "8s"


def started(key: str, deal: int = 7):
    """A game after the base is chosen (choose variants take the first offered card)."""
    s = new_game(key, deal)
    return s.apply("base 1") if s.choosing_base else s


# ------------------------------------------------------------ setup: double deck, reserve, tableau
@pytest.mark.parametrize("key", ALL)
@pytest.mark.parametrize("deal", [1, 2, 1000])
def test_double_deck_reserve_size_and_one_card_per_pile(key: str, deal: int) -> None:
    v = VARIANTS[key]
    s = started(key, deal)
    assert total_cards(s) == 104
    dealt = [c for p in (s.stock, s.waste, s.reserve, *s.foundations, *s.tableau) for c in p]
    assert sorted(dealt) == sorted(list(range(52)) * 2)
    assert len(s.reserve) == v.reserve
    assert len(s.tableau) == v.piles and all(len(p) == 1 for p in s.tableau)
    assert s.score == 1 and len(s.waste) == 1


@pytest.mark.parametrize("key", ALL)
def test_reserve_cards_are_all_visible(key: str) -> None:
    s = started(key)
    text = render(s)
    head, row = text.split("Reserve")[1].split("f1 ")[0].split(":", 1)
    assert row.split() == [card_text(c) for c in s.reserve]
    # which end is the top is said, not only rung in the picture (issue 38)
    assert head == f" {len(s.reserve)}, top {card_text(s.reserve[-1])}"
    assert "Piles read bottom to top: the last card shown is the top card." in text


# ------------------------------------------------------------ reserve: only its top card, only to foundations
@pytest.mark.parametrize("key", ALL)
def test_reserve_top_card_goes_to_a_foundation_only(key: str) -> None:
    s = make(key, tableau=["9s", "8h"] + ["Kc"] * 6, foundations=["7h"], reserve=f"9d {eight(key)}", waste="3c", base="7h")
    after = s.apply("r-f1")
    assert after.foundations[0] == cards(f"7h {eight(key)}") and after.reserve == cards("9d")
    with pytest.raises(IllegalMove, match="can only go to a foundation"):
        make(key, tableau=["9h"] + ["Kc"] * 7, reserve="8s").apply("r-t1")


@pytest.mark.parametrize("key", ALL)
def test_only_the_reserve_top_card_is_in_play(key: str) -> None:
    s = make(key, tableau=["Kc"] * 8, foundations=["7h"], reserve="8s 2d", base="7h")
    with pytest.raises(IllegalMove, match="2d cannot go on foundation f1"):
        s.apply("r-f1")


# ------------------------------------------------------------ foundations
@pytest.mark.parametrize("key", AC)
def test_foundation_builds_up_round_the_corner_king_ace_two(key: str) -> None:
    s = make(key, tableau=["Ad", "2s", *["9c"] * 6], foundations=["10h Js Qd Kc"], waste="5c", base="10h")
    s = s.apply("t1-f1").apply("t2-f1")
    assert [card_text(c) for c in s.foundations[0][-3:]] == ["Kc", "Ad", "2s"]


@pytest.mark.parametrize("key", AC)
def test_foundation_alternates_colour(key: str) -> None:
    s = make(key, tableau=["8d", "8s", *["Kc"] * 6], foundations=["7h"], base="7h")
    with pytest.raises(IllegalMove, match="alternating colour"):
        s.apply("t1-f1")
    assert s.apply("t2-f1").foundations[0] == cards("7h 8s")


def test_general_patience_foundation_follows_suit() -> None:
    s = make("generalpatience", tableau=["8s", "8h", *["Kc"] * 7], foundations=["7h"], base="7h")
    with pytest.raises(IllegalMove, match="by suit"):
        s.apply("t1-f1")
    assert s.apply("t2-f1").foundations[0] == cards("7h 8h")


@pytest.mark.parametrize("key", ALL)
def test_an_empty_foundation_takes_only_the_base_rank_of_any_suit(key: str) -> None:
    s = make(key, tableau=["7s", "8c", *["Kc"] * 7], foundations=["7h"], base="7h")
    with pytest.raises(IllegalMove, match="only a base card"):
        s.apply("t2-f2")
    assert s.apply("t1-f2").foundations[1] == cards("7s")


@pytest.mark.parametrize("key", AC)
def test_a_complete_foundation_takes_nothing_and_foundation_cards_are_out_of_play(key: str) -> None:
    full = "7h 8s 9d 10c Jh Qs Kd Ac 2h 3s 4d 5c 6h"
    s = make(key, tableau=["7s", *["Kc"] * 7], foundations=[full], base="7h")
    with pytest.raises(IllegalMove, match="it is complete"):
        s.apply("t1-f1")
    with pytest.raises(IllegalMove, match="out of play"):
        s.apply("f1-t2")


# ------------------------------------------------------------ tableau
@pytest.mark.parametrize("key", ALL)
def test_tableau_builds_down_alternating_colour_round_the_corner(key: str) -> None:
    s = make(key, tableau=["2h", "As", "Kd", "Ah", "Qs", "Kc", "Jd", "5c"], base="7h")
    s = s.apply("t2-t1")  # As on 2h: down, other colour
    assert s.tableau[0] == cards("2h As")
    s = s.apply("t3-t1")  # Kd on As: round the corner
    assert s.tableau[0] == cards("2h As Kd")
    with pytest.raises(IllegalMove, match="alternating colour"):
        s.apply("t4-t1")  # Ah is not the rank below Kd
    with pytest.raises(IllegalMove, match="takes a black queen"):
        make(key, tableau=["Kd", "Qh", *["5c"] * 6]).apply("t2-t1")  # same colour


@pytest.mark.parametrize("key", ALL)
def test_cards_move_one_at_a_time(key: str) -> None:
    s = make(key, tableau=["9s 8h", "9c", *["5c"] * 6], base="7h")
    s = s.apply("t1-t2")
    assert s.tableau[0] == cards("9s") and s.tableau[1] == cards("9c 8h")


# ------------------------------------------------------------ base card
@pytest.mark.parametrize("key", CHOOSE)
def test_the_player_chooses_the_base_from_four(key: str) -> None:
    s = new_game(key, 5)
    offered = s.offered
    assert len(offered) == 4 and s.choosing_base and all(not p for p in s.tableau[4:])
    for text in ("flip", "r-f1", "t1-t2"):
        with pytest.raises(IllegalMove, match="First choose the base card"):
            s.apply(text)
    assert s.legal_moves() == [s.apply(f"base {i}") and m for i, m in enumerate(s.legal_moves(), 1)]
    by_place = s.apply("base 3")
    by_card = s.apply(f"base {card_text(offered[2])}")
    assert by_place.foundations[0] == (offered[2],) and by_card.foundations[0] == (offered[2],)
    assert by_place.base_rank == offered[2] % 13 + 1
    kept = [p[0] for i, p in enumerate(by_place.tableau[:4]) if i != 2]
    assert kept == [c for i, c in enumerate(offered) if i != 2]
    assert s.apply("t3-f5").foundations[4] == (offered[2],)


@pytest.mark.parametrize("key", CHOOSE)
def test_a_card_not_offered_cannot_be_the_base(key: str) -> None:
    s = new_game(key, 5)
    absent = next(c for c in range(52) if c not in s.offered)
    with pytest.raises(IllegalMove, match="not offered"):
        s.apply(f"base {card_text(absent)}")


@pytest.mark.parametrize("key", DEALT)
def test_the_base_is_dealt_automatically(key: str) -> None:
    s = new_game(key, 5)
    assert not s.choosing_base and len(s.foundations[0]) == 1 and s.base_rank == s.foundations[0][0] % 13 + 1
    with pytest.raises(IllegalMove, match="already chosen"):
        s.apply("base 1")


# ------------------------------------------------------------ stock, waste, spaces and the lock
@pytest.mark.parametrize("key", ALL)
def test_an_empty_waste_is_refilled_from_the_stock(key: str) -> None:
    s = make(key, tableau=["9s", *["5c"] * 7], waste="8h", stock="Kd Qc")
    after = s.apply("w-t1")
    assert after.waste == cards("Kd") and after.stock == cards("Qc")


@pytest.mark.parametrize("key", LOCKING)
def test_a_space_is_filled_from_the_waste_or_the_next_stock_card_only(key: str) -> None:
    s = make(key, tableau=["", "9s 8h", *["5c"] * 6], waste="Kd", stock="Qc Jh")
    with pytest.raises(IllegalMove, match="must be filled from the waste"):
        s.apply("t2-t1")
    assert s.apply("w-t1").tableau[0] == cards("Kd")
    from_stock = s.apply("s-t1")
    assert from_stock.tableau[0] == cards("Qc") and from_stock.waste == cards("Kd")


@pytest.mark.parametrize("key", LOCKING)
def test_with_a_space_only_one_card_may_be_turned(key: str) -> None:
    s = make(key, tableau=["", "9s", *["5c"] * 6], waste="Kd", stock="Qc Jh 10c As 2d")
    once = s.apply("flip")
    assert once.stock_locked()
    for text in ("flip", "s-t1"):
        with pytest.raises(IllegalMove, match="locked"):
            once.apply(text)
    assert "locked" in render(once)


@pytest.mark.parametrize("key", LOCKING)
def test_moves_on_the_tableau_reserve_and_foundations_go_on_while_locked(key: str) -> None:
    s = make(
        key, tableau=["", "9s", "8d", "7s", *["5c"] * 4], foundations=["7h"], reserve=eight(key), waste="Kd", stock="Qc Jh 10c"
    )
    s = s.apply("flip").apply("t3-t2").apply("r-f1")
    assert s.stock_locked() and s.tableau[1] == cards("9s 8d") and s.foundations[0] == cards(f"7h {eight(key)}")


@pytest.mark.parametrize("key", LOCKING)
def test_the_lock_lifts_when_the_waste_top_card_is_played_or_the_space_filled(key: str) -> None:
    s = make(key, tableau=["", "9s", *["5c"] * 6], foundations=["7h"], waste="Kd", stock="8h Qc Jh 10c")
    locked = s.apply("flip")  # 8h on the waste
    to_tableau = locked.apply("w-t2")  # 8h on 9s, the space still empty
    assert not to_tableau.stock_locked() and to_tableau.apply("flip").stock_locked()
    filled = locked.apply("w-t1")  # 8h fills the space
    assert not filled.stock_locked() and not filled.apply("flip").stock_locked()
    s2 = make(key, tableau=["", "9s", *["5c"] * 6], foundations=["7h"], waste="Kd", stock=f"{eight(key)} Qc")
    assert not s2.apply("flip").apply("w-f1").stock_locked()


@pytest.mark.parametrize("key", ALL)
def test_without_a_space_the_stock_turns_freely(key: str) -> None:
    s = make(key, tableau=["9s", *["5c"] * 7], waste="Kd", stock="Qc Jh 10c")
    s = s.apply("flip").apply("flip")
    assert s.waste == cards("Kd Qc Jh") and not s.stock_locked()


# ------------------------------------------------------------ automatic fills
def test_signora_fills_a_space_from_the_waste_then_the_stock() -> None:
    s = make("signora", tableau=["8s", "9c", *["5c"] * 7], foundations=["7h"], waste="Kd", stock="Qc Jh")
    s = s.apply("t1-f1")
    assert s.tableau[0] == cards("Kd") and s.waste == cards("Qc")
    empty_waste = make("signora", tableau=["8s", *["5c"] * 8], foundations=["7h"], waste="", stock="")
    assert empty_waste.apply("t1-f1").tableau[0] == ()


def test_redheads_fills_a_space_from_the_reserve_then_takes_any_card() -> None:
    s = make("redheads", tableau=["8s", "9c 8d", *["5c"] * 6], foundations=["7h"], reserve="Qh 4c", waste="Kd")
    s = s.apply("t1-f1")
    assert s.tableau[0] == cards("4c") and s.reserve == cards("Qh")
    no_reserve = make("redheads", tableau=["8s", "9c 8d", *["5c"] * 6], foundations=["7h"], waste="Kd")
    space = no_reserve.apply("t1-f1")
    assert space.tableau[0] == () and space.apply("t2-t1").tableau[0] == cards("8d")


@pytest.mark.parametrize("key", ["terrace", "generalpatience", "fallingstars", "blondesandbrunettes", "wood"])
def test_other_variants_leave_spaces_empty(key: str) -> None:
    s = make(key, tableau=[eight(key), *["5c"] * 7], foundations=["7h"], reserve="4c", waste="Kd")
    assert s.apply("t1-f1").tableau[0] == ()


# ------------------------------------------------------------ one pass of the stock; General Patience turns it once
@pytest.mark.parametrize("key", [k for k in ALL if k != "generalpatience"])
def test_the_stock_cannot_be_turned_again(key: str) -> None:
    s = make(key, tableau=["9s", *["5c"] * 7], waste="Kd Qc", stock="")
    with pytest.raises(IllegalMove, match="no redeal"):
        s.apply("flip")


def test_general_patience_turns_the_stock_once() -> None:
    s = make("generalpatience", tableau=["9s", "Kh", *["5c"] * 7], waste="Qc Jh", stock="")
    turned = s.apply("flip")
    assert turned.stock_pass == 2 and turned.waste == cards("Qc") and turned.stock == cards("Jh")
    assert not turned.lost  # the Qc fits on the Kh
    with pytest.raises(IllegalMove, match="must be played before the next"):
        turned.apply("flip")
    done = turned.apply("w-t2")
    assert done.waste == cards("Jh") and not done.stock
    with pytest.raises(IllegalMove, match="already been turned once"):
        make("generalpatience", tableau=["9s", *["5c"] * 8], waste="", stock="", stock_pass=2).apply("flip")


def test_general_patience_is_lost_when_a_second_pass_card_cannot_be_played() -> None:
    s = make("generalpatience", tableau=["9s", "Kh", *["5c"] * 7], waste="2c Jh", stock="")
    lost = s.apply("flip")  # 2c turned first: no place for it
    assert lost.lost and lost.outcome() == "lost" and lost.is_over()
    with pytest.raises(IllegalMove, match="game is over"):
        lost.apply("w-t1")
    assert "Lost" in render(lost)


def test_error_sentences_name_the_cards_as_written() -> None:
    s = make("wood", tableau=["Kd", "Qd", *["5c"] * 7], foundations=["Kd"], base="Kd")
    with pytest.raises(IllegalMove, match=r"^The Qd cannot go on the Kd in t1: .* takes a black queen\.$"):
        s.apply("t2-t1")
    with pytest.raises(IllegalMove, match=r"^The Qd cannot go on foundation f1: .* takes a black ace on its Kd\.$"):
        s.apply("t2-f1")
