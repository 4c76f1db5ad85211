"""Deals that mean something (same cards everywhere, pinned), and the move notation."""

from __future__ import annotations

import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pbmserv_terrace.games.patience import (
    VARIANTS,
    CardError,
    Move,
    MoveSyntaxError,
    Pile,
    card_text,
    deal_of_the_day,
    format_move,
    get_variant,
    new_game,
    parse_card,
    parse_move,
    shuffled,
)
from pbmserv_terrace.games.patience.deal import SplitMix64, fnv1a64


def test_splitmix64_and_fnv1a_match_their_published_test_values() -> None:
    rng = SplitMix64(0)
    assert [rng.next() for _ in range(3)] == [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F]
    assert fnv1a64(b"") == 0xCBF29CE484222325 and fnv1a64(b"a") == 0xAF63DC4C8601EC8C


@pytest.mark.parametrize(
    ("variant", "number", "first"),
    [
        ("terrace", 1, "2s 6s Ks 8s 8c 7h 6s 9s"),
        ("terrace", 2, "7h 10h 4s 9d 7s Jd 9d Qc"),
        ("terrace", 1000, "3c Qd Ks 7h 8s 9s Ac 8h"),
        ("wood", 1, "8h 3c 5c 7s 3s 4c 7h 2d"),
        ("wood", 2, "6c 2h Jd Js Jc Kh 5s 2c"),
        ("wood", 1000, "Kc Kd 8h 6s Kc 3c Ah 7c"),
    ],
)
def test_pinned_deals(variant: str, number: int, first: str) -> None:
    """These are the deals players have been given: they must never change."""
    assert " ".join(card_text(c) for c in shuffled(variant, number)[:8]) == first
    assert new_game(variant, number).reserve == shuffled(variant, number)[: get_variant(variant).reserve]


@pytest.mark.parametrize("key", list(VARIANTS))
def test_a_deal_is_reproducible_and_a_permutation_of_two_packs(key: str) -> None:
    assert shuffled(key, 42) == shuffled(key, 42)
    assert new_game(key, 42) == new_game(key, 42)
    assert sorted(shuffled(key, 42)) == sorted(list(range(52)) * 2)
    assert shuffled(key, 42) != shuffled(key, 43)


def test_variants_get_different_cards_for_the_same_number() -> None:
    assert len({shuffled(k, 7) for k in VARIANTS}) == len(VARIANTS)


@pytest.mark.parametrize("bad", [-1, 2**63, 1.5, True, "7"])
def test_deal_numbers_out_of_range_are_refused(bad: object) -> None:
    with pytest.raises(ValueError, match="deal number"):
        shuffled("terrace", bad)  # type: ignore[arg-type]


def test_deal_of_the_day_is_the_date_as_a_number() -> None:
    assert deal_of_the_day(datetime.date(2026, 8, 22), "terrace") == 20260822
    assert deal_of_the_day(datetime.date(2027, 1, 2), VARIANTS["wood"]) == 20270102
    with pytest.raises(ValueError, match="variants are"):
        deal_of_the_day(datetime.date(2026, 8, 22), "klondike")


def test_variant_names_and_ids() -> None:
    assert get_variant("General Patience") is VARIANTS["generalpatience"]
    assert get_variant("general's patience") is VARIANTS["generalpatience"]
    assert get_variant("Blondes-and-Brunettes") is VARIANTS["blondesandbrunettes"]
    assert get_variant("FALLING STAR") is VARIANTS["fallingstars"]


# ------------------------------------------------------------ notation
def test_card_notation() -> None:
    assert card_text(parse_card("Td")) == "10d" == card_text(parse_card("10D"))
    assert card_text(parse_card("qs")) == "Qs" and card_text(parse_card("1c")) == "Ac"
    for bad in ("11h", "7x", "h", ""):
        with pytest.raises(CardError, match="7h"):
            parse_card(bad)


def test_every_card_text_reads_back() -> None:
    assert [parse_card(card_text(c)) for c in range(52)] == list(range(52))


PILES = st.one_of(
    st.sampled_from([Pile("r"), Pile("w"), Pile("f")]),
    st.builds(Pile, st.just("f"), st.integers(1, 8)),
    st.builds(Pile, st.just("t"), st.integers(1, 9)),
)
MOVES = st.one_of(
    st.builds(lambda a, b: Move("move", a, b), PILES, PILES),
    st.builds(lambda d: Move("move", Pile("s"), d), PILES.filter(lambda p: p != Pile("w"))),  # s-w is read as flip
    st.builds(lambda i: Move("base", choice=i), st.integers(1, 4)),
    st.builds(lambda c: Move("base", card=c), st.integers(0, 51)),
    st.sampled_from([Move("flip"), Move("resign")]),
)


@given(MOVES)
def test_move_notation_round_trip(move: Move) -> None:
    assert parse_move(format_move(move)) == move


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("R-F3", "r-f3"),
        (" w > t2 ", "w-t2"),
        ("t4 to t1", "t4-t1"),
        ("t4 t1", "t4-t1"),
        ("turn", "flip"),
        ("base td", "base 10d"),
        ("Base 2", "base 2"),
        ("quit", "resign"),
        ("s-w", "flip"),
    ],
)
def test_move_spellings(text: str, canonical: str) -> None:
    assert format_move(parse_move(text)) == canonical


@pytest.mark.parametrize("text", ["", "x-f1", "r-f9", "r-t", "w-t10", "base 5", "base zz", "hello", "r--"])
def test_unreadable_moves_say_how_to_write_one(text: str) -> None:
    with pytest.raises(MoveSyntaxError) as err:
        parse_move(text)
    message = str(err.value)
    assert "base" in message and ("w-t2" in message or "f1" in message or "7h" in message)
