"""The table picture drawn straight on the palette (cached mapped background and card
faces, flat shapes by palette index, each text mapped on its own region) must give
the very PNG that mapping the RGB drawing gives: byte for byte, on every variant,
along random play-outs, at the end of a game, and with the fallback font."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest
from PIL import Image

from pbmserv_terrace.games.patience import VARIANTS, State, new_game, replay
from pbmserv_terrace.games.patience import picture as pic
from pbmserv_terrace.games.patience.picture import table_png, table_rgb, to_png

from .helpers import make
from .test_picture import MIDGAME

RUN_STEPS = 90
SAMPLE_EVERY = 9


def playout(variant: str, deal: int, seed: int) -> Iterator[State]:
    """States along a random play-out of the deal (every few moves), its last state,
    and that state resigned when the game was still on."""
    rng = random.Random(seed)
    state = new_game(variant, deal)
    for step in range(RUN_STEPS):
        if step % SAMPLE_EVERY == 0:
            yield state
        moves = state.legal_moves()
        if not moves:
            break
        state = state.play(rng.choice(moves))
    yield state
    if not state.is_over():
        yield state.apply("resign")


def full(suit: str) -> str:
    return " ".join(f"{r}{suit}" for r in ("7", "8", "9", "10", "J", "Q", "K", "A", "2", "3", "4", "5", "6"))


def made_states() -> dict[str, State]:
    """Tables a short play-out seldom reaches: won, locked stock, second pass, a long pile."""
    long_pile = "Kc Qh Jc 10h 9c 8h 7c 6h 5c 4h 3c 2h Ac Kh Qc Jh 10c 9h 8c 7h 6c 5h 4c 3h 2c Ah"
    return {
        "won": make("wood", tableau=[""] * 9, foundations=[full(s) for s in "hdcshdcs"], stock="", base="7h"),
        "locked": make("terrace", tableau=["", "5s", "8d", "9d", "9c", "3h", "Jd", "2s", "4c"], waste="Qs", locked=True),
        "locked, stock empty": make("terrace", tableau=["", "5s"], waste="Qs", stock="", locked=True),
        "second pass": make("generalpatience", tableau=["Kc", "5s"], waste="Js Jh", stock_pass=2),
        "long pile": make("wood", tableau=[long_pile, "5s", "8d", "9d", "9c", "3h", "Jd", "2s", "4c"]),
        "midgame": replay("terrace", 4, MIDGAME),
        "midgame resigned": replay("terrace", 4, MIDGAME).apply("resign"),
    }


def reference(state: State, scale: int = pic.SCALE) -> bytes:
    return to_png(table_rgb(state, scale), scale)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_the_palette_picture_is_the_mapped_rgb_picture_byte_for_byte(variant: str) -> None:
    differ, seen = [], 0
    for deal, seed in ((1, 11), (77, 12), (123456, 13)):
        for i, state in enumerate(playout(variant, deal, seed)):
            seen += 1
            if table_png(state) != reference(state):
                differ.append(f"deal {deal} state {i}")
    assert seen >= 20
    assert differ == []


@pytest.mark.parametrize("name", sorted(made_states()))
def test_made_tables_too_and_at_scale_one(name: str) -> None:
    state = made_states()[name]
    assert table_png(state) == reference(state)
    assert table_png(state, scale=1) == reference(state, scale=1)


def test_the_palette_path_is_taken_not_the_rgb_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    """table_png must not draw in RGB for these tables (else the tests above compare
    the reference with itself)."""
    states = [*made_states().values(), *playout("redheads", 5, 3), *playout("terrace", 6, 4)]
    expected = [reference(s) for s in states]

    def no_rgb(state: State, scale: int = pic.SCALE) -> Image.Image:
        raise AssertionError("table_png fell back to the RGB drawing")

    monkeypatch.setattr(pic, "table_rgb", no_rgb)
    assert [table_png(s) for s in states] == expected


def test_a_card_face_with_a_soft_edge_falls_back_to_rgb_and_is_still_identical(monkeypatch: pytest.MonkeyPatch) -> None:
    state = made_states()["midgame"]
    expected = reference(state)
    monkeypatch.setattr(pic, "_card_mapped", lambda card, scale: None)
    assert table_png(state) == expected


def test_a_text_over_a_card_falls_back_to_rgb_and_is_still_identical(monkeypatch: pytest.MonkeyPatch) -> None:
    """Move the status line up into the tableau: its texts lie over the cards' blends,
    which the palette cannot give back, so that table is drawn in RGB."""
    monkeypatch.setattr(pic, "STATUS_Y", pic.TABLEAU_Y + 10)
    state = made_states()["midgame"]
    calls: list[State] = []
    rgb = pic.table_rgb

    def counted(s: State, scale: int = pic.SCALE) -> Image.Image:
        calls.append(s)
        return rgb(s, scale)

    monkeypatch.setattr(pic, "table_rgb", counted)
    assert table_png(state) == to_png(rgb(state))
    assert calls == [state], "the text over the cards must make table_png draw in RGB"


def test_the_comparison_notices_a_broken_palette_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Card faces pasted without their mask (the corners square) must show."""
    state = made_states()["midgame"]
    original = pic._card_mapped

    def unmasked(card: int, scale: int) -> tuple[Image.Image, Image.Image] | None:
        mapped = original(card, scale)
        return None if mapped is None else (mapped[0], Image.new("1", mapped[1].size, 1))

    monkeypatch.setattr(pic, "_card_mapped", unmasked)
    assert table_png(state) != reference(state)


def test_card_faces_are_opaque_or_clear_and_the_background_flat() -> None:
    """Why pasting mapped faces is exact: no partly transparent edge pixel; and every
    background pixel is a flat colour that its palette entry gives back."""
    for card in range(52):
        assert not any(pic._card_tile(card, pic.SCALE).getchannel("A").histogram()[1:255])
    background = pic._background(9, pic.SCALE)
    flat = {bytes.fromhex(c[1:]) for c in pic.EXACT_COLOURS}
    assert {bytes(c) for _, c in background.getcolors(1 << 10) or []} <= flat
    mapped = {i for _, i in pic._background_mapped(9, pic.SCALE).getcolors(256) or []}
    assert mapped <= pic._exact_indices(pic.SCALE)


def test_a_text_over_a_card_is_refused_even_where_the_card_looks_flat() -> None:
    """Under a card, an entry that gives its colour back may stand for a blend that
    was mapped to it: the painter refuses any text over an earlier card or text,
    even over the plain white of a face, rather than trust those entries."""
    im = pic._background_mapped(9, pic.SCALE).copy()
    painter = pic._PalettePainter(im, pic.SCALE)
    painter.card(0, 0, 0)
    with pytest.raises(pic._NotExact):
        painter.text(2, pic.CARD_H - 9, ".", 8, pic.BLACK)
    painter.text(pic.CARD_W + 4, 2, "x", 10, pic.LABEL)  # beside it: fine
