"""The patience table as a picture: size and limits, what changes with the state,
colours and greyscale, the golden pictures, the fallback font, the alt text.

Regenerate the golden pictures after a deliberate change (and look at them):

    .venv/bin/python -m tests.games.patience.test_picture
"""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image, ImageChops

from pbmserv_terrace.games.patience import State, new_game, render, replay
from pbmserv_terrace.games.patience import picture as pic
from pbmserv_terrace.games.patience.picture import HEIGHT, SCALE, WIDTH, picture_alt, table_png

from .helpers import make

PICTURES = Path(__file__).resolve().parents[2] / "data" / "pictures"
MAX_BYTES = 40_000
AFTER_BASE = (
    "t1-f2 w-t1 t4-t5 w-t4 t2-t4 w-t2 t7-t8 w-t7 flip w-t8 flip w-f1 flip w-t8 flip flip flip w-t1 flip flip "
    "w-f2 t2-f2 w-t2 flip w-t1 flip w-t5 w-t5 flip flip flip flip w-t8 flip flip flip flip w-t5 t2-t5 w-t2 flip w-t8 "
    "flip flip w-t3 t3-t6 t9-t6 w-t9 flip flip w-f2 t1-f2 t1-f2 t1-f2 w-t1 flip w-t8 flip flip w-f3 w-f3 flip flip "
    "flip w-f1 w-f1 flip flip flip flip flip w-f1 r-f1 flip w-t2 flip flip flip flip w-t8 flip flip w-f3 t4-f3 t4-f3 "
    "w-t4 t2-t4 flip t4-t2 flip t2-t4 flip w-f1 t6-f1 t6-f1 t3-f1 r-f1 t4-f1 t2-f1 w-t2 w-t3 flip w-t1 flip flip flip "
    "flip w-f3 r-f3 r-f4 r-f4 t7-f4 r-f4 t2-f4 w-f4 w-t2 w-t7 flip w-t1"
)
MIDGAME = ["base 1", *AFTER_BASE.split()]
"""the first 120 moves of the solver's win of Terrace deal 4 (long piles, full foundations)"""


def golden_states() -> dict[str, State]:
    return {
        "patience-terrace-start": new_game("terrace", 4),
        "patience-terrace-midgame": replay("terrace", 4, MIDGAME),
        "patience-redheads-start": new_game("redheads", 7),
    }


def decode(data: bytes) -> Image.Image:
    im = Image.open(io.BytesIO(data))
    im.load()
    return im


def rgb(colour: str) -> tuple[int, int, int]:
    r, g, b = bytes.fromhex(colour[1:7])
    return r, g, b


def count(im: Image.Image, colour: str, box: tuple[float, float, float, float]) -> int:
    """Pixels of ``colour`` inside ``box`` (in picture units)."""
    part = im.convert("RGB").crop(tuple(round(v * SCALE) for v in box))  # type: ignore[arg-type]
    return dict((c, k) for k, c in part.getcolors(1 << 20) or []).get(rgb(colour), 0)


def card_box(x: float, y: float) -> tuple[float, float, float, float]:
    return x, y, x + pic.CARD_W, y + pic.CARD_H


def column(i: int) -> float:
    return pic.MARGIN + i * pic.COLUMN


@pytest.mark.parametrize("variant", ["terrace", "generalpatience", "fallingstars", "signora", "redheads",
                                     "blondesandbrunettes", "wood"])  # fmt: skip
def test_pictures_decode_have_the_stated_size_and_stay_small(variant: str) -> None:
    state = new_game(variant, 12345)
    for move in state.legal_moves()[:1]:
        state = state.play(move)
    data = table_png(state)
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    im = decode(data)
    assert im.mode == "P", "a palette PNG"
    assert im.size == (WIDTH * SCALE, HEIGHT * SCALE) == (960, 1160)
    assert len(data) <= MAX_BYTES, f"{variant}: {len(data)} bytes"


def test_a_long_game_stays_small_and_the_same_state_gives_the_same_bytes() -> None:
    state = replay("terrace", 4, MIDGAME)
    data = table_png(state)
    assert len(data) <= MAX_BYTES
    assert table_png(replay("terrace", 4, MIDGAME)) == data
    assert decode(table_png(state, scale=1)).size == (WIDTH, HEIGHT)


def test_a_move_changes_the_picture_where_the_card_went() -> None:
    before = replay("terrace", 4, MIDGAME[:-1])
    after = before.apply(MIDGAME[-1])  # w-t1: the waste's top card onto t1
    a, b = decode(table_png(before)).convert("RGB"), decode(table_png(after)).convert("RGB")
    diff = ImageChops.difference(a, b).getbbox()
    assert diff is not None, "a move must change the picture"
    # the tableau below t1's old top changed; the foundations and the reserve did not
    found_and_reserve = tuple(round(v * SCALE) for v in (0, pic.ROW_2, WIDTH, pic.ROW_3 + pic.CARD_H))
    assert ImageChops.difference(a.crop(found_and_reserve), b.crop(found_and_reserve)).getbbox() is None


def test_red_cards_are_red_black_cards_black_and_the_reserve_top_is_ringed() -> None:
    state = make(
        "wood",
        tableau=["Kc Qh", "5s", "8d", "", "9c", "3h", "Jd", "2s", "4c"],
        foundations=["7h 8s", "7d"],
        reserve="Ac 2c Qs",
        waste="Js Jh",
        base="7c",
    )
    im = decode(table_png(state))
    f1, f2 = card_box(column(0), pic.ROW_2), card_box(column(1), pic.ROW_2)
    assert count(im, pic.BLACK, f1) > 200 and count(im, pic.RED, f1) == 0  # 8s on f1
    assert count(im, pic.RED, f2) > 200 and count(im, pic.BLACK, f2) == 0  # 7d on f2
    corner = (column(1), pic.ROW_2, column(1) + 20, pic.ROW_2 + 18)  # the 7d's corner index
    assert count(im, pic.RED, corner) > 30
    # t1 is Kc under Qh: the king's corner shows black above the red queen
    king_strip = (column(0), pic.TABLEAU_Y, column(0) + pic.CARD_W, pic.TABLEAU_Y + pic.TABLEAU_STEP)
    assert count(im, pic.BLACK, king_strip) > 30 and count(im, pic.RED, king_strip) == 0
    # the reserve's top card (Qs, the third) is ringed in yellow, the others are not
    top_x = pic.MARGIN + 2 * pic.RESERVE_STEP
    ring = (top_x - pic.HALO, pic.ROW_3 - pic.HALO, top_x + pic.CARD_W + pic.HALO, pic.ROW_3 + pic.CARD_H + pic.HALO)
    assert count(im, pic.HIGHLIGHT, ring) > 500
    assert count(im, pic.HIGHLIGHT, (0, pic.ROW_3 - pic.HALO, top_x - pic.HALO, pic.ROW_3 + pic.CARD_H)) == 0
    # the space on t4 is an empty place, no card
    assert count(im, pic.CARD, card_box(column(3), pic.TABLEAU_Y)) == 0


def test_red_and_black_differ_in_greyscale_and_the_ring_stands_out_of_the_felt() -> None:
    def grey(colour: str) -> float:
        r, g, b = rgb(colour)
        return 0.299 * r + 0.587 * g + 0.114 * b

    assert grey(pic.RED) - grey(pic.BLACK) > 40
    assert grey(pic.CARD) - grey(pic.RED) > 120
    assert grey(pic.HIGHLIGHT) - grey(pic.FELT) > 100
    assert grey(pic.CARD) - grey(pic.FELT) > 100


def test_a_long_pile_is_squeezed_to_fit_above_the_status_line() -> None:
    long_pile = "Kc Qh Jc 10h 9c 8h 7c 6h 5c 4h 3c 2h Ac Kh Qc Jh 10c 9h 8c 7h 6c 5h 4c 3h 2c Ah"
    state = make("wood", tableau=[long_pile, "5s", "8d", "9d", "9c", "3h", "Jd", "2s", "4c"])
    im = decode(table_png(state)).convert("RGB")
    # down t1's middle, the last card-white pixel above the status line: the pile ends
    # a little above it, having used the room it has
    x = round((column(0) + pic.CARD_W / 2) * SCALE)
    bottom = max(y for y in range(pic.TABLEAU_Y * SCALE, pic.STATUS_Y * SCALE) if im.getpixel((x, y)) == rgb(pic.CARD))
    assert (pic.STATUS_Y - 20) * SCALE < bottom < (pic.STATUS_Y - 4) * SCALE


def test_the_choice_of_base_is_marked_and_the_status_is_written() -> None:
    start = new_game("terrace", 4)
    im = decode(table_png(start))
    for i in range(4):  # the four offered cards are ringed
        ring = (column(i) - pic.HALO, pic.TABLEAU_Y - pic.HALO, column(i) + pic.CARD_W + pic.HALO, pic.TABLEAU_Y + 4)
        assert count(im, pic.HIGHLIGHT, ring) > 100
    assert count(im, pic.HIGHLIGHT, card_box(column(5), pic.TABLEAU_Y)) == 0
    # the status line's text is there (white on the felt at the bottom)
    assert count(im, pic.TITLE, (0, pic.STATUS_Y, WIDTH, HEIGHT)) > 200


def test_the_alt_text_says_the_table_in_words() -> None:
    state = replay("terrace", 4, MIDGAME)
    alt = picture_alt(state)
    assert alt.startswith("Terrace patience, Terrace, deal 4: score ")
    assert f"score {state.score}/104" in alt and "base tens" in alt
    assert f"Reserve {len(state.reserve)}" in alt and f"Stock {len(state.stock)}" in alt
    assert "t1 " in alt and "f1 " in alt and alt.endswith(render(state).rstrip().split("\n")[-1])
    assert len(alt) < 600
    start = picture_alt(new_game("terrace", 4))
    assert "base to choose from t1-t4" in start and "Foundations: none yet." in start


def similar(a: Image.Image, b: Image.Image, tolerance: int = 24, share: float = 0.002) -> tuple[bool, float]:
    """Equal up to ``tolerance`` per channel on all but ``share`` of the pixels."""
    if a.size != b.size:
        return False, 1.0
    diff = ImageChops.difference(a, b).convert("L").point(lambda v: 255 if v > tolerance else 0)
    differing = diff.histogram()[255] / (a.width * a.height)
    return differing <= share, differing


@pytest.mark.parametrize("name", sorted(golden_states()))
def test_golden_pictures(name: str) -> None:
    if not pic.has_symbols():
        pytest.skip("the golden pictures are drawn with DejaVu (fonts-dejavu-core), not installed here")
    golden = PICTURES / f"{name}.png"
    assert golden.exists(), f"{golden} is missing: run .venv/bin/python -m tests.games.patience.test_picture"
    got = decode(table_png(golden_states()[name])).convert("RGB")
    ok, share = similar(got, Image.open(golden).convert("RGB"))
    assert ok, f"{name}: {share:.2%} of the pixels differ from the golden picture"


def test_golden_comparison_notices_a_changed_card() -> None:
    a = decode(table_png(replay("terrace", 4, MIDGAME))).convert("RGB")
    b = decode(table_png(replay("terrace", 4, MIDGAME[:-1]))).convert("RGB")
    assert not similar(a, b)[0]


@pytest.fixture
def without_dejavu(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    caches = (pic._font_dir, pic._font, pic._text_tile, pic._card_tile, pic._background, pic._palette)
    for c in caches:
        c.cache_clear()
    monkeypatch.setattr(pic, "FONT_DIRS", ("/nonexistent/fonts",))
    yield
    monkeypatch.undo()
    for c in caches:
        c.cache_clear()


def test_without_dejavu_pillows_font_and_suit_letters(without_dejavu: None) -> None:
    assert not pic.has_symbols() and pic.suit_mark(2) == "h"
    data = table_png(replay("terrace", 4, MIDGAME))
    im = decode(data)
    assert im.size == (WIDTH * SCALE, HEIGHT * SCALE) and len(data) <= MAX_BYTES
    assert count(im, pic.RED, (0, pic.TABLEAU_Y, WIDTH, pic.STATUS_Y)) > 200


def main() -> None:
    PICTURES.mkdir(parents=True, exist_ok=True)
    if not pic.has_symbols():
        sys.exit("DejaVu (fonts-dejavu-core) is not installed: the golden pictures need it")
    for name, state in golden_states().items():
        data = table_png(state)
        (PICTURES / f"{name}.png").write_bytes(data)
        print(f"{name}.png  {len(data)} bytes")


if __name__ == "__main__":
    main()
